"""The document files of bulk builds (``service/index/inputs.py``): each format, the id rule, streaming, and every
malformed line refused naming its file and line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from thoughtvec.service.index.inputs import MetadataLimits, count_documents, iter_documents, read_documents


def write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


def docs_of(path: Path, **kw) -> list[tuple[str, str, dict | None]]:
    return [(d.id, d.text, d.metadata) for d in iter_documents(path, **kw)]


def test_txt_a_document_a_line_named_by_file_and_line_the_same_compressed(tmp_path):
    src = write(tmp_path / "notes.txt", "the cat sat\n\na dog ran\r\n   \nshe walked")  # blank lines counted, not kept
    assert docs_of(src) == [("notes.txt:1", "the cat sat", None), ("notes.txt:3", "a dog ran", None), ("notes.txt:5", "she walked", None)]
    with gzip.open(tmp_path / "notes.txt.gz", "wb") as f:
        f.write(src.read_bytes())
    assert docs_of(tmp_path / "notes.txt.gz") == docs_of(src)  # compressed or not: the same ids
    assert docs_of(src, limit=2) == docs_of(src)[:2]
    assert count_documents(src) == 5 and count_documents(tmp_path / "notes.txt.gz") is None  # lines; a .gz is not counted


def test_tsv_with_a_header_names_its_columns_and_without_one_is_the_sample_form(tmp_path):
    src = write(tmp_path / "c.tsv", "id\ttitle\ttext\tsource\tyear\nd1\tCats\tthe cat sat\tkjv\t1611\n\t\ta dog ran\t\t\n")
    assert docs_of(src) == [
        ("d1", "Cats the cat sat", {"title": "Cats", "source": "kjv", "year": "1611"}),  # the title before the text, and kept
        ("c.tsv:3", "a dog ran", None),  # an empty id: the file's and line's; empty cells left out
    ]
    assert count_documents(src) == 2  # the header is no document
    legacy = write(tmp_path / "s.tsv", "kjv\tin the beginning\nplain text alone\n")
    assert docs_of(legacy) == [("s.tsv:1", "in the beginning", {"source": "kjv"}), ("s.tsv:2", "plain text alone", None)]
    # the default index's sample: ids are its lines alone, as they always were
    assert [(d.id, d.metadata) for d in read_documents(legacy)] == [("1", {"source": "kjv"}), ("2", None)]


def test_jsonl_and_beir_corpus(tmp_path):
    src = write(
        tmp_path / "d.jsonl",
        json.dumps({"id": "a", "text": "the cat sat", "metadata": {"n": 1}, "lang": "en"})
        + "\n\n"
        + json.dumps({"id": 7, "text": "a dog ran"})
        + "\n"
        + json.dumps({"text": "she walked"})
        + "\n",
    )
    assert docs_of(src) == [
        ("a", "the cat sat", {"lang": "en", "n": 1}),  # any other key joins the metadata
        ("7", "a dog ran", None),
        ("d.jsonl:4", "she walked", None),
    ]
    beir = write(
        tmp_path / "corpus.jsonl",
        json.dumps({"_id": "4983", "title": "Microstructural development", "text": "Alterations of the architecture.", "metadata": {}})
        + "\n"
        + json.dumps({"_id": "5836", "title": "", "text": "Induction of myelodysplasia."})
        + "\n",
    )
    assert docs_of(beir) == [
        ("4983", "Microstructural development Alterations of the architecture.", {"title": "Microstructural development"}),
        ("5836", "Induction of myelodysplasia.", None),
    ]


def test_parquet_streamed_in_row_batches(tmp_path):
    pa = pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (the parquet extra)")
    import datetime

    import pyarrow.parquet as pq

    table = pa.table(
        {
            "id": [10, None, 12, 13, 14],
            "text": ["the cat sat", "a dog ran", "   ", "she walked", "he read"],
            "source": ["kjv", None, "x", "austen", "kjv"],
            "when": [datetime.date(2020, 1, d) for d in range(1, 6)],
        }
    )
    pq.write_table(table, tmp_path / "d.parquet", row_group_size=2)
    got = docs_of(tmp_path / "d.parquet", batch=2)  # three batches, one in memory at a time
    assert got == [
        ("10", "the cat sat", {"source": "kjv", "when": "2020-01-01"}),
        ("d.parquet:2", "a dog ran", {"when": "2020-01-02"}),  # no id: the file's and row's; a null cell left out
        ("13", "she walked", {"source": "austen", "when": "2020-01-04"}),  # row 3's blank text skipped
        ("14", "he read", {"source": "kjv", "when": "2020-01-05"}),
    ]
    assert count_documents(tmp_path / "d.parquet") == 5
    pq.write_table(pa.table({"body": ["x"]}), tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match=r"bad.parquet: no `text` column; its columns are \['body'\]"):
        list(iter_documents(tmp_path / "bad.parquet"))


def test_parquet_without_pyarrow_says_which_extra(tmp_path, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_pyarrow(name, *args, **kw):
        if name.startswith("pyarrow"):
            raise ImportError(name)
        return real(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    with pytest.raises(ValueError, match=r"reading Parquet needs pyarrow: pip install 'thoughtvec\[parquet\]'"):
        list(iter_documents(write(tmp_path / "d.parquet", "")))


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("d.jsonl", '{"text": "ok"}\n{"text": "a", \n', r"d.jsonl:2: not JSON \(Expecting property name"),
        ("d.jsonl", '{"text": "ok"}\n\n["a list"]\n', r"d.jsonl:3: not a JSON object"),
        ("d.jsonl", '{"id": "x"}\n', r"d.jsonl:1: text is missing"),
        ("d.jsonl", '{"text": 3}\n', r"d.jsonl:1: text is int"),
        ("d.jsonl", '{"text": "a", "id": [1]}\n', r"d.jsonl:1: id is list"),
        ("d.jsonl", '{"text": "a", "metadata": 5}\n', r"d.jsonl:1: metadata is int; it must be an object"),
        ("d.jsonl", '{"text": "a", "metadata": {"x": NaN}}\n', r"d.jsonl:1: metadata.x is nan"),
        ("d.jsonl", '{"text": "a\\ud800"}\n', r"d.jsonl:1: text holds a lone surrogate"),
        ("d.jsonl", '{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n{"id": "a", "text": "z"}\n', r"d.jsonl:3: id 'a' is already the id of the document at .*d.jsonl:1"),
        ("d.tsv", "id\ttext\na\tx\nb\ty\tz\n", r"d.tsv:3: 3 columns where the header \(line 1\) names 2"),
        ("d.tsv", "text\ttext\nx\ty\n", r"d.tsv:1: the header names a column twice"),
        ("d.txt", "fine\nstill fine\n", None),
        ("d.csv", "a,b\n", r"d.csv: unknown format .csv; use .txt, .tsv or .jsonl \(optionally .gz\) or .parquet"),
    ],
)  # fmt: skip
def test_a_malformed_line_is_refused_naming_file_and_line(tmp_path, name, text, message):
    src = write(tmp_path / name, text)
    if message is None:
        assert len(list(iter_documents(src))) == 2
        return
    with pytest.raises(ValueError, match=message):
        list(iter_documents(src))


def test_a_line_that_is_not_utf8_is_named(tmp_path):
    src = tmp_path / "d.txt"
    src.write_bytes(b"fine\nalso fine\nbad \xff byte\n")
    with pytest.raises(ValueError, match=r"d.txt:3: not UTF-8"):
        list(iter_documents(src))


def test_metadata_held_to_the_limits_given(tmp_path):
    src = write(tmp_path / "d.jsonl", json.dumps({"text": "a", "metadata": {"k": "v" * 100}}) + "\n")
    assert len(list(iter_documents(src))) == 1
    with pytest.raises(ValueError, match=r"d.jsonl:1: metadata is 108 bytes of UTF-8 JSON; the limit is 50 \(max_metadata_bytes\)"):
        list(iter_documents(src, metadata=MetadataLimits(max_bytes=50)))


def test_documents_are_read_as_they_are_needed(tmp_path):
    """A stream: the documents before a bad line come out before it is read (memory: a line at a time)."""
    src = write(tmp_path / "d.jsonl", "".join(json.dumps({"text": f"doc {i}"}) + "\n" for i in range(5)) + "{broken\n")
    it = iter_documents(src)
    assert [next(it).text for _ in range(5)] == [f"doc {i}" for i in range(5)]
    with pytest.raises(ValueError, match="d.jsonl:6"):
        next(it)
