# Sourced by tools/asan.sh and tools/fuzz.sh: picks the compiler for the `-Z` flags
# (AddressSanitizer) and sets RUST_TOOLCHAIN (a `+toolchain` argument for cargo) and
# HOST_TRIPLE. A nightly toolchain is used where rustup has one; otherwise the stable
# compiler runs with RUSTC_BOOTSTRAP=1 (which unlocks the same flags), said loudly, so the
# sanitizer stages still run on a machine with one toolchain.
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  RUST_TOOLCHAIN=+nightly
  echo "sanitizers: using the nightly toolchain ($(rustc +nightly --version))"
else
  RUST_TOOLCHAIN=
  export RUSTC_BOOTSTRAP=1
  echo "################################################################################"
  echo "# NO NIGHTLY TOOLCHAIN on this machine: the sanitizer stages run on the stable"
  echo "# compiler ($(rustc --version)) with RUSTC_BOOTSTRAP=1."
  echo "################################################################################"
fi
HOST_TRIPLE=$(rustc $RUST_TOOLCHAIN -vV | sed -n 's/^host: //p')
