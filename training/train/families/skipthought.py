"""Skip-thought vectors (Kiros et al., 2015; ../shared/papers/skip-thought-vectors.txt §2.1, §2.2, §3.1).

Encoder: a GRU over word embeddings; the sentence vector is its last hidden state (eq. 1-4).
bi-skip: a forward and a backward GRU of half width, concatenated. Two conditional-GRU decoders
predict the previous and the next sentence with teacher forcing (eq. 5-8); they share only the
vocabulary matrix V (eq. 9). Objective: the sum of both log-likelihoods (eq. 10).

The conditional GRU: the decoder's gates get ``C_r h_i``, ``C_z h_i`` and ``C h_i`` added to the
input terms. Feeding ``[x_{t-1}; h_i]`` to a standard GRU computes exactly ``W x_{t-1} + C h_i`` for
all three gates, so we use PyTorch's fused GRU. One deviation comes with it: PyTorch applies the
reset gate after the recurrent product (``r ⊙ (U h)``, the cuDNN form) rather than before
(``U (r ⊙ h)``, eq. 7); the model card says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from thoughtvec.service.bundle.format import TokenizerSpec, ViewSpec
from thoughtvec.service.bundle.vocab import Vocabulary
from thoughtvec.training.train.data import IdCorpus, TokenCorpus, pad_batch, vocabulary_from_counts
from thoughtvec.training.train.decoders import skipthought_decoder
from thoughtvec.training.train.expansion import expand
from thoughtvec.training.train.families.base import ExportEncoder, Family, Prepared, TrainModel
from thoughtvec.training.train.nn import GRUStates, orthogonal_gru_init
from thoughtvec.training.train.softmax import OutputLayer


@dataclass
class SkipThoughtConfig:
    bidirectional: bool = False
    vocab_size: int = 20_000  # training vocabulary (paper: 20 000), specials not counted
    emb_dim: int = 200  # paper: 620 (sized for about one epoch on a 2-core CPU; see the model card)
    hidden: int = 400  # sentence vector size; bi-skip splits it in two directions (paper: 2400)
    dec_hidden: int = 320  # decoder GRU size (training only: the bundle holds the encoder)
    max_len: int = 32  # tokens per training sentence, <eos> included; longer ones are cut (86 % of tokens kept)
    num_sampled: int = 512  # sampled-softmax negatives per batch; 0 = exact softmax
    sample_alpha: float = 0.75  # negatives drawn from unigram^alpha
    init_range: float = 0.1  # uniform [-0.1, 0.1] for non-recurrent weights (§3.1)


class SkipThought(TrainModel):
    def __init__(self, cfg: SkipThoughtConfig, vocab_size: int, counts: np.ndarray):
        super().__init__()
        self.cfg = cfg
        r = cfg.init_range
        enc_hidden = cfg.hidden // 2 if cfg.bidirectional else cfg.hidden
        self.emb = nn.Embedding(vocab_size, cfg.emb_dim, padding_idx=0)
        nn.init.uniform_(self.emb.weight, -r, r)
        with torch.no_grad():
            self.emb.weight[0].zero_()  # <pad> doubles as the decoders' start symbol: a zero input
        self.encoder = GRUStates(cfg.emb_dim, enc_hidden, cfg.bidirectional)
        # eq. 5-7: one GRU per neighbour, input [x_{t-1}; h_i] so W_ih = [W^d | C]
        self.dec_prev = nn.GRU(cfg.emb_dim + cfg.hidden, cfg.dec_hidden, batch_first=True)
        self.dec_next = nn.GRU(cfg.emb_dim + cfg.hidden, cfg.dec_hidden, batch_first=True)
        for g in (self.dec_prev, self.dec_next):
            orthogonal_gru_init(g, -r, r)
        self.out = OutputLayer(cfg.dec_hidden, vocab_size, counts, cfg.num_sampled, cfg.sample_alpha)  # shared V
        nn.init.uniform_(self.out.proj.weight, -r, r)

    def encode(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(B, T) ids → (B, hidden) sentence vectors h_i."""
        _, last = self.encoder(self.emb(ids), lengths)
        return last

    def _decode(self, gru: nn.GRU, h: torch.Tensor, dec_in: torch.Tensor, targets: torch.Tensor, tlen: torch.Tensor) -> torch.Tensor:
        x = self.emb(dec_in)  # (B, T, E): x_{t-1}, a zero vector at t = 1
        cond = h.unsqueeze(1).expand(-1, x.shape[1], -1)  # (B, T, hidden)
        # Neighbours are not length-bucketed like the centre sentences: pack them so the GRU
        # runs over real tokens only (about half the work of the padded batch).
        lengths = tlen.cpu()
        packed = pack_padded_sequence(torch.cat([x, cond], -1), lengths, batch_first=True, enforce_sorted=False)
        states, _ = gru(packed)  # .data: (N_tokens, D)
        gold = pack_padded_sequence(targets, lengths, batch_first=True, enforce_sorted=False).data  # same order
        return self.out(states.data, gold)  # summed NLL, eq. 9

    def forward(self, batch: dict[str, torch.Tensor], zero_context: bool = False) -> dict[str, torch.Tensor]:
        h = self.encode(batch["ids"], batch["lengths"])  # (B, hidden)
        if zero_context:
            h = torch.zeros_like(h)
        nll = self._decode(self.dec_prev, h, batch["prev_in"], batch["prev"], batch["prev_len"])
        nll = nll + self._decode(self.dec_next, h, batch["next_in"], batch["next"], batch["next_len"])
        B = h.shape[0]
        tokens = batch["prev_len"].sum() + batch["next_len"].sum()
        # eq. 10 summed over tokens, averaged over the triples of the batch (as the reference code)
        return {"loss": nll / B, "sentences": torch.tensor(B), "tokens": tokens}


