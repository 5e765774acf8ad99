"""Invertible decoders (Tang & de Sa, 2019; ../shared/papers/invertible-decoders.txt §3, §3.4, appendix A-C).

Encoder f_en: a bidirectional GRU over fixed pretrained word vectors (missing words: zero
vectors); in training its last states form z ∈ R^{2d}. Decoder f_de, invertible by design:
``linear`` x = W z with W (dim_w × 2d) kept row-orthonormal by W ← (1+β)W − β(WWᵀ)W after each step
(so f_de⁻¹(x) = Wᵀx); ``bijection`` x = W g(z) with g an additive coupling (NICE: y1 = z1,
y2 = z2 + m(z1)), g⁻¹ exact. Objective (§3.1): predict the words of the next sentence from x by
negative sampling against the fixed word vectors, averaged over the next sentence's words.

Test time (§3.4, appendix C): z_en pools the encoder's states; z_de applies f_de⁻¹ to each word
vector of the sentence, then pools. Unsupervised views: mean pooling with the top principal
component removed (estimated at export on corpus sentences, baked into the graph), and their
sum z = z_en + z_de. Supervised views: [max, mean, min] pooling of each, and their concatenation.

Beyond the paper, ``de-sif`` pools z_de with SIF weights a/(a + p(w)) (Arora et al. 2017, a = 1e-3,
p from the training corpus's word counts) before its first PC is removed: z_de is a map of the
word vectors, so the weighting that makes word averages good sentence vectors applies to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from thoughtvec.service.bundle import postprocess
from thoughtvec.service.bundle.format import TokenizerSpec, ViewSpec
from thoughtvec.service.bundle.tokenizer import tokenize
from thoughtvec.service.bundle.vocab import UNK_ID, Vocabulary
from thoughtvec.training.corpus.wordvecs import block_dims, describe, fixed_vocabulary, load_word_vectors
from thoughtvec.training.train.data import IdCorpus, TokenCorpus, corpus_sample, pad_batch, sif_weights, word_counts
from thoughtvec.training.train.families.base import ExportEncoder, Family, Prepared, TrainModel
from thoughtvec.training.train.nn import FactoredTable, GRUStates, length_mask, masked_max, masked_mean, masked_min
from thoughtvec.training.train.plots import plot_singular_values


@dataclass
class InvertibleConfig:
    decoder: str = "linear"  # linear | bijection
    hidden: int = 512  # d, per direction (paper 1200)
    coupling_hidden: int = 512  # width of the coupling MLP m
    input_words: int = 150_000  # pretrained words the model reads (paper: fastText's vocabulary)
    word_vectors: str = "glove-6b-50d"  # dim_w = their dimension (paper: fastText 300d)
    negatives: int = 5  # K negatives per target word
    noise_alpha: float = 0.75  # unigram^0.75 noise (§3.1)
    beta: float = 0.01  # orthonormal regularisation step (§3.3.1)
    max_len: int = 40


class Coupling(nn.Module):
    """NICE additive coupling on R^{2d}: y1 = z1, y2 = z2 + m(z1); inverse z2 = y2 − m(y1)."""

    def __init__(self, d: int, hidden: int):
        super().__init__()
        self.d = d
        first, last = nn.Linear(d, hidden), nn.Linear(hidden, d)
        self.m = nn.Sequential(first, nn.ReLU(), last)
        for lin in (first, last):
            nn.init.orthogonal_(lin.weight)
            nn.init.zeros_(lin.bias)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        z1, z2 = z[..., : self.d], z[..., self.d :]
        return torch.cat([z1, z2 + self.m(z1)], -1)

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        y1, y2 = y[..., : self.d], y[..., self.d :]
        return torch.cat([y1, y2 - self.m(y1)], -1)


class InvertibleDecoder(nn.Module):
    """f_de(z) = W g(z) (g = identity for the linear decoder); f_de⁻¹(x) = g⁻¹(Wᵀ x) on W's row space."""

    def __init__(self, dim_w: int, dim_z: int, coupling: Coupling | None):
        super().__init__()
        self.W = nn.Parameter(torch.empty(dim_w, dim_z))
        nn.init.orthogonal_(self.W)  # orthonormal rows from the start (appendix A)
        self.g = coupling

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        y = self.g(z) if self.g is not None else z
        return y @ self.W.t()  # (.., dim_w)

    def inverse(self, x: torch.Tensor) -> torch.Tensor:
        u = x @ self.W  # (.., 2d): Wᵀx
        return self.g.inverse(u) if self.g is not None else u

    @torch.no_grad()
    def orthonormalise(self, beta: float) -> None:
        """§3.3.1 (Cissé et al., 2017): W ← (1+β)W − β(WWᵀ)W pulls WWᵀ towards I."""
        W = self.W
        W.copy_((1 + beta) * W - beta * (W @ W.t()) @ W)


