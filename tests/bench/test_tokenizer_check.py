"""The HF tokenizer that ``tokenizer_check`` builds gives the ``WordTokenizer``'s ids, rule by rule, and its report is filled."""

from __future__ import annotations

import re

import pytest
from tokenizers import Regex, pre_tokenizers

from thoughtvec.bench import tokenizer_check as tc
from thoughtvec.service.bundle.tokenization import WordTokenizer
from thoughtvec.service.bundle.tokenizer import _TOKEN, tokenize
from thoughtvec.service.bundle.vocab import EOS_ID, UNK_ID, Vocabulary

SENTENCES = [
    "Don't panic -- it's “fine”… see https://example.org!",
    "I can't, we won't, they're here, you've seen it, we'll go, he'd say, I'm in.",
    "it'sn't can't've rock'n'roll o'neill-style's y'all'd 'tis n't",
    "Pi is 3.14, not 1,000 or 10:30 or 1/2 -- 42nd street",
    "Visit www.example.com/path?q=1, or (http://a.b/c).",
    "‘Single’ and “double” quotes, ``PTB'' quotes, em—dash, en–dash, minus −1, ellipsis… and....",
    "UPPER Case WORDS and Zyzzyva-like unknowns",
    "ΟΔΟΣ ΣΑΣ ΑΣ'Β",  # str.lower()'s final sigma: οδος σας ασ'β
    "tab\tand\x01control\u00a0nbsp\u200bzero\ufeffwidth",
    "हिन्दी x² ½ ① ﬁne a_b",  # combining marks are no word characters for Python's \w
    "<eos> is text, not the special",
    "",
    "   ",
]


def vocabulary(lowercase: bool) -> Vocabulary:
    """Every word of SENTENCES but each fifth, which stays unknown."""
    words = sorted({w for s in SENTENCES for w in tokenize(s, lowercase)})
    return Vocabulary.from_words(w for i, w in enumerate(words) if i % 5)


@pytest.mark.parametrize("lowercase", [True, False])
@pytest.mark.parametrize("eos", [EOS_ID, None])
def test_hf_tokenizer_gives_the_same_ids(lowercase, eos):
    word = WordTokenizer(vocabulary(lowercase), lowercase, eos, pad_id=0)
    hf = tc.hf_like(word)
    for s in SENTENCES:
        assert hf.encode(s).ids == word.ids(s), f"{s!r}: ours {tokenize(s, lowercase)}, hf {tc.pieces(hf, s)}"
    ids = [i for s in SENTENCES for i in word.ids(s)]
    assert UNK_ID in ids and len(set(ids)) > 40  # known and unknown words both met
    assert tc.agreement(word, hf, SENTENCES).same == len(SENTENCES)


def test_a_missing_rule_shows_as_differences():
    word = WordTokenizer(vocabulary(True), True, EOS_ID, pad_id=0)
    hf = tc.hf_like(word)
    hf.pre_tokenizer = pre_tokenizers.Split(Regex("(?x)" + tc.onig(_TOKEN.pattern)), behavior="removed", invert=True)
    rep = tc.agreement(word, hf, SENTENCES)  # no contraction split
    assert rep.same < len(SENTENCES)
    assert rep.differences and ["do", "n't"] == rep.differences[0].ours[:2] and rep.differences[0].hf[0] == "don't"


def test_a_changed_contraction_pattern_is_refused(monkeypatch):
    monkeypatch.setattr(tc, "_NT", re.compile(r"(n't)$"))
    with pytest.raises(ValueError, match="no longer starts with"):
        tc.contraction_pattern()


def test_report_fields_are_computed():
    word = WordTokenizer(vocabulary(True), True, EOS_ID, pad_id=0)
    rep = tc.agreement(word, tc.hf_like(word), SENTENCES)
    s = tc.measure(word, tc.hf_like(word), SENTENCES * 5, rounds=1)
    assert (rep.sentences, rep.same, rep.differences) == (len(SENTENCES), len(SENTENCES), [])
    assert min(s.word_one, s.hf_one, s.word_batch, s.hf_batch) > 0


def test_runs_on_a_tiny_bundle(models_dir, tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    lines = [f"{s} ({i})" for i in range(4) for s in SENTENCES if s.strip()]  # 44: every fourth is taken for 11
    corpus.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    assert tc.read_sentences(corpus, 11) == lines[::4]
    assert tc.main(["--bundle", str(models_dir / "tiny"), "--corpus", str(corpus), "--sentences", "20", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert "tiny on 20 sentences of corpus.txt: 20/20 sentences with identical ids (100.00 %)" in out
    assert "1 per call:" in out and f"batches of {tc.BATCH}:" in out and "per 32-sentence request" in out
