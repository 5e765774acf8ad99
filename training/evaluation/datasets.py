"""Readers for the SentEval downstream data, one per task, with their expected sizes checked.

The data live outside the repo (``../shared/data/senteval``, or ``$THOUGHTVEC_SENTEVAL``); their
layout, sizes and quirks are in that folder's ``PROVENANCE.md``. Every reader returns a
:class:`Task`: named splits of sentences (or sentence pairs) with integer labels or float scores,
exactly as the files have them (SentEval's PTB/Moses tokenisation is kept; our tokenizer reads it).

    >>> task = load_task("MR", default_root())          # doctest: +SKIP
    >>> split = task.single("all"); split.sentences[0], split.labels[0]

Differences from SentEval's own loaders, on purpose:
- CR and MPQA have a few empty lines, which SentEval keeps as empty sentences (CR's N=3775);
  we skip them, so CR has 2405 + 1366 sentences and MPQA 3311 + 7292.
- A missing file, a malformed line or a count that differs from the published one raises
  :class:`DatasetError` naming the file (and the line), instead of a KeyError or a quiet shortfall.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from thoughtvec import paths

__all__ = [
    "DatasetError",
    "Sentences",
    "Pairs",
    "Task",
    "TASKS",
    "load_task",
    "all_sentences",
    "default_root",
    "load_mr",
    "load_cr",
    "load_subj",
    "load_mpqa",
    "load_trec",
    "load_sst2",
    "load_mrpc",
    "load_sick_relatedness",
    "load_sick_entailment",
    "load_stsb",
]

# Published sizes (non-empty lines; pair files without their header), as listed in PROVENANCE.md.
EXPECTED: dict[str, int] = {
    "MR/rt-polarity.pos": 5331,
    "MR/rt-polarity.neg": 5331,
    "CR/custrev.pos": 2405,
    "CR/custrev.neg": 1366,
    "SUBJ/subj.objective": 5000,
    "SUBJ/subj.subjective": 5000,
    "MPQA/mpqa.pos": 3311,
    "MPQA/mpqa.neg": 7292,
    "TREC/train_5500.label": 5452,
    "TREC/TREC_10.label": 500,
    "SST/binary/sentiment-train": 67349,
    "SST/binary/sentiment-dev": 872,
    "SST/binary/sentiment-test": 1821,
    "MRPC/msr_paraphrase_train.txt": 4076,
    "MRPC/msr_paraphrase_test.txt": 1725,
    "SICK/SICK_train.txt": 4500,
    "SICK/SICK_trial.txt": 500,
    "SICK/SICK_test_annotated.txt": 4927,
    "STS/STSBenchmark/sts-train.csv": 5749,
    "STS/STSBenchmark/sts-dev.csv": 1500,
    "STS/STSBenchmark/sts-test.csv": 1379,
}

TREC_CLASSES = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
SICK_CLASSES = ("CONTRADICTION", "NEUTRAL", "ENTAILMENT")  # SentEval's label ids


class DatasetError(Exception):
    """A SentEval file is missing, malformed, or does not have the expected number of examples."""


@dataclass(frozen=True)
class Sentences:
    """One split of a single-sentence classification task."""

    sentences: tuple[str, ...]
    labels: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.sentences)


@dataclass(frozen=True)
class Pairs:
    """One split of a sentence-pair task: class ``labels`` or graded ``scores`` (or both, SICK)."""

    first: tuple[str, ...]
    second: tuple[str, ...]
    labels: tuple[int, ...] | None = None
    scores: tuple[float, ...] | None = None

    def __len__(self) -> int:
        return len(self.first)


@dataclass(frozen=True)
class Task:
    """A task's splits. ``"all"`` is the only split of the cross-validated tasks (MR, CR, SUBJ, MPQA).

    ``classes[i]`` names label ``i``; regression tasks have no classes and a ``score_range``.
    """

    name: str
    splits: Mapping[str, Sentences | Pairs]
    classes: tuple[str, ...] = ()
    score_range: tuple[float, float] | None = None

    def single(self, split: str) -> Sentences:
        """The split ``split`` of a single-sentence task."""
        s = self.splits[split]
        if not isinstance(s, Sentences):
            raise TypeError(f"{self.name} {split!r} holds sentence pairs, not single sentences")
        return s

    def pairs(self, split: str) -> Pairs:
        """The split ``split`` of a sentence-pair task."""
        s = self.splits[split]
        if not isinstance(s, Pairs):
            raise TypeError(f"{self.name} {split!r} holds single sentences, not sentence pairs")
        return s

    def sentences(self) -> Iterator[str]:
        """Every sentence of every split (both sides of a pair)."""
        for split in self.splits.values():
            if isinstance(split, Pairs):
                yield from split.first
                yield from split.second
            else:
                yield from split.sentences


def default_root() -> Path:
    """``$THOUGHTVEC_SENTEVAL``, else ``../shared/data/senteval`` next to the repository."""
    env = os.environ.get("THOUGHTVEC_SENTEVAL")
    if env:
        return Path(env)
    return paths.SHARED_DATA / "senteval"


# --------------------------------------------------------------------------------------------
# file plumbing


def _lines(root: Path, rel: str, encoding: str = "utf-8", header: bool = False) -> Iterator[tuple[int, str]]:
    """(line number, line) of a data file, line ends (LF or CRLF) and the header removed."""
    path = Path(root) / rel
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"{path}: file not found (SentEval data; see PROVENANCE.md in {root})") from None
    except OSError as e:
        raise DatasetError(f"{path}: cannot read ({e.strerror})") from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as e:
        lineno = data[: e.start].count(b"\n") + 1
        raise DatasetError(f"{path} line {lineno}: not {encoding} text ({e.reason})") from None
    # split on "\n" only: str.splitlines() would also split inside a sentence at \x85 or \u2028
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if header:
        if not lines:
            raise DatasetError(f"{path}: empty file, expected a header line")
        lines = lines[1:]
    for i, line in enumerate(lines, start=2 if header else 1):
        yield i, line.rstrip("\r")


def _check_count(root: Path, rel: str, n: int, check: bool) -> None:
    if check and n != EXPECTED[rel]:
        raise DatasetError(f"{Path(root) / rel}: {n} examples, expected {EXPECTED[rel]} (truncated or wrong file?)")


def _malformed(root: Path, rel: str, lineno: int, what: str, line: str) -> DatasetError:
    return DatasetError(f"{Path(root) / rel} line {lineno}: {what}; got {line[:80]!r}")


def _columns(root: Path, rel: str, lineno: int, line: str, n: int) -> list[str]:
    cols = line.split("\t")
    if len(cols) != n:
        raise _malformed(root, rel, lineno, f"expected {n} tab-separated columns, found {len(cols)}", line)
    return cols


def _number(root: Path, rel: str, lineno: int, line: str, value: str, lo: float, hi: float) -> float:
    try:
        x = float(value)
    except ValueError:
        raise _malformed(root, rel, lineno, f"score {value!r} is not a number", line) from None
    if not lo <= x <= hi:
        raise _malformed(root, rel, lineno, f"score {x} outside [{lo}, {hi}]", line)
    return x


# --------------------------------------------------------------------------------------------
# single-sentence tasks


def _one_per_line(root: Path, rel: str, check: bool, encoding: str = "utf-8") -> list[str]:
    """Non-empty lines of a one-sentence-per-line file."""
    out = [line.strip() for _, line in _lines(root, rel, encoding) if line.strip()]
    _check_count(root, rel, len(out), check)
    return out


def _binary(name: str, root: Path, pos: str, neg: str, classes: tuple[str, str], check: bool) -> Task:
    """SentEval's binary tasks: the positive file (label 1) then the negative one (label 0)."""
    p = _one_per_line(root, pos, check)
    n = _one_per_line(root, neg, check)
    split = Sentences(tuple(p + n), (1,) * len(p) + (0,) * len(n))
    return Task(name, {"all": split}, classes=classes)