class FixedVectors(nn.Module):
    table: torch.Tensor  # (V, dim_w) buffer

    def __init__(self, table: np.ndarray):
        super().__init__()
        self.register_buffer("table", torch.from_numpy(table))  # (V, dim_w), not trained

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return F.embedding(ids, self.table)


class InvertibleModel(TrainModel):
    noise: torch.Tensor  # (V,) buffer: the negative-sampling distribution

    def __init__(self, cfg: InvertibleConfig, table: np.ndarray, noise: np.ndarray):
        super().__init__()
        self.cfg = cfg
        self.words = FixedVectors(table)
        self.encoder = GRUStates(table.shape[1], cfg.hidden, bidirectional=True)
        coupling = Coupling(cfg.hidden, cfg.coupling_hidden) if cfg.decoder == "bijection" else None
        self.decoder = InvertibleDecoder(table.shape[1], 2 * cfg.hidden, coupling)
        self.register_buffer("noise", torch.from_numpy(noise.astype(np.float32)), persistent=False)

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        _, z = self.encoder(self.words(batch["ids"]), batch["lengths"])  # (B, 2d): last states
        x = self.decoder(z)  # (B, dim_w)
        tgt, tlen = batch["next"], batch["next_len"]  # (B, T) word ids of s_{i+1} known to the vectors
        mask = length_mask(tlen, tgt.shape[1])  # (B, T)
        pos = (self.words(tgt) @ x.unsqueeze(-1)).squeeze(-1)  # (B, T): x · v_wj
        neg_ids = torch.multinomial(self.noise, tgt.numel() * self.cfg.negatives, replacement=True).view(*tgt.shape, -1)
        neg = torch.einsum("btkd,bd->btk", self.words(neg_ids), x)  # (B, T, K): x · v_wk
        ll = F.logsigmoid(pos) + F.logsigmoid(-neg).sum(-1)  # §3.1, per target word
        per_sentence = (ll * mask).sum(1) / tlen.clamp(min=1)  # averaged over the next sentence's words
        return {"loss": -per_sentence.mean(), "sentences": torch.tensor(tgt.shape[0]), "tokens": mask.sum()}

    def after_step(self) -> None:
        self.decoder.orthonormalise(self.cfg.beta)


