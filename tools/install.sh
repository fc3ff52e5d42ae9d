#!/usr/bin/env bash
# Installs the library as a C library is installed:
#   tools/install.sh --prefix=/usr/local [--destdir=/tmp/stage]
# builds `cargo build --release --lib` and writes into DESTDIR+PREFIX:
#   lib/libtensorflowlite_c.so.VERSION     the shared library, debug info stripped (the
#                                          symbol table stays, for profilers and backtraces)
#   lib/libtensorflowlite_c.so             -> the above: soname link and link-time name
#   lib/libtensorflowlite_c.a              the static library, debug info stripped
#   include/tensorflow/...                 the headers, at TFLite's include paths
#   lib/pkgconfig/tensorflowlite_c.pc      pkg-config: `pkg-config --cflags --libs tensorflowlite_c`
#   lib/cmake/tensorflowlite_c/            CMake: `find_package(tensorflowlite_c)` gives the
#                                          targets tensorflowlite_c::tensorflowlite_c (shared)
#                                          and tensorflowlite_c::tensorflowlite_c_static
# VERSION is the crate's version (Cargo.toml). The .pc file names PREFIX (never DESTDIR);
# the CMake package finds its files relative to itself, so it survives moving the tree.
#
# The soname stays `libtensorflowlite_c.so`, unversioned, as TFLite's own library has it:
# a program linked against TFLite's libtensorflowlite_c.so needs that name and loads this
# library through LD_LIBRARY_PATH, and a program linked against this one runs on TFLite's.
#
# Why a script: cargo-c (`cargo cinstall`) is the usual tool for this, but Debian's
# cargo-c is too old for edition 2024 and the newest on crates.io needs a newer rustc
# than the 1.95 this project builds with. `cargo install cargo-c@0.10.24+cargo-0.98.0`
# would be the alternative.
set -euo pipefail

usage() {
  echo "usage: $0 --prefix=PREFIX [--destdir=DESTDIR]" >&2
  exit 2
}
prefix=""
destdir=""
for arg in "$@"; do
  case "$arg" in
    --prefix=*) prefix=${arg#--prefix=} ;;
    --destdir=*) destdir=${arg#--destdir=} ;;
    *) usage ;;
  esac
done
[ -n "$prefix" ] || usage
case "$prefix" in
  /*) prefix=${prefix%/} ;;
  *) echo "install.sh: --prefix must be an absolute path (got '$prefix')" >&2; exit 2 ;;
esac
case "$destdir" in
  "" | /*) ;;
  *) destdir="$PWD/$destdir" ;;
esac

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
cargo=${CARGO:-cargo}
"$cargo" build --release --lib
built=${CARGO_TARGET_DIR:-$here/target}/release
pkgid=$("$cargo" pkgid)
version=${pkgid##*[@#]}

# Checked so the symlink below is the soname link (see the header comment).
soname=$(readelf -d "$built/libtensorflowlite_c.so" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
if [ "$soname" != "libtensorflowlite_c.so" ]; then
  echo "install.sh: the built library's soname is '$soname', expected libtensorflowlite_c.so" >&2
  exit 1
fi

root="$destdir$prefix"
libdir="$root/lib"
install -d "$libdir/pkgconfig" "$libdir/cmake/tensorflowlite_c" "$root/include"

install -m 755 "$built/libtensorflowlite_c.so" "$libdir/libtensorflowlite_c.so.$version"
strip --strip-debug "$libdir/libtensorflowlite_c.so.$version"
ln -sfn "libtensorflowlite_c.so.$version" "$libdir/libtensorflowlite_c.so"
install -m 644 "$built/libtensorflowlite_c.a" "$libdir/libtensorflowlite_c.a"
strip --strip-debug "$libdir/libtensorflowlite_c.a"

(cd include && find . -name '*.h' -print) | while read -r h; do
  install -D -m 644 "include/$h" "$root/include/$h"
done

# What a program linking the static library needs besides it: rustc's list for this
# target (`--print native-static-libs`), less -lc. With glibc >= 2.34 only -lm (and the
# unwinder in libgcc_s, which gcc links anyway) is really used; the rest keeps older C
# libraries and other compiler drivers working.
static_libs="gcc_s util rt pthread m dl"

cat >"$libdir/pkgconfig/tensorflowlite_c.pc" <<EOF
prefix=$prefix
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include

Name: tensorflowlite_c
Description: TensorFlow Lite 2.19 C API (libtensorflowlite_c), implemented in Rust
Version: $version
Libs: -L\${libdir} -ltensorflowlite_c
Libs.private: $(printf -- '-l%s ' $static_libs | sed 's/ $//')
Cflags: -I\${includedir}
EOF

cat >"$libdir/cmake/tensorflowlite_c/tensorflowlite_c-config.cmake" <<EOF
# tensorflowlite_c $version: the TensorFlow Lite 2.19 C API, implemented in Rust.
#   find_package(tensorflowlite_c REQUIRED)
#   target_link_libraries(app PRIVATE tensorflowlite_c::tensorflowlite_c)         # shared
#   target_link_libraries(app PRIVATE tensorflowlite_c::tensorflowlite_c_static)  # static
# Paths are found relative to this file (<prefix>/lib/cmake/tensorflowlite_c/).
get_filename_component(_tensorflowlite_c_prefix "\${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)

if(NOT TARGET tensorflowlite_c::tensorflowlite_c)
  add_library(tensorflowlite_c::tensorflowlite_c SHARED IMPORTED)
  set_target_properties(tensorflowlite_c::tensorflowlite_c PROPERTIES
    IMPORTED_LOCATION "\${_tensorflowlite_c_prefix}/lib/libtensorflowlite_c.so.$version"
    IMPORTED_SONAME "libtensorflowlite_c.so"
    INTERFACE_INCLUDE_DIRECTORIES "\${_tensorflowlite_c_prefix}/include")
endif()

if(NOT TARGET tensorflowlite_c::tensorflowlite_c_static)
  add_library(tensorflowlite_c::tensorflowlite_c_static STATIC IMPORTED)
  set_target_properties(tensorflowlite_c::tensorflowlite_c_static PROPERTIES
    IMPORTED_LOCATION "\${_tensorflowlite_c_prefix}/lib/libtensorflowlite_c.a"
    IMPORTED_LINK_INTERFACE_LANGUAGES "C"
    INTERFACE_INCLUDE_DIRECTORIES "\${_tensorflowlite_c_prefix}/include"
    INTERFACE_LINK_LIBRARIES "$(echo $static_libs | tr ' ' ';')")
endif()

unset(_tensorflowlite_c_prefix)
EOF

cat >"$libdir/cmake/tensorflowlite_c/tensorflowlite_c-config-version.cmake" <<EOF
# Any requested version up to $version with the same major number is accepted
# (CMake's SameMajorVersion rule); only 64-bit builds can use this package.
set(PACKAGE_VERSION "$version")
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
elseif(NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL "${version%%.*}")
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
if(CMAKE_SIZEOF_VOID_P AND NOT CMAKE_SIZEOF_VOID_P STREQUAL "8")
  set(PACKAGE_VERSION "\${PACKAGE_VERSION} (64-bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
EOF

echo "installed tensorflowlite_c $version into $root:"
(cd "$root" && ls -l lib/libtensorflowlite_c.* && find include -name '*.h' | wc -l | sed 's/$/ headers under include\//' &&
  ls lib/pkgconfig/tensorflowlite_c.pc lib/cmake/tensorflowlite_c/*)