def load_mr(root: Path, check_counts: bool = True) -> Task:
    """Movie-review polarity (Pang & Lee 2005): 5331 + 5331 snippets, 10-fold CV."""
    return _binary("MR", root, "MR/rt-polarity.pos", "MR/rt-polarity.neg", ("negative", "positive"), check_counts)


def load_cr(root: Path, check_counts: bool = True) -> Task:
    """Customer-review polarity (Hu & Liu 2004): 2405 + 1366 sentences."""
    return _binary("CR", root, "CR/custrev.pos", "CR/custrev.neg", ("negative", "positive"), check_counts)


def load_subj(root: Path, check_counts: bool = True) -> Task:
    """Subjectivity (Pang & Lee 2004): objective is label 1, as SentEval has it."""
    return _binary("SUBJ", root, "SUBJ/subj.objective", "SUBJ/subj.subjective", ("subjective", "objective"), check_counts)


def load_mpqa(root: Path, check_counts: bool = True) -> Task:
    """MPQA opinion polarity (Wiebe et al. 2005): 3311 + 7292 phrases."""
    return _binary("MPQA", root, "MPQA/mpqa.pos", "MPQA/mpqa.neg", ("negative", "positive"), check_counts)


def _trec_file(root: Path, rel: str, check: bool) -> Sentences:
    sents, labels = [], []
    # train_5500.label is Latin-1 (one byte 0xe9 etc.), as SentEval reads it
    for i, line in _lines(root, rel, encoding="latin-1"):
        if not line.strip():
            continue
        label, _, question = line.partition(" ")
        coarse, colon, fine = label.partition(":")
        if not colon or not fine or coarse not in TREC_CLASSES or not question.strip():
            raise _malformed(root, rel, i, "expected 'COARSE:fine question' with COARSE in " + "/".join(TREC_CLASSES), line)
        sents.append(question.strip())
        labels.append(TREC_CLASSES.index(coarse))
    _check_count(root, rel, len(sents), check)
    return Sentences(tuple(sents), tuple(labels))


