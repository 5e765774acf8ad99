"""Vocabulary expansion (skip-thought §2.2): an un-regularised least-squares linear map
``f: V_w2v → V_rnn``, ``v' = W v``, fitted on the words both vocabularies share. Any word of the
pretrained vectors then gets an embedding in the encoder's space.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from thoughtvec.service.bundle.atomic import atomic_dir
from thoughtvec.service.bundle.format import BUNDLE_FILE, load_bundle
from thoughtvec.service.bundle.vocab import SPECIALS, Vocabulary
from thoughtvec.training.corpus.wordvecs import WordVectors

# Words of the paper's Table 3 (queries absent from its 20 000-word training vocabulary), plus a few
# of our own that a Bible/novel/news corpus is unlikely to train.
TABLE3_QUERIES = ["choreograph", "modulation", "vindicate", "neuronal", "screwy", "mykonos", "tupac",
                  "smartphone", "bitcoin", "quarantine", "algorithm", "skateboard"]  # fmt: skip


@dataclass
class ExpansionOptions:
    vectors: WordVectors
    words: int = 100_000  # expanded vocabulary: the N most frequent words of the pretrained vectors
    holdout: float = 0.1  # share of the shared words held out to measure the fit
    seed: int = 0


def fit_map(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares ``W`` (Ds, E) minimising ||x W - y||² (no regulariser, no bias: §2.2)."""
    w, *_ = np.linalg.lstsq(x.astype(np.float64), y.astype(np.float64), rcond=None)
    return w.astype(np.float32)


def fit_quality(pred: np.ndarray, true: np.ndarray) -> dict[str, float]:
    ss_res = float(((true - pred) ** 2).sum())
    ss_tot = float(((true - true.mean(0)) ** 2).sum())
    cos = (pred * true).sum(1) / (np.linalg.norm(pred, axis=1) * np.linalg.norm(true, axis=1) + 1e-12)
    return {"r2": 1.0 - ss_res / max(ss_tot, 1e-12), "mean_cosine": float(cos.mean())}


def nearest_words(queries: list[str], q_vecs: np.ndarray, words: list[str], table: np.ndarray, k: int = 5) -> dict[str, list[str]]:
    tn = table / (np.linalg.norm(table, axis=1, keepdims=True) + 1e-12)
    out = {}
    for w, v in zip(queries, q_vecs):
        sims = tn @ (v / (np.linalg.norm(v) + 1e-12))
        best = [words[i] for i in np.argsort(-sims)[: k + 1] if words[i] != w][:k]
        out[w] = best
    return out


def expand(trained: np.ndarray, vocab: Vocabulary, opts: ExpansionOptions) -> tuple[np.ndarray, list[str], np.ndarray, dict]:
    """Fit the map; return (W (Ds, E), extra words, their source vectors (Vx, Ds), report)."""
    wv = opts.vectors
    shared = [w for w in vocab.tokens if w not in SPECIALS and w in wv]
    if len(shared) < wv.dim + 1:
        raise ValueError(f"only {len(shared)} words are shared with {wv.source}: too few to fit a {wv.dim}-d map")
    x = np.stack([wv.vectors[wv.index[w]] for w in shared])
    y = np.stack([trained[vocab.index[w]] for w in shared])
    rng = np.random.default_rng(opts.seed)
    perm = rng.permutation(len(shared))
    n_ho = max(1, int(len(shared) * opts.holdout))
    ho, tr = perm[:n_ho], perm[n_ho:]
    held_out = fit_quality(x[ho] @ fit_map(x[tr], y[tr]), y[ho])
    w = fit_map(x, y)  # the final map uses every shared word
    in_sample = fit_quality(x @ w, y)
    extra = [t for t in wv.words[: opts.words] if t not in vocab.index and not any(c.isspace() for c in t)]
    source = np.stack([wv.vectors[wv.index[t]] for t in extra]) if extra else np.zeros((0, wv.dim), np.float32)

    # Table 3: nearest neighbours of words outside the training vocabulary, in the encoder's space
    all_words = vocab.tokens + extra
    table = np.concatenate([trained, source @ w]) if extra else trained
    queries = [q for q in TABLE3_QUERIES if q in wv and q not in vocab.index][:8]
    q_vecs = np.stack([wv.vectors[wv.index[q]] @ w for q in queries]) if queries else np.zeros((0, w.shape[1]))
    report = {
        "source": wv.source,
        "source_dim": wv.dim,
        "shared_words": len(shared),
        "held_out_words": int(n_ho),
        "held_out_fit": held_out,
        "in_sample_fit": in_sample,
        "trained_words": len(vocab),
        "expanded_words": len(extra),
        "total_words": len(all_words),
        "neighbours": nearest_words(queries, q_vecs, all_words[3:], table[3:]),
    }
    return w, extra, source, report


