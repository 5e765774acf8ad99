"""Mean-max attention autoencoder (Zhang et al., 2018; ../shared/papers/mean-max-attention-autoencoder.txt §3, §4.2).

Input: fixed pretrained word vectors plus sinusoidal positions (eq. 1-2), ``</S>`` appended.
Encoder (eq. 8-11): multi-head self-attention *without* a residual (so the width can grow from
d_w to d_m), layer norm, feed-forward with a residual, layer norm. Representation (eq. 12-14):
max and mean over the valid positions, concatenated. Decoder (eq. 15-20): masked self-attention
(no residual), LN, attention over the two-slot memory [mean, max] with a residual, LN,
feed-forward with a residual, LN; softmax over the output vocabulary (eq. 21); the objective
reconstructs the input (eq. 22). Ablations (Table 3): ``mean-aae`` and ``max-aae`` pool one way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from thoughtvec.service.bundle.format import TokenizerSpec, ViewSpec
from thoughtvec.service.bundle.tokenizer import tokenize
from thoughtvec.service.bundle.vocab import EOS_ID, UNK_ID
from thoughtvec.training.corpus.wordvecs import block_dims, describe, fixed_vocabulary, load_word_vectors
from thoughtvec.training.train.data import IdCorpus, TokenCorpus, pad_batch, vocabulary_from_counts
from thoughtvec.training.train.decoders import aae_decoder
from thoughtvec.training.train.families.base import ExportEncoder, Family, Prepared, TrainModel
from thoughtvec.training.train.nn import FactoredTable, length_mask, masked_max, masked_mean
from thoughtvec.training.train.plots import plot_memory_attention
from thoughtvec.training.train.softmax import OutputLayer

NEG = -1e9  # attention logit for masked keys (finite: no NaN when a row is fully masked)


@dataclass
class AAEConfig:
    pooling: str = "mean-max"  # mean-max | mean | max (Table 3)
    d_model: int = 256  # d_m (paper 2048): one epoch of the default corpus (~12k steps of 64) in ~50 min on one core
    d_ff: int = 512  # d_f (paper 4096)
    heads: int = 8  # l (paper 8)
    dropout: float = 0.1  # paper 0.5
    out_vocab: int = 20_000  # output softmax words (paper 21 583), specials not counted
    input_words: int = 150_000  # pretrained words the encoder can read (paper: all 2.2 M GloVe words)
    word_vectors: str = "glove-6b-50d"
    max_len: int = 40  # tokens per training sentence, </S> included
    num_sampled: int = 512  # sampled-softmax negatives; 0 = exact softmax
    sample_alpha: float = 0.75


def sinusoid(n: int, d: int) -> torch.Tensor:
    """Eq. 1-2: p_t[2i] = sin(t / 10000^(2i/d)), p_t[2i+1] = cos(...). (n, d)."""
    pos = torch.arange(n, dtype=torch.float32).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)[:, : d // 2]
    return pe


class MultiHead(nn.Module):
    """Eq. 3-7: heads = softmax(q K^T / sqrt(d_k)) V with per-head projections, concatenated (no W^O)."""

    def __init__(self, d_q: int, d_kv: int, d_model: int, heads: int, dropout: float):
        super().__init__()
        assert d_model % heads == 0, "d_model must be divisible by heads"
        self.h, self.dk = heads, d_model // heads
        self.q = nn.Linear(d_q, d_model)
        self.k = nn.Linear(d_kv, d_model)
        self.v = nn.Linear(d_kv, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(
        self, q: torch.Tensor, kv: torch.Tensor, key_mask: torch.Tensor, causal: bool = False, weights: list | None = None
    ) -> torch.Tensor:
        B, Tq, Tk = q.shape[0], q.shape[1], kv.shape[1]
        Q = self.q(q).view(B, Tq, self.h, self.dk).transpose(1, 2)  # (B, h, Tq, dk)
        K = self.k(kv).view(B, Tk, self.h, self.dk).transpose(1, 2)  # (B, h, Tk, dk)
        V = self.v(kv).view(B, Tk, self.h, self.dk).transpose(1, 2)
        s = Q @ K.transpose(-1, -2) / math.sqrt(self.dk)  # (B, h, Tq, Tk)
        allowed = key_mask[:, None, None, :]  # (B, 1, 1, Tk)
        if causal:
            allowed = allowed & torch.ones(Tq, Tk, dtype=torch.bool, device=q.device).tril()
        a = torch.softmax(s.masked_fill(~allowed, NEG), -1)
        if weights is not None:
            weights.append(a.detach())
        out = self.drop(a) @ V  # (B, h, Tq, dk)
        return out.transpose(1, 2).reshape(B, Tq, self.h * self.dk)  # (B, Tq, d_model)


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float):
        super().__init__()
        self.w1, self.w2, self.drop = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model), nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(self.drop(F.relu(self.w1(x))))


class FixedWords(nn.Module):
    table: torch.Tensor  # (V, d_w) buffer
    pe: torch.Tensor  # (max_positions, d_w) buffer
    """Pretrained vectors (not trained) + sinusoidal positions; ``</S>`` gets a trained vector."""

    def __init__(self, table: torch.Tensor, max_positions: int = 1024):
        super().__init__()
        self.register_buffer("table", table)  # (V, d_w)
        self.register_buffer("pe", sinusoid(max_positions, table.shape[1]))
        self.eos = nn.Parameter(torch.randn(table.shape[1]) * 0.1)
        self.lookup: nn.Module | None = None  # set at export: the same table, stored smaller (FactoredTable)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        e = self.lookup(ids) if self.lookup is not None else F.embedding(ids, self.table)  # (B, T, d_w)
        e = torch.where((ids == EOS_ID).unsqueeze(-1), self.eos, e)
        return e + self.pe[: ids.shape[1]]  # x_t = e_t + p_t


class AAEEncoder(nn.Module):
    """Eq. 8-14: (ids, lengths) → per-position states and the pooled vectors."""

    def __init__(self, words: FixedWords, cfg: AAEConfig):
        super().__init__()
        d_w = words.table.shape[1]
        self.words = words
        self.att = MultiHead(d_w, d_w, cfg.d_model, cfg.heads, cfg.dropout)
        self.ln1, self.ln2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.ff = FeedForward(cfg.d_model, cfg.d_ff, cfg.dropout)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x = self.words(ids)  # (B, T, d_w)
        mask = length_mask(lengths, ids.shape[1])
        a = self.ln1(self.drop(self.att(x, x, mask)))  # eq. 8-9: no residual
        h = self.ln2(self.drop(self.ff(a)) + a)  # eq. 10-11
        return h, masked_mean(h, mask), masked_max(h, mask)  # (B, T, d_m), eq. 13, eq. 12


class AAEDecoder(nn.Module):
    def __init__(self, words: FixedWords, cfg: AAEConfig):
        super().__init__()
        d_w = words.table.shape[1]
        self.words = words
        self.self_att = MultiHead(d_w, d_w, cfg.d_model, cfg.heads, cfg.dropout)
        self.mem_att = MultiHead(cfg.d_model, cfg.d_model, cfg.d_model, cfg.heads, cfg.dropout)
        self.ln1, self.ln2, self.ln3 = (nn.LayerNorm(cfg.d_model) for _ in range(3))
        self.ff = FeedForward(cfg.d_model, cfg.d_ff, cfg.dropout)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, prev_ids: torch.Tensor, lengths: torch.Tensor, memory: torch.Tensor, weights: list | None = None) -> torch.Tensor:
        y = self.words(prev_ids)  # (B, T, d_w): x_{t-1}, a zero start vector at t = 1
        return self.states(y, length_mask(lengths, prev_ids.shape[1]), memory, weights)

    def states(self, y: torch.Tensor, mask: torch.Tensor, memory: torch.Tensor, weights: list | None = None) -> torch.Tensor:
        """Embedded inputs y (B, T, d_w), valid positions (B, T), memory (B, slots, d_m) → states (B, T, d_m)."""
        a = self.ln1(self.drop(self.self_att(y, y, mask, causal=True)))  # eq. 15-16
        mem_mask = torch.ones(memory.shape[:2], dtype=torch.bool, device=memory.device)
        az = self.ln2(self.drop(self.mem_att(a, memory, mem_mask, weights=weights)) + a)  # eq. 17-18
        return self.ln3(self.drop(self.ff(az)) + az)  # eq. 19-20, (B, T, d_m)


class MeanMaxAAE(TrainModel):
    to_out: torch.Tensor  # (V_in,) buffer: input id → output id

    def __init__(self, cfg: AAEConfig, table: np.ndarray, out_counts: np.ndarray, out_of_input: np.ndarray):
        super().__init__()
        self.cfg = cfg
        words = FixedWords(torch.from_numpy(table))
        self.encoder = AAEEncoder(words, cfg)
        self.decoder = AAEDecoder(words, cfg)
        self.out = OutputLayer(cfg.d_model, len(out_counts), out_counts, cfg.num_sampled, cfg.sample_alpha, bias=True)  # eq. 21
        self.register_buffer("to_out", torch.from_numpy(out_of_input))  # input id → output id

    def memory(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        _, mean, mx = self.encoder(ids, lengths)
        slots = {"mean-max": [mean, mx], "mean": [mean], "max": [mx]}[self.cfg.pooling]
        return torch.stack(slots, 1)  # (B, slots, d_m): the decoder attends over [mean, max]

    def forward(self, batch: dict[str, torch.Tensor], zero_memory: bool = False) -> dict[str, torch.Tensor]:
        ids, lengths = batch["ids"], batch["lengths"]
        mem = self.memory(ids, lengths)
        if zero_memory:
            mem = torch.zeros_like(mem)
        h = self.decoder(batch["prev"], lengths, mem)  # (B, T, d_m)
        mask = length_mask(lengths, ids.shape[1])
        targets = self.to_out[ids]  # reconstruct the input itself (eq. 22)
        nll = self.out(h[mask], targets[mask])
        out = {"loss": nll / mask.sum(), "sentences": torch.tensor(ids.shape[0]), "tokens": mask.sum()}
        if not self.training:
            out["correct"] = (self.out.predict(h[mask]) == targets[mask]).sum()
        return out


class AAEExport(ExportEncoder):
    def __init__(self, encoder: AAEEncoder, pooling: str, d_model: int):
        super().__init__()
        self.encoder = encoder
        self.pooling = pooling
        views = {}
        if pooling == "mean-max":
            views["mean_max"] = ViewSpec(
                output="mean_max", dim=2 * d_model, description="[max, mean] pooled encoder states (eq. 14)", pooling="supervised"
            )
        if pooling in ("mean-max", "mean"):
            views["mean"] = ViewSpec(output="mean", dim=d_model, description="mean-pooled encoder states (eq. 13)", pooling="unsupervised")
        if pooling in ("mean-max", "max"):
            views["max"] = ViewSpec(output="max", dim=d_model, description="max-pooled encoder states (eq. 12)", pooling="supervised")
        self.views, self.default_view = views, next(iter(views))

    def forward(self, input_ids: torch.Tensor, lengths: torch.Tensor):
        _, mean, mx = self.encoder(input_ids, lengths)
        parts = {"mean_max": torch.cat([mx, mean], -1), "mean": mean, "max": mx}
        return tuple(parts[v] for v in self.views)


class AAEFamily(Family):
    name = "mean-max-aae"
    Config = AAEConfig
    presets = {"mean-max-aae": {"pooling": "mean-max"}, "mean-aae": {"pooling": "mean"}, "max-aae": {"pooling": "max"}}
    tokenizer = TokenizerSpec(append_eos=True)  # "</S>" appended to each sequence (§3.1)
    train_defaults = {"batch_size": 64, "lr": 2e-4, "clip": 5.0, "early_stop": 3}  # §4.2
    stop_metric = "reconstruction_accuracy"

    def prepare(self, cfg: AAEConfig, corpus: TokenCorpus) -> Prepared:
        counts = corpus.counts()
        out_vocab = vocabulary_from_counts(counts, cfg.out_vocab)
        vocab, _ = fixed_vocabulary(load_word_vectors(cfg.word_vectors), cfg.input_words, out_vocab.tokens)
        out_counts = np.array([counts.get(w, 0) for w in out_vocab.tokens], np.float64)
        out_counts[EOS_ID] = len(corpus)
        out_counts[UNK_ID] = sum(counts.values()) - out_counts[3:].sum()  # every token outside the output words
        to_out = np.array([out_vocab.index.get(w, UNK_ID) for w in vocab.tokens], np.int64)
        return Prepared(vocab, {"out_words": out_vocab.tokens, "out_counts": out_counts, "to_out": to_out})

    def collate(self, cfg: AAEConfig, data: IdCorpus, centres: np.ndarray) -> dict[str, torch.Tensor]:
        ids, lengths = pad_batch([data.sentence(i) for i in centres], cfg.max_len, eos=True)
        prev = np.zeros_like(ids)
        prev[:, 1:] = ids[:, :-1]  # teacher forcing: <pad> (a zero vector) w_1 .. w_N
        return {"ids": torch.from_numpy(ids), "lengths": torch.from_numpy(lengths), "prev": torch.from_numpy(prev)}

    def build(self, cfg: AAEConfig, prepared: Prepared) -> MeanMaxAAE:
        _, table = fixed_vocabulary(load_word_vectors(cfg.word_vectors), cfg.input_words, prepared.state["out_words"])
        if len(table) != len(prepared.vocab):
            raise ValueError("the word vectors changed since this model was prepared")
        return MeanMaxAAE(cfg, table, prepared.state["out_counts"], prepared.state["to_out"])

    @torch.no_grad()
    def validate(self, cfg, model, batches) -> dict[str, float]:
        nll, correct, tokens = 0.0, 0.0, 0.0
        for b in batches:
            out = model(b)
            nll += float(out["loss"]) * float(out["tokens"])
            correct += float(out["correct"])
            tokens += float(out["tokens"])
        return {"nll_per_token": nll / max(tokens, 1), "reconstruction_accuracy": correct / max(tokens, 1)}

    def export_encoder(self, cfgs, models, prepared, variant, **_):
        (cfg,), (model,) = cfgs, models
        words = model.encoder.words
        table = words.table.cpu().numpy()
        factored = FactoredTable(table, block_dims(cfg.word_vectors, table.shape[1]))
        if sum(b.numel() for b in factored.buffers()) < table.size:  # lossless, and smaller: GloVe ⊕ spaCy
            words.lookup = factored
        return AAEExport(model.encoder, cfg.pooling, cfg.d_model), prepared.vocab, {"_model": model, "_prepared": prepared}

    def export_decoder(self, cfgs, models, prepared):
        """The decoder that reconstructs a sentence from its pooled memory (eq. 15-21)."""
        return aae_decoder(cfgs[0], models[0], prepared)

    def describe(self, cfgs, variant) -> str:
        c = cfgs[0]
        return f"{'Mean-max' if c.pooling == 'mean-max' else c.pooling.capitalize()} attention autoencoder (d_m {c.d_model}) trained on the thoughtvec default corpus"

    def deviations(self, cfgs) -> list[str]:
        c = cfgs[0]
        vectors, _, joined = describe(c.word_vectors)
        out = [
            "Corpus: the ~14 M-word thoughtvec default corpus instead of the Toronto Book Corpus (70 M sentences).",
            f"Dimensions sized for CPU training: d_m {c.d_model}, d_f {c.d_ff}, {c.heads} heads (paper: 2048, 4096, 8); "
            f"the representation is {2 * c.d_model if c.pooling == 'mean-max' else c.d_model}-d (paper 4096).",
            f"Input words: {vectors}"
            + (" and stored as each part's distinct rows plus an index," if joined else ",")
            + f" the {c.input_words:,} most frequent words (plus any output-vocabulary word the vectors know), instead of GloVe "
            "300d with 2.2 M words; other words read as a zero vector (<unk>).",
            f"Output softmax over the {c.out_vocab:,} most frequent corpus words (paper 21 583).",
            f"Dropout {c.dropout} (paper 0.5): with a few epochs over ~17 M tokens the model is far from over-fitting (held-out reconstruction accuracy was still rising).",
            "</S> has a trained vector of the word-vector size (the pretrained vectors have none); the decoder's first input is a zero vector.",
            "The multi-head attention concatenates the heads with no output projection W^O, as eq. 4 writes it.",
            f"Training sentences are cut to {c.max_len} tokens (</S> included).",
            "Stopping: the paper's rule (until the held-out reconstruction accuracy stops improving; here after "
            "--early-stop validations without a better one), but also bounded by the run's epoch, step and time budget; "
            "the Training table's epochs and validation say which ended this run.",
        ]
        if c.num_sampled:
            out.append(
                f"Training used sampled softmax ({c.num_sampled} shared negatives per batch, unigram^{c.sample_alpha}, "
                "log-Q corrected); validation reports the exact NLL and the reconstruction accuracy (argmax of the full softmax)."
            )
        return out

    def card_sections(self, cfgs, report, bundle_dir) -> list[tuple[str, str]]:
        model, prepared = report.get("_model"), report.get("_prepared")
        if model is None or cfgs[0].pooling != "mean-max":
            return []
        examples = ["he ran his hand inside his coat , double-checking that the unopened letter was still there .",
                    "the lord is my shepherd ; i shall not want ."]  # fmt: skip
        rows = [memory_attention(model, prepared.vocab, s) for s in examples]
        plot_memory_attention(rows, bundle_dir / "memory_attention.png")
        return [
            (
                "Attention over [mean, max] (Figure 2)",
                "How much the decoder's mean-max attention layer (eq. 17) attends to each slot at each decoding step, "
                "averaged over heads, for two sentences (like the paper's Figure 2):\n\n![mean-max attention](memory_attention.png)",
            )
        ]


@torch.no_grad()
def memory_attention(model: MeanMaxAAE, vocab, sentence: str) -> tuple[list[str], np.ndarray]:
    """Debug helper (not in the bundle): the decoder's attention over the memory slots at each step.

    Returns the target tokens and a (T, slots) array, heads averaged — the paper's Figure 2."""
    toks = tokenize(sentence) + ["</S>"]
    ids = torch.tensor([vocab.ids(toks[:-1]) + [EOS_ID]])
    lengths = torch.tensor([ids.shape[1]])
    prev = torch.zeros_like(ids)
    prev[:, 1:] = ids[:, :-1]
    was = model.training
    model.eval()
    weights: list[torch.Tensor] = []
    model.decoder(prev, lengths, model.memory(ids, lengths), weights=weights)
    model.train(was)
    return toks, weights[0][0].mean(0).numpy()  # (h, T, slots) → (T, slots)


FAMILY = AAEFamily()