def load_trec(root: Path, check_counts: bool = True) -> Task:
    """TREC question type (Li & Roth 2002), the 6 coarse classes: train 5452, test 500."""
    splits = {
        "train": _trec_file(root, "TREC/train_5500.label", check_counts),
        "test": _trec_file(root, "TREC/TREC_10.label", check_counts),
    }
    return Task("TREC", splits, classes=TREC_CLASSES)


def _sst_file(root: Path, rel: str, check: bool) -> Sentences:
    sents, labels = [], []
    for i, line in _lines(root, rel):
        if not line.strip():
            continue
        sent, tab, label = line.rpartition("\t")
        if not tab or label not in ("0", "1") or not sent.strip():
            raise _malformed(root, rel, i, "expected 'sentence<TAB>0|1'", line)
        sents.append(sent.strip())
        labels.append(int(label))
    _check_count(root, rel, len(sents), check)
    return Sentences(tuple(sents), tuple(labels))


def load_sst2(root: Path, check_counts: bool = True) -> Task:
    """Binary Stanford Sentiment Treebank (SIF's split files): train 67349 phrases, dev 872, test 1821."""
    splits = {s: _sst_file(root, f"SST/binary/sentiment-{s}", check_counts) for s in ("train", "dev", "test")}
    return Task("SST2", splits, classes=("negative", "positive"))


# --------------------------------------------------------------------------------------------
# sentence-pair tasks


def _mrpc_file(root: Path, rel: str, check: bool) -> Pairs:
    first, second, labels = [], [], []
    # header "Quality<TAB>#1 ID<TAB>#2 ID<TAB>#1 String<TAB>#2 String", after a UTF-8 BOM
    for i, line in _lines(root, rel, encoding="utf-8-sig", header=True):
        if not line.strip():
            continue
        quality, _, _, a, b = _columns(root, rel, i, line, 5)
        if quality not in ("0", "1"):
            raise _malformed(root, rel, i, f"quality {quality!r} is not 0 or 1", line)
        first.append(a.strip())
        second.append(b.strip())
        labels.append(int(quality))
    _check_count(root, rel, len(first), check)
    return Pairs(tuple(first), tuple(second), labels=tuple(labels))


def load_mrpc(root: Path, check_counts: bool = True) -> Task:
    """Microsoft Research Paraphrase Corpus: train 4076 pairs, test 1725 (label 1 = paraphrase)."""
    splits = {
        "train": _mrpc_file(root, "MRPC/msr_paraphrase_train.txt", check_counts),
        "test": _mrpc_file(root, "MRPC/msr_paraphrase_test.txt", check_counts),
    }
    return Task("MRPC", splits, classes=("not_paraphrase", "paraphrase"))


