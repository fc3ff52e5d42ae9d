//! SKIP_GRAM (TFLite `kernels/skip_gram.cc`): the n-grams with skips of a sentence.
//!
//! The input's first string is split into words at C-locale whitespace (space, `\t`, `\n`,
//! `\v`, `\f`, `\r`) the way TFLite's loop does it, quirks included: the scan starts at
//! byte 1, so a leading whitespace byte is kept as part of the first word when the next
//! byte is not whitespace (`" a b"` gives `" a"`, `"b"`), while a word preceded by it and
//! ended by whitespace is dropped (`" a b c"` gives `"b"`, `"c"`), and a one-byte input is
//! one word even if it is a space. Bytes above 0x7f are never whitespace, so UTF-8 text
//! splits at ASCII whitespace only.
//!
//! Each output string joins `ngram_size` words (1 to `ngram_size` with
//! `include_all_ngrams`) with single spaces, consecutive chosen words being at most
//! `max_skip_size` words apart beyond adjacent. They come in TFLite's depth-first order:
//! for each first word, its longer grams before the shorter ones. Fewer words than
//! `ngram_size` (or `ngram_size` <= 0) give no strings. The output is a dynamic 1-D string
//! tensor.

use super::strings::{read_strings, write_strings};
use crate::abi::builtin_op_data::TfLiteSkipGramParams;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::OpCtx;
use crate::kernels::graph::calls_of;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, op_error};

const OP: &str = "SKIP_GRAM";

/// The SKIP_GRAM registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<SkipGram>(TfLiteBuiltinOperator::kTfLiteBuiltinSkipGram)
}

/// C's `isspace` in the "C" locale (and glibc's UTF-8 locales, which classify no byte
/// above 0x7f).
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// The words of `s`, split exactly as TFLite's loop splits them (see the module doc).
/// Every word is non-empty.
pub fn split_words(s: &[u8]) -> Vec<&[u8]> {
    let mut words = Vec::new();
    let mut prev = 0;
    for i in 1..s.len() {
        if is_c_space(s[i]) {
            if i > prev && !is_c_space(s[prev]) {
                words.push(&s[prev..i]);
            }
            prev = i + 1;
        }
    }
    if s.len() > prev {
        words.push(&s[prev..]);
    }
    words
}

/// Strings back to back in one buffer (one allocation however many there are).
#[derive(Debug, Default, PartialEq)]
pub struct Grams {
    /// The strings' bytes, concatenated.
    pub bytes: Vec<u8>,
    /// Where each string ends in `bytes`.
    pub ends: Vec<usize>,
}

impl Grams {
    /// The strings, in order.
    pub fn strings(&self) -> Vec<&[u8]> {
        let mut start = 0;
        self.ends
            .iter()
            .map(|&end| {
                let s = &self.bytes[start..end];
                start = end;
                s
            })
            .collect()
    }
}

/// The grams TFLite's SKIP_GRAM makes of `words`, in its order. `max_bytes` bounds the
/// total size of the grams (an error beyond it, as TFLite's string buffer refuses more
/// than int32 offsets can address).
///
/// The walk is TFLite's: a stack of word positions, stepping one level deeper while the
/// next word is within `max_skip` of the previous one, and emitting the stack when
/// backing out of a level. One change that does not alter the output: without
/// `include_all`, a level is not entered when too few words remain to fill the stack,
/// because nothing below it could be emitted; this bounds the work by the output's size
/// (TFLite's walk visits every partial gram, exponentially many for a large skip).
pub fn skip_grams(
    words: &[&[u8]],
    ngram_size: i32,
    max_skip: i32,
    include_all: bool,
    max_bytes: usize,
) -> Result<Grams> {
    let mut grams = Grams::default();
    let n = match usize::try_from(ngram_size) {
        Ok(n) if n > 0 && words.len() >= n => n,
        _ => return Ok(grams),
    };
    let num_words = words.len();
    let include = |size: usize| size > 0 && if include_all { size <= n } else { size == n };
    let mut stack = vec![0usize; n];
    // The depth being filled: the first word is chosen (position 0) at the start.
    let mut depth = 1usize;
    let mut bytes = 0usize;
    loop {
        let step = depth < n && stack[depth] + 1 < num_words && {
            let within_skip = depth == 0 || (stack[depth] - stack[depth - 1]) as i64 <= i64::from(max_skip);
            // Positions stack[depth] + 1 .. must leave n - 1 - depth words after them.
            let can_fill = include_all || stack[depth] + 1 + (n - 1 - depth) < num_words;
            within_skip && can_fill
        };
        if step {
            stack[depth] += 1;
            depth += 1;
            if depth < n {
                stack[depth] = stack[depth - 1];
            }
            continue;
        }
        if include(depth) {
            // Each string also takes an int32 offset in the tensor.
            let len = stack[..depth].iter().map(|&w| words[w].len() + 1).sum::<usize>() - 1;
            bytes = bytes.saturating_add(len + 4);
            if bytes > max_bytes {
                return Err(Error::new(format!("the skip-grams exceed {max_bytes} bytes")));
            }
            for (k, &w) in stack[..depth].iter().enumerate() {
                if k > 0 {
                    grams.bytes.push(b' ');
                }
                grams.bytes.extend_from_slice(words[w]);
            }
            grams.ends.push(grams.bytes.len());
        }
        if depth == 0 {
            return Ok(grams);
        }
        depth -= 1;
    }
}

