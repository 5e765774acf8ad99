"""Vocabulary expansion (§2.2): the least-squares map recovers words it never saw."""

import numpy as np
import pytest

from thoughtvec.paths import MODELS
from thoughtvec.service.bundle.vocab import Vocabulary
from thoughtvec.training.corpus.wordvecs import WordVectors
from thoughtvec.training.train.expansion import ExpansionOptions, expand, reexpand


def test_map_recovers_a_held_out_word():
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(300)]
    src = rng.standard_normal((300, 10)).astype(np.float32)
    true_map = rng.standard_normal((10, 6)).astype(np.float32)
    vocab = Vocabulary.from_words(words[:200])  # the encoder was trained on the first 200 words only
    trained = np.zeros((len(vocab), 6), np.float32)
    for w in words[:200]:
        trained[vocab.index[w]] = src[words.index(w)] @ true_map + 0.01 * rng.standard_normal(6)
    wv = WordVectors(words, src, "synthetic")
    w, extra, source, report = expand(trained, vocab, ExpansionOptions(wv, words=300))
    assert extra == words[200:]
    assert report["held_out_fit"]["r2"] > 0.99 and report["held_out_fit"]["mean_cosine"] > 0.99
    held_out_word = words.index("w250")  # never in the training vocabulary
    np.testing.assert_allclose(src[held_out_word] @ w, src[held_out_word] @ true_map, atol=0.02)
    assert report["total_words"] == len(vocab) + 100


def test_text_vector_file(tmp_path):
    from thoughtvec.training.corpus.wordvecs import load_word_vectors

    p = tmp_path / "vecs.txt"
    p.write_text("3 2\nthe 0.1 0.2\ncat 0.3 0.4\nthe 9 9\ndog 0.5 0.6\n")  # word2vec header, a duplicate
    wv = load_word_vectors(str(p))
    assert wv.words == ["the", "cat", "dog"] and wv.dim == 2
    np.testing.assert_allclose(wv.vectors[0], [0.1, 0.2])


def test_reexpand_refuses_a_bundle_without_a_word_vocabulary(tmp_path):
    bundle = MODELS / "all-minilm-l6-v2"  # hf-tokenizers: its tokenizer file holds the vocabulary
    if not (bundle / "model.onnx").exists():
        pytest.skip("the MiniLM bundle is not in this checkout")
    with pytest.raises(ValueError, match="no word vocabulary to expand"):
        reexpand(bundle, tmp_path / "x", ExpansionOptions(WordVectors(["a", "b"], np.eye(2, dtype=np.float32), "synthetic"), words=2))
    assert not (tmp_path / "x").exists()
