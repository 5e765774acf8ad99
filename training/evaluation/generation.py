"""How well a bundle's decoders generate, on the sentences its training run held out (never trained on).

* ``reconstruct`` (the AAE): each held-out sentence decoded from its own vector: exact match (every word
  right) and corpus BLEU-4 against the sentence;
* ``next`` / ``previous`` (skip-thought): the neighbour of each held-out sentence in its passage decoded
  from the sentence's vector: BLEU-4 against the true neighbour, and the decoder's perplexity of the true
  neighbour (teacher forcing, ``<eos>`` included).

Against trivial baselines on the same sentences: ``copy`` (the input sentence itself as the output: the
identity for ``reconstruct``, an upper bound shown for scale), ``unigram`` (the training sentences' word
frequencies: its most frequent words as the output, and its perplexity of the references). References are
written in the decoder's words: a word it does not have is ``<unk>``, the word it would have to produce.

The held-out sentences are the training run's own validation documents: its corpus, ``holdout`` and ``seed``
from the bundle's provenance, split as the trainer splits (``IdCorpus.split``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from thoughtvec.service.bundle.format import Bundle, load_bundle
from thoughtvec.service.bundle.vocab import EOS, UNK
from thoughtvec.service.core.decoding import Decoder
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.training.train.data import IdCorpus, TokenCorpus

NEIGHBOUR = {"next": 1, "previous": -1}


def bleu(hypotheses: Sequence[Sequence[str]], references: Sequence[Sequence[str]], n: int = 4) -> float:
    """Corpus BLEU-n (Papineni et al., 2002), one reference each, 0–100: clipped n-gram precisions pooled over
    the corpus, geometric mean, brevity penalty; 0 when an order has no match (no smoothing)."""
    matches, totals = [0] * n, [0] * n
    hyp_len = ref_len = 0
    for hyp, ref in zip(hypotheses, references):
        hyp_len += len(hyp)
        ref_len += len(ref)
        for k in range(1, n + 1):
            h = Counter(tuple(hyp[i : i + k]) for i in range(len(hyp) - k + 1))
            r = Counter(tuple(ref[i : i + k]) for i in range(len(ref) - k + 1))
            matches[k - 1] += sum(min(c, r[g]) for g, c in h.items())
            totals[k - 1] += max(len(hyp) - k + 1, 0)
    if min(matches) == 0 or hyp_len == 0:
        return 0.0
    log_p = sum(math.log(m / t) for m, t in zip(matches, totals)) / n
    bp = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / hyp_len)
    return 100.0 * bp * math.exp(log_p)


def held_out(bundle: Bundle, corpus: str | None = None) -> tuple[TokenCorpus, np.ndarray, np.ndarray]:
    """The training corpus, and its training and held-out sentence indices (as the trainer split them)."""
    t = bundle.spec.training
    tc = t.get("train_config") or t["parts"][0]["train_config"]
    data = TokenCorpus.load(corpus or tc["corpus"], tc.get("limit_sentences") or None)
    ids = IdCorpus(np.zeros(len(data.words), np.int32), data.offsets, data.doc)  # the split reads documents only
    train, held = ids.split(tc["holdout"], tc["seed"])
    return data, train, held


def _words(data: TokenCorpus, i: int) -> list[str]:
    return data.words[data.offsets[i] : data.offsets[i + 1]]


class Unigram:
    """Word frequencies of the training sentences over the decoder's words (``<eos>`` once a sentence, add-one)."""

    def __init__(self, words: Sequence[str], data: TokenCorpus, train: np.ndarray):
        index = {w: i for i, w in enumerate(words)}
        counts = np.ones(len(words))
        counts[0] = 0  # <pad> is never a word
        for i in train:
            for w in _words(data, i):
                counts[index.get(w, index[UNK])] += 1
        counts[index[EOS]] += len(train)
        with np.errstate(divide="ignore"):
            self.logp = np.log(counts / counts.sum())  # (V,); <pad>: -inf
        self.index = index
        self.top = [words[i] for i in np.argsort(-counts) if words[i] not in (EOS, UNK)]

    def output(self, length: int) -> list[str]:
        return self.top[:length]