_SICK_FILES = {"train": "SICK/SICK_train.txt", "dev": "SICK/SICK_trial.txt", "test": "SICK/SICK_test_annotated.txt"}


def _sick_file(root: Path, rel: str, check: bool) -> Pairs:
    first, second, scores, labels = [], [], [], []
    # header: pair_ID sentence_A sentence_B relatedness_score entailment_judgment; the test file is CRLF
    for i, line in _lines(root, rel, header=True):
        if not line.strip():
            continue
        _, a, b, score, judgment = _columns(root, rel, i, line, 5)
        if judgment not in SICK_CLASSES:
            raise _malformed(root, rel, i, f"entailment {judgment!r} not one of {'/'.join(SICK_CLASSES)}", line)
        first.append(a.strip())
        second.append(b.strip())
        scores.append(_number(root, rel, i, line, score, 1.0, 5.0))
        labels.append(SICK_CLASSES.index(judgment))
    _check_count(root, rel, len(first), check)
    return Pairs(tuple(first), tuple(second), labels=tuple(labels), scores=tuple(scores))


def _sick(root: Path, check: bool) -> dict[str, Pairs]:
    return {split: _sick_file(root, rel, check) for split, rel in _SICK_FILES.items()}


def load_sick_relatedness(root: Path, check_counts: bool = True) -> Task:
    """SICK relatedness (Marelli et al. 2014): scores in [1, 5]; train 4500, dev (trial) 500, test 4927."""
    splits = {k: Pairs(p.first, p.second, scores=p.scores) for k, p in _sick(root, check_counts).items()}
    return Task("SICKRelatedness", splits, score_range=(1.0, 5.0))


def load_sick_entailment(root: Path, check_counts: bool = True) -> Task:
    """SICK entailment: CONTRADICTION / NEUTRAL / ENTAILMENT on the same pairs."""
    splits = {k: Pairs(p.first, p.second, labels=p.labels) for k, p in _sick(root, check_counts).items()}
    return Task("SICKEntailment", splits, classes=SICK_CLASSES)


def _stsb_file(root: Path, rel: str, check: bool) -> Pairs:
    first, second, scores = [], [], []
    # no header; genre, file, year, id, score, sentence 1, sentence 2
    for i, line in _lines(root, rel):
        if not line.strip():
            continue
        cols = _columns(root, rel, i, line, 7)
        scores.append(_number(root, rel, i, line, cols[4], 0.0, 5.0))
        first.append(cols[5].strip())
        second.append(cols[6].strip())
    _check_count(root, rel, len(first), check)
    return Pairs(tuple(first), tuple(second), scores=tuple(scores))


def load_stsb(root: Path, check_counts: bool = True) -> Task:
    """STS Benchmark (Cer et al. 2017): scores in [0, 5]; train 5749, dev 1500, test 1379."""
    splits = {s: _stsb_file(root, f"STS/STSBenchmark/sts-{s}.csv", check_counts) for s in ("train", "dev", "test")}
    return Task("STSBenchmark", splits, score_range=(0.0, 5.0))


# SentEval's task names
TASKS: dict[str, Callable[..., Task]] = {
    "MR": load_mr,
    "CR": load_cr,
    "SUBJ": load_subj,
    "MPQA": load_mpqa,
    "TREC": load_trec,
    "SST2": load_sst2,
    "MRPC": load_mrpc,
    "SICKRelatedness": load_sick_relatedness,
    "SICKEntailment": load_sick_entailment,
    "STSBenchmark": load_stsb,
}


def load_task(name: str, root: Path | None = None, check_counts: bool = True) -> Task:
    """Load one task by its SentEval name (see :data:`TASKS`)."""
    if name not in TASKS:
        raise KeyError(f"unknown SentEval task {name!r}; known: {', '.join(TASKS)}")
    return TASKS[name](Path(root) if root is not None else default_root(), check_counts=check_counts)


def all_sentences(root: Path | None = None, check_counts: bool = True) -> set[str]:
    """Every sentence of every task and split, as written in the files (for leak filtering)."""
    root = Path(root) if root is not None else default_root()
    out: set[str] = set()
    for name, loader in TASKS.items():
        if name == "SICKEntailment":  # same sentences as SICKRelatedness
            continue
        out.update(loader(root, check_counts=check_counts).sentences())
    return out
