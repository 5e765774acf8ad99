import time

import pytest

from thoughtvec.service.bundle.tokenizer import normalize_text, tokenize


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", []),
        ("   \t\n ", []),
        ("The cat sat.", ["the", "cat", "sat", "."]),
        # PTB contractions, as SentEval's files and GloVe's vocabulary have them
        ("Don't, can't, won't", ["do", "n't", ",", "ca", "n't", ",", "wo", "n't"]),
        ("it's we're I've they'll she'd I'm", ["it", "'s", "we", "'re", "i", "'ve", "they", "'ll", "she", "'d", "i", "'m"]),
        # already-tokenized text (SentEval) tokenizes to the same thing
        ("it 's does n't", ["it", "'s", "does", "n't"]),
        # typographic quotes, dashes and ellipsis become ASCII
        ("“Quoted” ‘single’ — dash…", ['"', "quoted", '"', "'", "single", "'", "--", "dash", "..."]),
        ("``PTB quotes''", ['"', "ptb", "quotes", '"']),
        ("Visit https://example.org/a?b=1, or www.test.com.", ["visit", "https://example.org/a?b=1", ",", "or", "www.test.com", "."]),
        ("It costs $3.50 or 1,000 yen at 10:30", ["it", "costs", "$", "3.50", "or", "1,000", "yen", "at", "10:30"]),
        ("well-known naïve CAFÉ Zürich", ["well-known", "naïve", "café", "zürich"]),
        ("I love it 😀🐱!", ["i", "love", "it", "😀", "🐱", "!"]),
        ("ﬁne ｆｕｌｌｗｉｄｔｈ", ["fine", "fullwidth"]),  # NFKC
        ("a\x00b\x07c", ["a", "b", "c"]),  # control characters are spaces
        ("the dogs' bone", ["the", "dogs", "'", "bone"]),
    ],
)
def test_tokenize(text, expected):
    assert tokenize(text) == expected


def test_lowercase_is_optional():
    assert tokenize("The Cat", lowercase=False) == ["The", "Cat"]


def test_long_input_is_fast_and_linear():
    text = "Lorem ipsum, dolor sit amet! " * 345  # ~10 000 characters
    assert len(text) >= 10_000
    t = time.perf_counter()
    toks = tokenize(text)
    assert len(toks) == 345 * 7
    assert time.perf_counter() - t < 1.0  # generous: guards against catastrophic backtracking only


def test_pathological_inputs_do_not_backtrack():
    for text in ["a-" * 5000, "'" * 10000, "http://" + "a" * 10000, "1." * 5000]:
        t = time.perf_counter()
        tokenize(text)
        assert time.perf_counter() - t < 1.0


def test_non_string_is_a_type_error():
    with pytest.raises(TypeError):
        tokenize(None)  # type: ignore[arg-type]


def test_normalize_keeps_case():
    assert normalize_text("“Hi”") == '"Hi"'
