"""Output layer over a word vocabulary: exact softmax, or sampled softmax for CPU training.

A full softmax over 20 000 words costs ~20 k × d multiply-adds per predicted token, more than the
whole GRU step on a CPU. Training may instead use *sampled softmax* (Jean et al., 2015): each
batch shares K negatives drawn from the unigram distribution raised to ``alpha``; logits are
corrected by ``-log Q(w)`` so the gradient is an unbiased-ish estimate of the full softmax's.
The model (eq. 9: P(w) ∝ exp(v_w · h)) is unchanged, so the exact objective is always available:
:meth:`OutputLayer.exact_nll` computes it and validation reports it.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


class OutputLayer(nn.Module):
    """Vocabulary matrix V (eq. 9) with exact or sampled softmax cross-entropy."""

    noise: torch.Tensor  # (V,) buffer: the noise distribution Q of the sampled softmax

    def __init__(self, hidden: int, vocab_size: int, counts: np.ndarray, num_sampled: int = 0, alpha: float = 0.75, bias: bool = False):
        super().__init__()
        self.proj = nn.Linear(hidden, vocab_size, bias=bias)
        self.num_sampled = min(num_sampled, vocab_size - 1) if num_sampled else 0
        p = np.asarray(counts, np.float64).clip(min=0) ** alpha
        # Every word that can be a target must have Q > 0: the true logit is corrected by -log Q, and a
        # zero Q (a word with no count, or <unk> when its count is missing) would add +27 to it and make
        # its loss ~0, so it would never be learned. Such words get the rarest counted word's Q.
        # <unk> is a real target (every out-of-vocabulary word) and is sampled like any word.
        p[0] = 0.0  # <pad> is never a target nor a negative
        floor = p[1:][p[1:] > 0].min() if (p[1:] > 0).any() else 1.0
        p[1:] = np.maximum(p[1:], floor)
        p /= p.sum()
        self.register_buffer("noise", torch.tensor(p, dtype=torch.float32), persistent=False)

    def forward(self, h: torch.Tensor, targets: torch.Tensor, exact: bool = False) -> torch.Tensor:
        """Summed negative log-likelihood of ``targets`` (N,) given states ``h`` (N, H)."""
        if exact or not self.training or not self.num_sampled:
            return self.exact_nll(h, targets)
        return self.sampled_nll(h, targets)

    def exact_nll(self, h: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = self.proj(h)  # (N, V)
        return F.cross_entropy(logits, targets, reduction="sum")

    def sampled_nll(self, h: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        k = self.num_sampled
        neg = torch.multinomial(self.noise, k, replacement=True)  # (K,) shared by the batch
        # expected count of each word in K draws; log Q corrects the logits (Jean et al., eq. 9)
        logq_true = torch.log(k * self.noise[targets] + 1e-12)  # (N,)
        logq_neg = torch.log(k * self.noise[neg] + 1e-12)  # (K,)
        w = self.proj.weight
        true_logit = (h * w[targets]).sum(-1) - logq_true  # (N,)
        neg_logit = h @ w[neg].t() - logq_neg  # (N, K)
        if self.proj.bias is not None:
            true_logit = true_logit + self.proj.bias[targets]
            neg_logit = neg_logit + self.proj.bias[neg]
        # a negative that happens to be the target is not a negative ("accidental hit")
        neg_logit = neg_logit.masked_fill(neg.unsqueeze(0) == targets.unsqueeze(1), -math.inf)
        logits = torch.cat([true_logit.unsqueeze(1), neg_logit], dim=1)  # (N, 1+K)
        return -torch.log_softmax(logits, dim=1)[:, 0].sum()

    @torch.no_grad()
    def predict(self, h: torch.Tensor) -> torch.Tensor:
        return self.proj(h).argmax(-1)