def evaluate_generation(
    bundle_dir: str | Path, sentences: int = 500, max_tokens: int | None = None, corpus: str | None = None, seed: int = 0
) -> dict:
    """Every task of the bundle's decoder on up to ``sentences`` held-out sentences, with the baselines."""
    bundle = load_bundle(bundle_dir)
    if bundle.spec.decoder is None:
        raise ValueError(f"{bundle_dir}: the bundle has no decoder (export it from a checkpoint that has one)")
    dec, enc = Decoder(bundle), Encoder(bundle)
    data, train, held = held_out(bundle, corpus)
    unigram = Unigram(dec.words, data, train)
    limit = min(max_tokens or dec.spec.max_tokens, dec.spec.max_tokens)
    rng = np.random.default_rng(seed)
    out: dict = {"bundle": bundle.name, "held_out_sentences": int(len(held)), "max_tokens": limit, "tasks": {}}
    for task in dec.tasks:
        step = NEIGHBOUR.get(task, 0)
        pairs = [
            (i, i + step) for i in held if 0 <= i + step < len(data) and data.doc[i + step] == data.doc[i] and len(_words(data, i + step))
        ]
        pairs = [pairs[k] for k in sorted(rng.choice(len(pairs), size=min(sentences, len(pairs)), replace=False))] if pairs else []
        if not pairs:
            raise ValueError(f"{bundle_dir}: no held-out sentence has a {task} sentence in its passage")
        out["tasks"][task] = _score_task(dec, enc, unigram, data, pairs, task, limit)
    return out


def _score_task(
    dec: Decoder, enc: Encoder, unigram: Unigram, data: TokenCorpus, pairs: list[tuple[int, int]], task: str, limit: int
) -> dict:
    sources = [_words(data, i) for i, _ in pairs]
    # references in the decoder's words, cut as training cut them (max_tokens counts <eos>)
    refs = [[w if w in unigram.index else UNK for w in _words(data, j)][: dec.spec.max_tokens - 1] for _, j in pairs]
    vectors = enc.encode([" ".join(s) for s in sources], dec.view, normalize=False)
    hyps: list[list[str]] = []
    for start in range(0, len(pairs), 64):
        hyps.extend(d.words for d in dec.sample(task, vectors[start : start + 64], limit))
    copies = [[w if w in unigram.index else UNK for w in s][: dec.spec.max_tokens - 1] for s in sources]
    mean_len = max(1, round(float(np.mean([len(r) for r in refs]))))
    res: dict[str, Any] = {
        "sentences": len(pairs),
        "decoder": {"bleu": bleu(hyps, refs), "exact_match": float(np.mean([h == r for h, r in zip(hyps, refs)]))},
        "copy": {"bleu": bleu(copies, refs), "exact_match": float(np.mean([c == r for c, r in zip(copies, refs)]))},
        "unigram": {"bleu": bleu([unigram.output(mean_len)] * len(refs), refs), "exact_match": 0.0},
        "examples": [
            {"input": " ".join(s), "reference": " ".join(r), "generated": " ".join(h)} for s, r, h in list(zip(sources, refs, hyps))[:5]
        ],
    }
    if task in NEIGHBOUR:  # perplexity of the true neighbour: the decoder given the vector, against the unigram model
        nll, uni, tokens = 0.0, 0.0, 0
        for vec, ref in zip(vectors, refs):
            ids = [unigram.index[w] for w in ref]
            nll -= dec.score(task, vec, ids)
            uni -= float(unigram.logp[ids + [unigram.index[EOS]]].sum())
            tokens += len(ids) + 1
        res["decoder"]["perplexity"] = math.exp(nll / tokens)
        res["unigram"]["perplexity"] = math.exp(uni / tokens)
    return res


def table(result: dict) -> str:
    """The figures as a Markdown table (one row per task and system)."""
    rows = ["| task | system | sentences | BLEU-4 | exact match | perplexity |", "|---|---|---|---|---|---|"]
    for task, r in result["tasks"].items():
        for system in ("decoder", "copy", "unigram"):
            f = r[system]
            ppl = f"{f['perplexity']:.1f}" if "perplexity" in f else "–"
            rows.append(f"| {task} | {system} | {r['sentences']} | {f['bleu']:.2f} | {f['exact_match']:.3f} | {ppl} |")
    return "\n".join(rows)