def reexpand(bundle_dir: str | Path, out_dir: str | Path, opts: ExpansionOptions) -> dict[str, dict]:
    """A skip-thought bundle with its vocabulary expansion refitted from ``opts.vectors``, without
    its checkpoint: every part's trained embeddings are in the graph, so the §2.2 map is fitted
    again on them (:func:`expand`), and the graph's expansion initializers (``embs.<i>.source`` and
    ``embs.<i>.mapping``) and the vocabulary are replaced; trained words read exactly as before.
    Written to ``out_dir`` (replaced atomically), with the source vectors stored whole and the
    original's card, post-processing maps and head: for a comparison on dev, not a bundle to ship.
    Returns each part's fit report."""
    bundle = load_bundle(bundle_dir)
    vocab_spec = bundle.spec.vocabulary
    if vocab_spec is None or bundle.vocab is None:
        raise ValueError(f"{bundle_dir}: no word vocabulary to expand (its tokenizer is {bundle.spec.tokenizer.kind})")
    model = onnx.load(bundle.onnx_path)
    inits = {i.name: i for i in model.graph.initializer}

    def find(name: str):  # float16 bundles store ``<name>__fp16`` and cast it in the graph
        return next((inits[n] for n in (name, f"{name}__fp16") if n in inits), None)

    n_trained = vocab_spec.trained_size
    vocab = Vocabulary(bundle.vocab.tokens[:n_trained])
    reports, extra, part = {}, None, 0
    while (trained := find(f"embs.{part}.trained")) is not None:
        mapping, source = find(f"embs.{part}.mapping"), find(f"embs.{part}.source")
        if mapping is None:
            raise ValueError(f"{bundle_dir}: part {part} has no vocabulary expansion to refit")
        w, extra, src, rep = expand(numpy_helper.to_array(trained).astype(np.float32), vocab, opts)
        for init, value in ((mapping, w), (source, src)):  # combine-skip's second part reads the first part's source
            if init is not None:  # in the initializer's own dtype (float16 or float32)
                dtype = onnx.helper.tensor_dtype_to_np_dtype(init.data_type)
                init.CopyFrom(numpy_helper.from_array(value.astype(dtype), init.name))
        reports[f"embs.{part}"] = rep
        part += 1
    if extra is None:
        raise ValueError(f"{bundle_dir}: no skip-thought word embeddings (embs.<i>.trained) in its graph")
    spec = json.loads((bundle.path / BUNDLE_FILE).read_text(encoding="utf-8"))
    spec["vocabulary"]["size"] = n_trained + len(extra)
    with atomic_dir(out_dir) as tmp:
        for f in bundle.path.iterdir():
            if f.is_file() and f.name not in (BUNDLE_FILE, bundle.spec.onnx.file, vocab_spec.file):
                shutil.copy2(f, tmp / f.name)
        onnx.save(model, tmp / bundle.spec.onnx.file)
        Vocabulary(vocab.tokens + extra).save(tmp / vocab_spec.file)
        (tmp / BUNDLE_FILE).write_text(json.dumps(spec, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return reports
