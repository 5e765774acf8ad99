"""SentEval readers: counts against the real data (``../shared/data/senteval``), errors on broken copies."""

import shutil
from collections import Counter
from pathlib import Path

import pytest

from thoughtvec.training.evaluation import datasets as ds
from thoughtvec.training.evaluation.datasets import DatasetError, Pairs, Sentences

ROOT = ds.default_root()
real = pytest.mark.skipif(not ROOT.is_dir(), reason=f"SentEval data not found at {ROOT} (set THOUGHTVEC_SENTEVAL)")


@real
@pytest.mark.parametrize(
    "name, sizes",
    [
        ("MR", {"all": 10662}),
        ("CR", {"all": 3771}),
        ("SUBJ", {"all": 10000}),
        ("MPQA", {"all": 10603}),
        ("TREC", {"train": 5452, "test": 500}),
        ("SST2", {"train": 67349, "dev": 872, "test": 1821}),
        ("MRPC", {"train": 4076, "test": 1725}),
        ("SICKRelatedness", {"train": 4500, "dev": 500, "test": 4927}),
        ("SICKEntailment", {"train": 4500, "dev": 500, "test": 4927}),
        ("STSBenchmark", {"train": 5749, "dev": 1500, "test": 1379}),
    ],
)
def test_real_sizes(name, sizes):
    task = ds.load_task(name, ROOT)
    assert {k: len(v) for k, v in task.splits.items()} == sizes
    for split in task.splits.values():
        texts = split.sentences if isinstance(split, Sentences) else split.first + split.second
        assert all(t and t == t.strip() and "\r" not in t for t in texts)


@real
def test_real_labels_and_scores():
    mr = ds.load_mr(ROOT).splits["all"]
    assert Counter(mr.labels) == {1: 5331, 0: 5331}
    trec = ds.load_trec(ROOT)
    assert Counter(trec.classes[i] for i in trec.splits["train"].labels) == {
        "ABBR": 86,
        "DESC": 1162,
        "ENTY": 1250,
        "HUM": 1223,
        "LOC": 835,
        "NUM": 896,
    }
    sst = ds.load_sst2(ROOT).splits
    assert Counter(sst["dev"].labels) == {0: 428, 1: 444} and Counter(sst["test"].labels) == {0: 912, 1: 909}
    assert Counter(ds.load_mrpc(ROOT).splits["test"].labels)[1] == 1147
    sick = ds.load_sick_entailment(ROOT).splits["test"]
    assert Counter(sick.labels) == {1: 2793, 2: 1414, 0: 720}  # NEUTRAL, ENTAILMENT, CONTRADICTION
    sts = ds.load_stsb(ROOT).splits["train"]
    assert isinstance(sts, Pairs) and min(sts.scores) >= 0 and max(sts.scores) <= 5


@real
def test_real_all_sentences():
    sents = ds.all_sentences(ROOT)
    assert len(sents) > 120_000 and "a man is playing a flute ." in sents


@pytest.fixture()
def copy(tmp_path):
    """Copy one real file into a tmp tree: ``copy("SST/binary/sentiment-dev") -> (root, path)``."""
    if not ROOT.is_dir():
        pytest.skip(f"SentEval data not found at {ROOT}")

    def _copy(*rels: str) -> tuple[Path, Path]:
        for rel in rels:
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / rel, tmp_path / rel)
        return tmp_path, tmp_path / rels[0]

    return _copy


def _edit_line(path: Path, lineno: int, new: str) -> None:
    lines = path.read_bytes().decode("latin-1").split("\n")
    lines[lineno - 1] = new
    path.write_bytes("\n".join(lines).encode("latin-1"))


def test_missing_file_is_named(copy):
    root, _ = copy("MR/rt-polarity.pos")
    with pytest.raises(DatasetError, match=r"MR/rt-polarity\.neg: file not found"):
        ds.load_mr(root)


def test_truncated_file_fails_the_count(copy):
    root, path = copy("MR/rt-polarity.pos", "MR/rt-polarity.neg")
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:-1]))
    with pytest.raises(DatasetError, match=r"rt-polarity\.pos: 5330 examples, expected 5331"):
        ds.load_mr(root)
    assert len(ds.load_mr(root, check_counts=False).splits["all"]) == 10661


def test_bad_sst_label(copy):
    root, path = copy("SST/binary/sentiment-dev", "SST/binary/sentiment-train", "SST/binary/sentiment-test")
    _edit_line(path, 3, "a sentence without a label")
    with pytest.raises(DatasetError, match=r"sentiment-dev line 3: expected 'sentence<TAB>0\|1'"):
        ds.load_sst2(root)


def test_bad_trec_label(copy):
    root, path = copy("TREC/TREC_10.label", "TREC/train_5500.label")
    _edit_line(path, 7, "WHAT:ever Is this a question ?")
    with pytest.raises(DatasetError, match=r"TREC_10\.label line 7: expected 'COARSE:fine question'"):
        ds.load_trec(root)


def test_sts_needs_seven_columns_and_a_score(copy):
    root, path = copy("STS/STSBenchmark/sts-dev.csv", "STS/STSBenchmark/sts-train.csv", "STS/STSBenchmark/sts-test.csv")
    _edit_line(path, 2, "main-captions\tMSRvid\t2012test\t0001\tfive\ta b\tc d")
    with pytest.raises(DatasetError, match=r"sts-dev\.csv line 2: score 'five' is not a number"):
        ds.load_stsb(root)
    _edit_line(path, 2, "only\tthree\tcolumns")
    with pytest.raises(DatasetError, match=r"sts-dev\.csv line 2: expected 7 tab-separated columns, found 3"):
        ds.load_stsb(root)


def test_sick_crlf_and_bad_judgment(copy):
    root, path = copy("SICK/SICK_test_annotated.txt", "SICK/SICK_train.txt", "SICK/SICK_trial.txt")
    assert path.read_bytes().count(b"\r\n") == 4928  # the original's CRLF, read as is
    assert len(ds.load_sick_relatedness(root).splits["test"]) == 4927
    _edit_line(path, 5, "9\tA\tB\t3.0\tMAYBE\r")
    with pytest.raises(DatasetError, match=r"SICK_test_annotated\.txt line 5: entailment 'MAYBE'"):
        ds.load_sick_entailment(root)


def test_mrpc_bad_quality(copy):
    root, path = copy("MRPC/msr_paraphrase_test.txt", "MRPC/msr_paraphrase_train.txt")
    _edit_line(path, 2, "x\t1\t2\tA .\tB .")
    with pytest.raises(DatasetError, match=r"msr_paraphrase_test\.txt line 2: quality 'x'"):
        ds.load_mrpc(root)


def test_unknown_task():
    with pytest.raises(KeyError, match="known: MR, CR"):
        ds.load_task("STS12", Path("."))