/// The most bytes of strings the output may hold: what int32 offsets address, less its
/// header.
const MAX_OUTPUT_BYTES: usize = i32::MAX as usize - 8;

struct SkipGram;

impl BuiltinKernel for SkipGram {
    const NAME: &'static str = OP;
    type Params = TfLiteSkipGramParams;
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &TfLiteSkipGramParams) -> Result<()> {
        check_arity(ctx, OP, 1, 1, 1)?;
        let input = ctx.input(0).map_err(in_op(OP))?;
        let output = ctx.output(0).map_err(in_op(OP))?;
        if input.dtype != TfLiteType::kTfLiteString {
            return Err(op_error(OP, format!("the input must be a string tensor, not {}", input.dtype.name())));
        }
        if output.dtype != TfLiteType::kTfLiteString {
            return Err(op_error(OP, format!("the output must be a string tensor, not {}", output.dtype.name())));
        }
        Ok(())
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteSkipGramParams, _: &mut ()) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(OP))?;
        let strings = read_strings(input.raw().map_err(in_op(OP))?).map_err(in_op(OP))?;
        // TFLite reads the first string without checking there is one.
        let text = strings.first().ok_or_else(|| op_error(OP, "the input holds no string"))?;
        let words = split_words(text);
        let grams = skip_grams(&words, p.ngram_size, p.max_skip_size, p.include_all_ngrams, MAX_OUTPUT_BYTES)
            .map_err(in_op(OP))?;
        let bytes = write_strings(&grams.strings()).map_err(in_op(OP))?;
        let out = ctx.output(0).map_err(in_op(OP))?.index as i32;
        let shape = [i32::try_from(grams.ends.len()).map_err(|_| op_error(OP, "too many skip-grams"))?];
        calls_of(ctx, OP)?.write(out, &shape, TfLiteType::kTfLiteString, &bytes).map_err(in_op(OP))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;

    fn grams(s: &str, n: i32, skip: i32, all: bool) -> Vec<String> {
        let words = split_words(s.as_bytes());
        let g = skip_grams(&words, n, skip, all, MAX_OUTPUT_BYTES).unwrap();
        g.strings().into_iter().map(|v| String::from_utf8(v.to_vec()).unwrap()).collect()
    }

    /// TFLite's walk without the pruning, for comparing orders.
    fn unpruned(num_words: usize, n: usize, skip: i64, all: bool) -> Vec<Vec<usize>> {
        let mut out = Vec::new();
        if n == 0 || num_words < n {
            return out;
        }
        let mut stack = vec![0usize; n];
        let mut depth: isize = 1;
        while depth >= 0 {
            let d = depth as usize;
            let step = d < n && stack[d] + 1 < num_words && (d == 0 || (stack[d] - stack[d - 1]) as i64 <= skip);
            if step {
                stack[d] += 1;
                depth += 1;
                if (depth as usize) < n {
                    stack[depth as usize] = stack[depth as usize - 1];
                }
            } else {
                if d > 0 && if all { d <= n } else { d == n } {
                    out.push(stack[..d].to_vec());
                }
                depth -= 1;
            }
        }
        out
    }

    #[test]
    fn splits_as_tflite() {
        let w = |s: &str| {
            split_words(s.as_bytes()).into_iter().map(|w| String::from_utf8_lossy(w).into_owned()).collect::<Vec<_>>()
        };
        assert_eq!(w("a b  c"), ["a", "b", "c"]);
        assert_eq!(w(""), Vec::<String>::new());
        assert_eq!(w(" "), [" "]);
        assert_eq!(w("  "), Vec::<String>::new());
        assert_eq!(w(" a"), [" a"]);
        assert_eq!(w(" a b"), ["b"]);
        assert_eq!(w("\ta\x0bb\x0cc\rd\ne "), ["b", "c", "d", "e"]);
        assert_eq!(w("héllo wörld\u{a0}x"), ["héllo", "wörld\u{a0}x"]);
    }

    #[test]
    fn ngrams_in_tflite_order() {
        assert_eq!(grams("a b c", 2, 0, false), ["a b", "b c"]);
        assert_eq!(grams("a b c d", 2, 1, true), ["a b", "a c", "a", "b c", "b d", "b", "c d", "c", "d"]);
        assert_eq!(grams("a b c d", 3, 1, false), ["a b c", "a b d", "a c d", "b c d"]);
        assert_eq!(grams("a b", 3, 5, false), Vec::<String>::new());
        assert_eq!(grams("a b", 0, 5, true), Vec::<String>::new());
        assert_eq!(grams("a b", -1, 5, true), Vec::<String>::new());
        assert_eq!(grams("a b c", 2, -1, true), ["a", "b", "c"]);
        assert_eq!(grams("a b c", 1, 0, false), ["a", "b", "c"]);
    }

    #[test]
    fn pruning_keeps_the_order() {
        for num_words in 0..8 {
            for n in 0..5 {
                for skip in -1..4 {
                    for all in [false, true] {
                        let names: Vec<String> = (0..num_words).map(|i| format!("w{i}")).collect();
                        let words: Vec<&[u8]> = names.iter().map(|s| s.as_bytes()).collect();
                        let got = skip_grams(&words, n as i32, skip, all, MAX_OUTPUT_BYTES).unwrap();
                        let got: Vec<Vec<u8>> = got.strings().into_iter().map(<[u8]>::to_vec).collect();
                        let want: Vec<Vec<u8>> = unpruned(num_words, n, skip as i64, all)
                            .into_iter()
                            .map(|g| g.iter().map(|&i| names[i].clone()).collect::<Vec<_>>().join(" ").into_bytes())
                            .collect();
                        assert_eq!(got, want, "{num_words} words, n {n}, skip {skip}, all {all}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_huge_skip_is_fast_and_the_output_is_bounded() {
        let names: Vec<String> = (0..200).map(|i| format!("w{i}")).collect();
        let words: Vec<&[u8]> = names.iter().map(|s| s.as_bytes()).collect();
        // One gram of all 200 words: TFLite's walk would visit ~2^199 partial grams.
        assert_eq!(skip_grams(&words, 200, i32::MAX, false, MAX_OUTPUT_BYTES).unwrap().ends.len(), 1);
        assert!(skip_grams(&words, 3, i32::MAX, true, 1 << 16).is_err());
    }

    #[test]
    fn type_checks_name_the_op() {
        let mut g = Graph::new();
        let x = g.tensor(TfLiteType::kTfLiteInt32, &[1], &[1i32], None, false);
        let y = g.output(TfLiteType::kTfLiteString, None);
        let p = TfLiteSkipGramParams { ngram_size: 2, max_skip_size: 0, include_all_ngrams: false };
        assert_eq!(g.run(&registration(), &[x], &[y], Some(p)), TfLiteStatus::kTfLiteError);
        let y2 = g.output(TfLiteType::kTfLiteInt32, None);
        let s = g.tensor(TfLiteType::kTfLiteString, &[1], &write_strings(&["a b"]).unwrap(), None, false);
        assert_eq!(g.run(&registration(), &[s], &[y2], Some(p)), TfLiteStatus::kTfLiteError);
        assert_eq!(g.run(&registration(), &[x, x], &[y], Some(p)), TfLiteStatus::kTfLiteError);
    }

    #[test]
    fn malformed_or_empty_inputs_are_errors() {
        let p = TfLiteSkipGramParams { ngram_size: 1, max_skip_size: 0, include_all_ngrams: false };
        let mut g = Graph::new();
        let none = g.tensor(TfLiteType::kTfLiteString, &[0], &write_strings::<&str>(&[]).unwrap(), None, false);
        let y = g.output(TfLiteType::kTfLiteString, None);
        assert_eq!(g.run(&registration(), &[none], &[y], Some(p)), TfLiteStatus::kTfLiteError);
        let mut bad = write_strings(&["a b"]).unwrap();
        bad[8..12].copy_from_slice(&1000i32.to_le_bytes());
        let bad = g.tensor(TfLiteType::kTfLiteString, &[1], &bad, None, false);
        assert_eq!(g.run(&registration(), &[bad], &[y], Some(p)), TfLiteStatus::kTfLiteError);
        let truncated = g.tensor(TfLiteType::kTfLiteString, &[1], &[1u8, 0], None, false);
        assert_eq!(g.run(&registration(), &[truncated], &[y], Some(p)), TfLiteStatus::kTfLiteError);
    }
}