class InvertibleExport(ExportEncoder):
    """All six views in one graph; the top principal components are constants (B, ·) → (B, ·)."""

    pc_en: torch.Tensor  # (2d,) buffers: the top principal component removed from each view
    pc_de: torch.Tensor
    pc_de_sif: torch.Tensor
    sif: torch.Tensor  # (V,) buffer

    def __init__(self, model: InvertibleModel, words: nn.Module, sif: torch.Tensor):
        """``words``: the lookup the graph reads (the trained table, or more words of the same vectors);
        ``sif``: (V,) SIF weight per id of that lookup."""
        super().__init__()
        self.words, self.encoder, self.decoder = words, model.encoder, model.decoder
        dz = 2 * model.cfg.hidden
        self.register_buffer("pc_en", torch.zeros(dz))
        self.register_buffer("pc_de", torch.zeros(dz))
        self.register_buffer("pc_de_sif", torch.zeros(dz))
        self.register_buffer("sif", sif)
        u = "unsupervised"
        self.views = {
            "ensemble": ViewSpec(output="ensemble", dim=dz, pooling=u, description="z = z_en + z_de: mean pooling, top PC removed from each (§3.4)"),
            "en": ViewSpec(output="en", dim=dz, pooling=u, description="z_en: mean of the encoder's states, top PC removed"),
            "de": ViewSpec(output="de", dim=dz, pooling=u, description="z_de: mean of f_de⁻¹(word vectors), top PC removed"),
            "de-sif": ViewSpec(output="de_sif", dim=dz, pooling=u, description="z_de with SIF weights a/(a+p(w)), a = 1e-3, top PC removed (not in the paper)"),
            "ensemble-supervised": ViewSpec(output="ensemble_supervised", dim=6 * dz, pooling="supervised", description="[en-supervised, de-supervised] (appendix C)"),
            "en-supervised": ViewSpec(output="en_supervised", dim=3 * dz, pooling="supervised", description="[max, mean, min] of the encoder's states"),
            "de-supervised": ViewSpec(output="de_supervised", dim=3 * dz, pooling="supervised", description="[max, mean, min] of f_de⁻¹(word vectors)"),
        }  # fmt: skip
        self.default_view = "ensemble"

    def states(self, input_ids: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        v = self.words(input_ids)  # (B, T, dim_w)
        h_en, _ = self.encoder(v, lengths)  # (B, T, 2d)
        h_de = self.decoder.inverse(v)  # (B, T, 2d): f_de⁻¹ of each word vector
        return h_en, h_de, length_mask(lengths, input_ids.shape[1])

    def sif_mean(self, h: torch.Tensor, input_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B, T, H) → (B, H): Σ_t s_t h_t / Σ_t s_t over valid positions, s = SIF weight of the word."""
        return masked_mean(h * self.sif[input_ids].unsqueeze(-1), mask) / masked_mean(self.sif[input_ids].unsqueeze(-1), mask).clamp(
            min=1e-12
        )

    def forward(self, input_ids: torch.Tensor, lengths: torch.Tensor):
        h_en, h_de, mask = self.states(input_ids, lengths)
        mean_en, mean_de = masked_mean(h_en, mask), masked_mean(h_de, mask)
        sif_de = self.sif_mean(h_de, input_ids, mask)

        def drop(x, pc):  # remove the top PC (Arora et al.)
            return x - (x @ pc).unsqueeze(-1) * pc

        z_en, z_de = drop(mean_en, self.pc_en), drop(mean_de, self.pc_de)
        sup_en = torch.cat([masked_max(h_en, mask), mean_en, masked_min(h_en, mask)], -1)
        sup_de = torch.cat([masked_max(h_de, mask), mean_de, masked_min(h_de, mask)], -1)
        return z_en + z_de, z_en, z_de, drop(sif_de, self.pc_de_sif), torch.cat([sup_en, sup_de], -1), sup_en, sup_de


FREQUENT_CORPUS_WORDS = 50_000  # training reads these corpus words too, where the vectors know them


def input_vocabulary(cfg: InvertibleConfig, trained: np.ndarray, vocab: Vocabulary, words: int,
                     counts: np.ndarray) -> tuple[Vocabulary, np.ndarray]:  # fmt: skip
    """The vocabulary the exported graph reads, and its (V, dim_w) table: the ``words`` most frequent words
    of the model's fixed vectors plus the corpus's frequent words that training read.

    Both encoders read fixed word vectors, never trained embeddings, so the graph may read other words
    than training did, with no retraining:

    * ``words`` ≤ 0: the trained vocabulary as it is;
    * more than training read (``cfg.input_words``): the trained vocabulary, its ids unchanged, plus the
      most frequent words of the same vectors that it lacks; those are then as known as trained words
      (the paper gives every word its fastText vector and zeros only the words fastText lacks, appendix A);
    * fewer: the trained vocabulary cut to its first ``words`` (the vectors' most frequent) and the
      :data:`FREQUENT_CORPUS_WORDS` most frequent corpus words among the rest (``counts``: training's
      corpus counts per id), in training's order; the words cut read as ``<unk>``. This keeps a bundle
      within its size when the vectors are wide.
    """
    if words <= 0:
        return vocab, trained
    if words < cfg.input_words:
        keep = np.zeros(len(vocab), bool)
        keep[: 3 + words] = True  # the specials and the vectors' most frequent words
        top = np.argsort(-counts, kind="stable")[:FREQUENT_CORPUS_WORDS]
        keep[top[counts[top] > 0]] = True
        ids = np.flatnonzero(keep)
        return Vocabulary([vocab.tokens[i] for i in ids]), trained[ids]
    vectors = load_word_vectors(cfg.word_vectors)
    known = set(vocab.tokens)
    extra = [w for w in vectors.words[:words] if w not in known and not any(c.isspace() for c in w)]
    rows = [vectors.index[w] for w in vocab.tokens[3:]]
    if not np.array_equal(vectors.vectors[rows], trained[3:]):
        raise ValueError(f"the word vectors {cfg.word_vectors} changed since this model was trained")
    return Vocabulary(list(vocab.tokens) + extra), np.concatenate([trained, vectors.vectors[[vectors.index[w] for w in extra]]])


def _word_vectors_line(c: InvertibleConfig) -> str:
    what, dim, joined = describe(c.word_vectors)
    if joined:
        return (
            f"Word vectors: {what} (the {c.input_words:,} most frequent words of the first "
            f"plus frequent corpus words), instead of fastText 300d; so dim_w = {dim} and W is {dim} × 2d. The table is stored "
            "as the distinct rows of each part plus an index (lossless; spaCy maps many words onto one vector, and a word a "
            "later part lacks reads zeros there)."
        )
    return (
        f"Word vectors: {what} (the {c.input_words:,} most frequent words plus frequent corpus words the vectors know), "
        f"instead of fastText 300d; so dim_w = {dim} and W is {dim} × 2d."
    )


class InvertibleFamily(Family):
    name = "invertible-decoder"
    Config = InvertibleConfig
    presets = {"invertible-linear": {"decoder": "linear"}, "invertible-bijection": {"decoder": "bijection"}}
    tokenizer = TokenizerSpec(append_eos=False)  # word vectors only; an empty input is the zero vector
    needs_neighbours = (0, 1)  # (s_i, s_{i+1}) pairs, never across documents
    train_defaults = {"batch_size": 128, "lr": 5e-4, "clip": 10.0}  # appendix A: Adam 5e-4, clipping

    def prepare(self, cfg: InvertibleConfig, corpus: TokenCorpus) -> Prepared:
        counts = corpus.counts()
        frequent = [w for w, _ in counts.most_common(FREQUENT_CORPUS_WORDS)]
        vocab, _ = fixed_vocabulary(load_word_vectors(cfg.word_vectors), cfg.input_words, frequent)
        freq = np.array([counts.get(w, 0) for w in vocab.tokens], np.float64)
        freq[:3] = 0.0  # never sample specials as negatives
        return Prepared(vocab, {"counts": freq})

    def collate(self, cfg: InvertibleConfig, data: IdCorpus, centres: np.ndarray) -> dict[str, torch.Tensor]:
        ids, lengths = pad_batch([data.sentence(i) for i in centres], cfg.max_len, eos=False)
        known = [s[s > UNK_ID] for s in (data.sentence(i + 1) for i in centres)]  # words the vectors know
        nxt, nlen = pad_batch(known, cfg.max_len, eos=False)
        return {
            "ids": torch.from_numpy(ids),
            "lengths": torch.from_numpy(lengths),
            "next": torch.from_numpy(nxt),
            "next_len": torch.from_numpy(nlen),
        }

    def build(self, cfg: InvertibleConfig, prepared: Prepared) -> InvertibleModel:
        frequent = prepared.vocab.tokens[3:]
        _, table = fixed_vocabulary(load_word_vectors(cfg.word_vectors), cfg.input_words, frequent)
        if len(table) != len(prepared.vocab):
            raise ValueError("the word vectors changed since this model was prepared")
        if 2 * cfg.hidden < table.shape[1]:
            raise ValueError(
                f"2·hidden ({2 * cfg.hidden}) must be at least the word-vector size ({table.shape[1]}) for W to have orthonormal rows"
            )
        noise = prepared.state["counts"] ** cfg.noise_alpha
        return InvertibleModel(cfg, table, noise / noise.sum())

    def max_input_tokens(self, cfg) -> int:
        return 128

    @torch.no_grad()
    def validate(self, cfg, model, batches) -> dict[str, float]:
        """The negative-sampling objective (per sentence pair) on held-out pairs, and how far W is from orthonormal rows."""
        losses = [float(model(b)["loss"]) for b in batches]
        W = model.decoder.W
        ortho = float((W @ W.t() - torch.eye(W.shape[0], device=W.device)).abs().max())
        return {"ns_loss": float(np.mean(losses)), "max_abs_WWt_minus_I": ortho}

    def export_encoder(self, cfgs, models, prepared, variant, corpus: str = "", pc_sample: int = 20_000, input_words: int = 0, **_):
        """The graph of every view; ``input_words`` > 0 lets it read that many of the most frequent words of
        its pretrained vectors besides the trained vocabulary, or fewer (:func:`input_vocabulary`)."""
        (cfg,), (model,) = cfgs, models
        vocab, table = input_vocabulary(cfg, model.words.table.cpu().numpy(), prepared.vocab, input_words, prepared.state["counts"])
        sif = torch.from_numpy(sif_weights(vocab.tokens, word_counts(Path(corpus)))) if corpus else torch.ones(len(vocab))
        words: nn.Module = FixedVectors(table)
        factored = FactoredTable(table, block_dims(cfg.word_vectors, table.shape[1]))
        if sum(b.numel() for b in factored.buffers()) < table.size:  # lossless, and smaller: GloVe ⊕ spaCy
            words = factored
        enc = InvertibleExport(model, words, sif).eval()
        sents = corpus_sample(corpus, pc_sample) if corpus else []
        means: dict[str, list[np.ndarray]] = {"en": [], "de": [], "de_sif": []}
        with torch.no_grad():
            for start in range(0, len(sents), 256):
                ids = [vocab.ids(tokenize(s))[: cfg.max_len] or [UNK_ID] for s in sents[start : start + 256]]
                x, lengths = (torch.from_numpy(a) for a in pad_batch([np.asarray(i) for i in ids], cfg.max_len, eos=False))
                h_en, h_de, mask = enc.states(x, lengths)
                means["en"].append(masked_mean(h_en, mask).numpy())
                means["de"].append(masked_mean(h_de, mask).numpy())
                means["de_sif"].append(enc.sif_mean(h_de, x, mask).numpy())
        if sents:
            for view, buf in (
                ("en", enc.pc_en),
                ("de", enc.pc_de),
                ("de_sif", enc.pc_de_sif),
            ):  # Arora et al.: the first, uncentred, component
                buf.copy_(torch.from_numpy(postprocess.fit(np.concatenate(means[view]), center=False, k=1).components[0]))
        sv = torch.linalg.svdvals(model.decoder.W.detach().double()).numpy()
        z = torch.randn(256, 2 * cfg.hidden)
        with torch.no_grad():
            inv_err = float((model.decoder.g.inverse(model.decoder.g(z)) - z).abs().max()) if model.decoder.g else 0.0
        report = {
            "singular_values": {
                "min": float(sv.min()),
                "max": float(sv.max()),
                "mean": float(sv.mean()),
                "all": [round(float(s), 5) for s in sv],
            },
            "pc_sentences": len(sents),
            "input_words": {"trained": len(prepared.vocab), "read": len(vocab), "cut_to": input_words},
            "inverse_max_abs_err": inv_err,
        }
        return enc, vocab, report

    def export_decoder(self, cfgs, models, prepared):
        """None: this decoder maps a sentence vector to one point in word-vector space (a bag of words, scored
        against every word), not to a sequence of words, so it generates no sentence; bundles carry none."""
        return None

    def describe(self, cfgs, variant) -> str:
        c = cfgs[0]
        kind = "bijection+linear" if c.decoder == "bijection" else "linear"
        return (
            f"Invertible-decoder model ({kind} decoder, bi-GRU 2×{c.hidden}) trained on the thoughtvec default corpus; views z_en, z_de, z"
        )

    def deviations(self, cfgs) -> list[str]:
        c = cfgs[0]
        return [
            "Corpus: the ~14 M-word thoughtvec default corpus instead of BookCorpus / UMBC / Amazon (74–151 M sentences).",
            _word_vectors_line(c),
            f"Encoder: bi-GRU with d = {c.hidden} per direction (paper 1200).",
            f"Negative sampling with K = {c.negatives} negatives per target word (the paper does not give K).",
            "The top principal component for post-processing is estimated at export on a sample of training-corpus "
            "sentences and stored in the graph (the paper estimates it per evaluation set).",
            f"Training sentences are cut to {c.max_len} tokens.",
            "Training time: one or two epochs on a 2-core CPU (see Training; paper: 3.5–9 hours on a GPU over far more data).",
            "The `de-sif` view is ours, not the paper's: z_de pooled with SIF weights a/(a + p(w)) (Arora et al. 2017, "
            "a = 1e-3, p from the training corpus), its first PC removed.",
        ] + (
            ["The bijection is a single additive coupling layer (m: d → " + str(c.coupling_hidden) + " → d, ReLU)."]
            if c.decoder == "bijection"
            else []
        )

    def card_sections(self, cfgs, report, bundle_dir) -> list[tuple[str, str]]:
        sv = report.get("singular_values")
        if not sv:
            return []
        plot_singular_values(sv["all"], bundle_dir / "singular_values.png")
        md = (f"All {len(sv['all'])} singular values of W after training: min {sv['min']:.4f}, max {sv['max']:.4f}, "
              f"mean {sv['mean']:.4f} (§3.3.1: they should be close to 1, so f_de⁻¹(x) = Wᵀx inverts f_de on W's row space).\n\n"
              "![singular values of W](singular_values.png)")  # fmt: skip
        if cfgs[0].decoder == "bijection":
            md += f"\n\nBijection check: max |g⁻¹(g(z)) − z| = {report['inverse_max_abs_err']:.2e} on 256 random z."
        sections = [("Decoder W", md)]
        words = report.get("input_words")
        if words and words["read"] > words["trained"]:
            sections.append(("Input vocabulary", (
                f"Training read {words['trained']:,} words; the graph reads {words['read']:,}: the trained ones plus the most "
                f"frequent words of the same fixed vectors ({cfgs[0].word_vectors}) that training did not read "
                "(`thoughtvec export --input-words`). No embedding is trained in this family, so a word the vectors "
                "know is as known to both encoders as a trained one, and the paper reads every word of fastText. "
                "`vocabulary.trained_size` in bundle.json counts the trained ones.")))  # fmt: skip
        elif words and words["read"] < words["trained"]:
            sections.append(("Input vocabulary", (
                f"Training read {words['trained']:,} words; the graph reads {words['read']:,} of them (`thoughtvec export "
                f"--input-words {words['cut_to']}`): the {words['cut_to']:,} most frequent words of its fixed vectors and "
                f"the {FREQUENT_CORPUS_WORDS:,} most frequent corpus words, so that the bundle stays within its size; the "
                "words cut read as `<unk>` (a zero vector). No embedding is trained in this family, so the words kept "
                "read exactly as in training.")))  # fmt: skip
        return sections


FAMILY = InvertibleFamily()
