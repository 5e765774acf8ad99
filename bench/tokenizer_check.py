r"""Would Hugging Face ``tokenizers`` tokenize a classic bundle faster, with the same ids? A check.

Builds, from a ``basic-ptb-v1`` bundle's vocabulary and tokenizer spec, a ``tokenizers.Tokenizer`` meant to
give the ids of the service's :class:`~thoughtvec.service.bundle.tokenization.WordTokenizer`, from the
patterns of :mod:`thoughtvec.service.bundle.tokenizer` themselves:

* normalizer: NFKC, the ``_TRANSLATE`` replacements, control characters to a space, ``Lowercase`` (after
  ``str.lower()``'s final sigma) when the spec asks, then ``''`` to ``"`` (the PTB closing quote);
* pre-tokenizer: ``Split`` keeping what ``_TOKEN`` matches (whitespace dropped), then ``Split`` isolating
  the contraction ``_NT`` or ``_CLITIC`` would split off; Python's ``\w`` is spelled out for Oniguruma;
* model ``WordLevel`` over ``vocab.txt`` with ``<unk>``; ``<eos>`` appended by a template where the bundle does.

Then, on ``--sentences`` sentences spread evenly over ``--corpus`` (one per line; default: the bundled
search sample), it prints the share with identical ids (and up to 5 that differ), and sentences/s for both:
one call per sentence (as a 1-sentence request tokenizes) and batches of 32 (``encode_batch``, which runs
on rayon's threads, against a loop), best of 3 alternated rounds, with the time difference per request.
Prints figures, asserts nothing. Run::

    python -m thoughtvec.bench.tokenizer_check --bundle models/uni-skip --corpus data/corpus/corpus.txt
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors

from thoughtvec.service.bundle.format import load_bundle
from thoughtvec.service.bundle.tokenization import WordTokenizer
from thoughtvec.service.bundle.tokenizer import _CLITIC, _CONTROL, _NT, _TOKEN, _TRANSLATE, tokenize
from thoughtvec.service.bundle.vocab import UNK
from thoughtvec.service.index.build import read_documents
from thoughtvec.service.settings import PACKAGE_DATA

BATCH = 32
# Python's ``\w`` (str patterns) is a Unicode letter or number, or ``_``; Oniguruma's also takes combining
# marks (हिन्दी would stay one word) and leaves out ``²``-like numbers, so the classes are spelled out.
_WORD, _NOT_WORD = r"[\p{L}\p{N}_]", r"[^\p{L}\p{N}_]"
_STEM = "^(.+?)"  # how _NT and _CLITIC begin: a stem of one character or more, then the suffix
_FINAL_SIGMA = r"(?<=\p{Cased}\p{Case_Ignorable}*)\u03a3(?!\p{Case_Ignorable}*\p{Cased})"  # Unicode's Final_Sigma context
# What the HF pipeline does not reproduce.
NOT_EXPRESSED = (
    "Unicode versions: Python's tables (unicodedata) and the Rust crates' (NFKC, \\p{L}, lowercase) differ on characters newer than Python's",
)


def onig(pattern: str) -> str:
    """A Python ``re`` pattern of the tokenizer in Oniguruma syntax: the same classes, ``\\w`` spelled out."""
    return pattern.replace(r"\W", _NOT_WORD).replace(r"\w", _WORD)


def contraction_pattern() -> str:
    """The suffix ``_NT`` (tried first) or ``_CLITIC`` splits off, matched alone: ``(?<=.)(n't)$|(?<=.)('s|...)$``.
    Only one can end a word, so one alternation keeps the first-match order and the single split."""
    parts = []
    for rx in (_NT, _CLITIC):
        if not rx.pattern.startswith(_STEM):
            raise ValueError(f"contraction pattern {rx.pattern!r} no longer starts with {_STEM!r}")
        parts.append("(?<=.)" + onig(rx.pattern[len(_STEM) :]))
    return "|".join(parts)


def _char_class(chars: Sequence[int]) -> Regex:
    return Regex("[" + "".join(f"\\x{{{c:x}}}" for c in chars) + "]")


def normalizer(lowercase: bool) -> normalizers.Normalizer:
    """``normalize_text`` (+ ``lower``), then ``''`` -> ``"`` as ``tokenize`` maps the ``''`` token."""
    by_target: dict[str, list[int]] = {}
    for code, target in _TRANSLATE.items():  # str.translate is one pass; no target is itself a source
        by_target.setdefault(target, []).append(code)
    steps: list[normalizers.Normalizer] = [normalizers.NFKC()]
    steps += [normalizers.Replace(_char_class(codes), target) for target, codes in by_target.items()]
    steps.append(normalizers.Replace(Regex(_CONTROL.pattern), " "))
    if lowercase:  # str.lower()'s Final_Sigma: a Σ after a cased letter and ending the word becomes ς, not σ
        steps += [normalizers.Replace(Regex(_FINAL_SIGMA), "\u03c2"), normalizers.Lowercase()]
    # ''  is always a token of its own in _TOKEN's leftmost scan (no token ends in '), so replacing it first is the same
    steps.append(normalizers.Replace("''", '"'))
    return normalizers.Sequence(steps)


def pre_tokenizer() -> pre_tokenizers.PreTokenizer:
    # invert: keep the matches, drop what lies between them (whitespace only: _TOKEN ends with [^\s])
    tokens = pre_tokenizers.Split(Regex("(?x)" + onig(_TOKEN.pattern)), behavior="removed", invert=True)
    return pre_tokenizers.Sequence([tokens, pre_tokenizers.Split(Regex(contraction_pattern()), behavior="isolated")])


