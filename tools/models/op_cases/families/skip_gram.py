"""SKIP_GRAM: the n-grams with skips of the input's first string, split into words at
C-locale whitespace as TFLite's loop splits it, in TFLite's order; the output is a
dynamic 1-D string tensor."""
import numpy as np
from graph import Graph
from make_op_cases import Case, tensor_bytes

OPS = ["SKIP_GRAM:1"]


def skip_gram(name, text, ngram, skip, include_all, const=False, extra=(), note=""):
    g = Graph()
    values = [text, *extra]
    data = np.asarray([v.encode() for v in values], dtype=object)
    if const:
        x = g.const("text", "STRING", [len(values)], tensor_bytes(data))
        inputs = []
    else:
        x = g.input("text", "STRING", [len(values)])
        inputs = [data]
    y = g.tensor("grams", "STRING", [0])
    g.op("SKIP_GRAM", [x], [y], options=Graph.options(
        "SkipGramOptions", ngramSize=ngram, maxSkipSize=skip, includeAllNgrams=include_all))
    g.outputs([y])
    return Case(name, g.finish(), inputs, note=note or f"ngram {ngram}, skip {skip}, all {include_all}", ops=OPS)


SENTENCE = "the quick brown fox jumps over the lazy dog"


def cases():
    yield skip_gram("skip_gram_bigrams", SENTENCE, 2, 0, False)
    yield skip_gram("skip_gram_bigrams_skip1_all", SENTENCE, 2, 1, True)
    yield skip_gram("skip_gram_trigrams_skip2", SENTENCE, 3, 2, False)
    yield skip_gram("skip_gram_trigrams_skip1_all", SENTENCE, 3, 1, True)
    yield skip_gram("skip_gram_unigrams", SENTENCE, 1, 3, False)
    yield skip_gram("skip_gram_4grams_skip3_all", "a b c d e f g", 4, 3, True)
    yield skip_gram("skip_gram_whole_sentence", "one two three four five", 5, 0, False,
                    note="ngram_size equal to the word count: one gram")
    yield skip_gram("skip_gram_too_few_words", "one two", 3, 1, True,
                    note="fewer words than ngram_size: no strings")
    yield skip_gram("skip_gram_empty", "", 2, 1, True, note="the empty string: no strings")
    yield skip_gram("skip_gram_one_space", " ", 1, 0, False,
                    note="a one-byte input is one word, even a space")
    yield skip_gram("skip_gram_spaces_only", "   \t ", 1, 0, True)
    yield skip_gram("skip_gram_leading_space", " a b c", 2, 1, True,
                    note="the scan starts at byte 1: after a leading space the first word is dropped")
    yield skip_gram("skip_gram_leading_space_one_word", " ab", 1, 0, False,
                    note="a leading space before a single word stays in the word")
    yield skip_gram("skip_gram_multi_space_unicode", "  héllo\t\twörld \n 日本 語\x0bnoch\x0c  ein\r wort  ",
                    2, 2, True, note="runs of C-locale whitespace; UTF-8 words")
    yield skip_gram("skip_gram_ngram_zero", SENTENCE, 0, 2, True, note="ngram_size 0: no strings")
    yield skip_gram("skip_gram_negative_skip", SENTENCE, 2, -1, True,
                    note="a negative skip allows no second word: only unigrams")
    yield skip_gram("skip_gram_const_input", "to be or not to be", 2, 1, False, const=True,
                    note="a constant input")
    yield skip_gram("skip_gram_second_string_ignored", "x y z", 2, 0, False, extra=("p q r",),
                    note="only the first string is read")
    yield skip_gram("skip_gram_long_skip", "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12", 3, 10, True,
                    note="a skip larger than the sentence")