def _decoder_io(seqs: list[np.ndarray], max_len: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    targets, tlen = pad_batch(seqs, max_len, eos=True)  # w_1..w_N <eos>
    dec_in = np.zeros_like(targets)
    dec_in[:, 1:] = targets[:, :-1]  # teacher forcing: <pad>(=zero start) w_1..w_N
    return torch.from_numpy(dec_in), torch.from_numpy(targets), torch.from_numpy(tlen)


class ExpandedEmbedding(nn.Module):
    """Trained embeddings for ids < trained_size; above that, pretrained vectors mapped by the
    least-squares matrix of §2.2 (``v' = W v``), computed in the graph so the bundle stores only
    the small source vectors."""

    def __init__(self, trained: torch.Tensor, source: nn.Parameter | None = None, mapping: torch.Tensor | None = None):
        super().__init__()
        self.trained = nn.Parameter(trained.detach().clone(), requires_grad=False)  # (Vt, E)
        self.n_trained = int(trained.shape[0])
        self.source = source  # (Vx, Ds), possibly shared with another part
        self.mapping = None if mapping is None else nn.Parameter(mapping.detach().clone(), requires_grad=False)  # (Ds, E)
        if (source is None) != (mapping is None):
            raise ValueError("pretrained source vectors need their mapping, and a mapping its source")

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        known = ids < self.n_trained
        a = F.embedding(torch.where(known, ids, torch.zeros_like(ids)), self.trained)  # (B, T, E)
        if self.source is None or self.mapping is None:  # not expanded (the constructor took neither)
            return a
        b = F.embedding((ids - self.n_trained).clamp(min=0), self.source) @ self.mapping  # (B, T, E)
        return torch.where(known.unsqueeze(-1), a, b)


class SkipThoughtEncoder(ExportEncoder):
    """uni-skip / bi-skip: one (embedding, GRU) part. combine-skip: uni ⊕ bi, each half L2-normalised
    as the reference implementation does; its ``uni`` and ``bi`` halves are views too."""

    def __init__(self, parts: list[tuple[ExpandedEmbedding, GRUStates]], names: list[str], dims: list[int]):
        super().__init__()
        self.embs = nn.ModuleList([p[0] for p in parts])
        self.encs = nn.ModuleList([p[1] for p in parts])
        self.combine = len(parts) == 2
        views = {}
        if self.combine:
            views["combine"] = ViewSpec(
                output="combine", dim=sum(dims), description="uni-skip ⊕ bi-skip, each L2-normalised (4800-d in the paper)"
            )
        for n, d in zip(names, dims):
            desc = "last GRU state" if n == "uni" else "forward ⊕ backward last GRU states"
            views[n] = ViewSpec(output=n, dim=d, description=desc)
        self.views = views
        self.default_view = next(iter(views))

    def forward(self, input_ids: torch.Tensor, lengths: torch.Tensor):
        vecs = [enc(emb(input_ids), lengths)[1] for emb, enc in zip(self.embs, self.encs)]
        if not self.combine:
            return tuple(vecs)
        both = torch.cat([F.normalize(v, dim=-1, eps=1e-12) for v in vecs], -1)
        return (both, *vecs)


class SkipThoughtFamily(Family):
    name = "skip-thought"
    Config = SkipThoughtConfig
    presets = {"uni-skip": {"bidirectional": False}, "bi-skip": {"bidirectional": True}}
    export_only = {"combine-skip": ("uni-skip", "bi-skip")}  # built from one checkpoint of each
    tokenizer = TokenizerSpec(append_eos=True)  # the reference encoder reads <eos> too
    needs_neighbours = (1, 1)
    train_defaults = {"batch_size": 128, "lr": 1e-3, "clip": 10.0}  # §3.1: batch 128, Adam, clip 10

    def prepare(self, cfg: SkipThoughtConfig, corpus: TokenCorpus) -> Prepared:
        counts = corpus.counts()
        vocab = vocabulary_from_counts(counts, cfg.vocab_size)
        freq = np.zeros(len(vocab), np.float64)
        for w, i in vocab.index.items():
            freq[i] = counts.get(w, 0)
        freq[2] = len(corpus)  # <eos>: once per sentence
        freq[1] = sum(counts.values()) - freq[3:].sum()  # <unk>: every out-of-vocabulary token
        return Prepared(vocab, {"counts": freq})

    def collate(self, cfg: SkipThoughtConfig, data: IdCorpus, centres: np.ndarray) -> dict[str, torch.Tensor]:
        ids, lengths = pad_batch([data.sentence(i) for i in centres], cfg.max_len, eos=True)
        prev_in, prev, prev_len = _decoder_io([data.sentence(i - 1) for i in centres], cfg.max_len)
        next_in, nxt, next_len = _decoder_io([data.sentence(i + 1) for i in centres], cfg.max_len)
        return {
            "ids": torch.from_numpy(ids), "lengths": torch.from_numpy(lengths),
            "prev_in": prev_in, "prev": prev, "prev_len": prev_len,
            "next_in": next_in, "next": nxt, "next_len": next_len,
        }  # fmt: skip

    def build(self, cfg: SkipThoughtConfig, prepared: Prepared) -> SkipThought:
        return SkipThought(cfg, len(prepared.vocab), prepared.state["counts"])

    def max_input_tokens(self, cfg: SkipThoughtConfig) -> int:
        return 128

    def export_decoder(self, cfgs, models, prepared):
        """§3.6: the previous- and next-sentence decoders, conditioned on the sentence vector. combine-skip gets none:
        the bundle of its uni-skip part, exported from the same checkpoint, carries the same decoders, and with them
        combine-skip would pass the bundle size budget."""
        if len(cfgs) > 1:
            return None
        cfg, model = cfgs[0], models[0]
        return skipthought_decoder(cfg, model, "bi" if cfg.bidirectional else "uni", len(prepared.vocab))

    def describe(self, cfgs, variant) -> str:
        dims = " ⊕ ".join(f"{'bi' if c.bidirectional else 'uni'} {c.hidden}-d" for c in cfgs)
        return f"Skip-thought vectors ({variant}, {dims}) trained on the thoughtvec default corpus"

    def deviations(self, cfgs) -> list[str]:
        c = cfgs[0]
        out = [
            "Corpus: the ~14 M-word thoughtvec default corpus (public-domain books, Bibles and commentaries, news, "
            "reviews, Wikipedia sample, Brown) instead of BookCorpus (985 M words of novels).",
            f"Dimensions sized for CPU training: word embeddings {c.emb_dim} (paper 620); "
            + "; ".join(f"{'bi-skip 2 × ' + str(x.hidden // 2) if x.bidirectional else 'uni-skip ' + str(x.hidden)}" for x in cfgs)
            + " (paper: uni-skip 2400, bi-skip 2 × 1200); decoders "
            + str(c.dec_hidden)
            + ".",
            f"Training vocabulary {c.vocab_size:,} words (paper: 20 000).",
            "The conditional GRU feeds [x_{t-1}; h_i] to PyTorch's fused GRU, which equals eq. 5–7's W x + C h_i and "
            "applies the reset gate after the recurrent product, r ⊙ (U h), where eq. 6 writes U (r ⊙ h); the authors' "
            "reference implementation (skip-thoughts, `layers.py`) computes r ⊙ (U h) too, so this follows the code, not the equation.",
            f"Training sentences are cut to {c.max_len} tokens (<eos> included).",
        ]
        if c.num_sampled:
            out.append(
                f"Training used sampled softmax ({c.num_sampled} shared negatives per batch from unigram^{c.sample_alpha}, "
                "log-Q corrected) instead of the full 20 k-word softmax; validation reports the exact per-token NLL."
            )
        out.append(
            "Vocabulary expansion maps GloVe 6B 50d (400 k words, the 100 k most frequent used) instead of "
            "word2vec CBOW 300d (931 k words)."
        )
        out.append("Training time: at most one epoch over the corpus on a 2-core CPU (see Training) instead of two weeks on a GPU.")
        return out

    def card_sections(self, cfgs, report, bundle_dir) -> list[tuple[str, str]]:
        secs = []
        for key, rep in report.items():
            if not key.startswith("expansion_") or not rep.get("expanded_words"):
                continue
            ho, ins = rep["held_out_fit"], rep["in_sample_fit"]
            md = [
                f"Least-squares map from {rep['source']} ({rep['source_dim']}-d) to the {key[10:]} encoder's word embeddings, "
                f"fitted on the {rep['shared_words']:,} words both share (§2.2). Fit on {rep['held_out_words']:,} held-out "
                f"shared words: R² {ho['r2']:.3f}, mean cosine to the true embedding {ho['mean_cosine']:.3f} "
                f"(in-sample: R² {ins['r2']:.3f}, cosine {ins['mean_cosine']:.3f}). Vocabulary: {rep['trained_words']:,} "
                f"trained + {rep['expanded_words']:,} expanded = {rep['total_words']:,} words.",
                "",
                "Nearest neighbours of words outside the training vocabulary (like Table 3):",
                "",
                "| query | neighbours |",
                "|---|---|",
            ]
            md += [f"| {q} | {', '.join(nb)} |" for q, nb in rep["neighbours"].items()]
            secs.append((f"Vocabulary expansion ({key[10:]})", "\n".join(md)))
        return secs

    def export_encoder(self, cfgs, models, prepared, variant, expansion=None, **_):
        vocab = prepared.vocab
        parts, names, dims, report = [], [], [], {}
        shared_source = None  # combine-skip's two parts read the same pretrained vectors: store them once
        extra_words: list[str] = []
        for cfg, model in zip(cfgs, models):
            name = "bi" if cfg.bidirectional else "uni"
            trained = model.emb.weight.detach()
            if expansion is None:
                emb = ExpandedEmbedding(trained)
            else:
                w, extra_words, source, rep = expand(trained.numpy(), vocab, expansion)
                if shared_source is None:
                    shared_source = nn.Parameter(torch.from_numpy(source), requires_grad=False)
                emb = ExpandedEmbedding(trained, shared_source, torch.from_numpy(w))
                report[f"expansion_{name}"] = rep
            parts.append((emb, model.encoder))
            names.append(name)
            dims.append(cfg.hidden)
        if extra_words:
            vocab = Vocabulary(vocab.tokens + extra_words)
        return SkipThoughtEncoder(parts, names, dims), vocab, report


FAMILY = SkipThoughtFamily()