def hf_like(word: WordTokenizer) -> Tokenizer:
    """An HF tokenizer meant to give ``word.ids(text)`` for every text."""
    hf = Tokenizer(models.WordLevel(dict(word.vocab.index), unk_token=UNK))
    hf.normalizer = normalizer(word.lowercase)
    hf.pre_tokenizer = pre_tokenizer()
    if word.suffix:  # the id only: <eos> is no added token, so "<eos>" in a text stays "<", "eos", ">"
        (eos,) = word.suffix
        name = word.vocab.tokens[eos]
        hf.post_processor = processors.TemplateProcessing(single=f"$A {name}", special_tokens=[(name, eos)])
    return hf


@dataclass
class Difference:
    text: str
    ours: list[str]  # tokenize()'s words
    hf: list[str]  # the HF pre-tokenizer's pieces


@dataclass
class Speed:
    """Sentences/s, best round: one call per sentence, and batches of 32 (a loop vs ``encode_batch``)."""

    word_one: float
    hf_one: float
    word_batch: float
    hf_batch: float


@dataclass
class Report:
    sentences: int
    same: int
    differences: list[Difference] = field(default_factory=list)  # the first 5
    speed: Speed | None = None


def pieces(hf: Tokenizer, text: str) -> list[str]:
    assert hf.normalizer is not None and hf.pre_tokenizer is not None
    return [p for p, _ in hf.pre_tokenizer.pre_tokenize_str(hf.normalizer.normalize_str(text))]


def agreement(word: WordTokenizer, hf: Tokenizer, texts: Sequence[str], keep: int = 5) -> Report:
    rep = Report(sentences=len(texts), same=0)
    for text, enc in zip(texts, hf.encode_batch(list(texts))):
        if enc.ids == word.ids(text):
            rep.same += 1
        elif len(rep.differences) < keep:
            rep.differences.append(Difference(text, tokenize(text, word.lowercase), pieces(hf, text)))
    return rep


def _best(fn: Callable[[], object], best: float) -> float:
    t = time.perf_counter()
    fn()
    return min(best, time.perf_counter() - t)


def measure(word: WordTokenizer, hf: Tokenizer, texts: Sequence[str], rounds: int = 3) -> Speed:
    """Best of ``rounds``, the four ways alternated within each round (a busy spell hits all of them)."""
    texts = list(texts)
    batches = [texts[i : i + BATCH] for i in range(0, len(texts), BATCH)]
    ways: dict[str, Callable[[], object]] = {
        "word_one": lambda: [word.ids(t) for t in texts],
        "hf_one": lambda: [hf.encode(t).ids for t in texts],
        "word_batch": lambda: [[word.ids(t) for t in b] for b in batches],
        "hf_batch": lambda: [[e.ids for e in hf.encode_batch(b)] for b in batches],
    }
    best = dict.fromkeys(ways, float("inf"))
    for r in range(rounds):
        print(f"timing round {r + 1}/{rounds}", file=sys.stderr, flush=True)
        for name, fn in ways.items():
            best[name] = _best(fn, best[name])
    return Speed(**{name: len(texts) / max(s, 1e-9) for name, s in best.items()})


def read_sentences(path: Path, n: int) -> list[str]:
    """``n`` sentences spread evenly over the file (a corpus begins with one book)."""
    texts = [d.text for d in read_documents(path)]
    step = max(1, len(texts) // n)
    return texts[::step][:n]


def _gain(word_rate: float, hf_rate: float, per_request: int) -> str:
    us = per_request * (1e6 / word_rate - 1e6 / hf_rate)  # > 0: HF saves this much per request
    return f"{'saves' if us > 0 else 'costs'} {abs(us):.1f} µs per {per_request}-sentence request (x{hf_rate / word_rate:.2f} speed)"


def print_report(name: str, rep: Report) -> None:
    print(f"{name}: {rep.same}/{rep.sentences} sentences with identical ids ({100 * rep.same / max(rep.sentences, 1):.2f} %)")
    for d in rep.differences:
        at = next((i for i, (a, b) in enumerate(zip(d.ours, d.hf)) if a != b), min(len(d.ours), len(d.hf)))
        print(f"  differs: {d.text[:100]!r}\n    ours {d.ours[max(0, at - 2) : at + 3]}  hf {d.hf[max(0, at - 2) : at + 3]}")
    for rule in NOT_EXPRESSED:
        print(f"  not expressed: {rule}")
    if rep.speed is not None:
        s = rep.speed
        for label, ours, theirs, n in (("1 per call", s.word_one, s.hf_one, 1), (f"batches of {BATCH}", s.word_batch, s.hf_batch, BATCH)):
            print(f"  {label + ':':<14} WordTokenizer {ours:,.0f}/s, HF {theirs:,.0f}/s: HF {_gain(ours, theirs, n)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", type=Path, required=True, help="a basic-ptb-v1 bundle folder")
    ap.add_argument("--sentences", type=int, default=20_000)
    ap.add_argument("--corpus", type=Path, default=PACKAGE_DATA / "search_sample.tsv.gz", help=".txt one per line, or .tsv(.gz)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    word = load_bundle(args.bundle).tokenizer()
    if not isinstance(word, WordTokenizer):
        raise SystemExit(f"{args.bundle}: not a basic-ptb-v1 bundle (it already uses HF tokenizers)")
    hf = hf_like(word)
    texts = read_sentences(args.corpus, args.sentences)
    rep = agreement(word, hf, texts)
    rep.speed = measure(word, hf, texts, args.rounds)
    print_report(f"{args.bundle.name} on {len(texts)} sentences of {args.corpus.name}", rep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
