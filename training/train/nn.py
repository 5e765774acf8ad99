"""Building blocks shared by the families: padding-safe sequence ops that export cleanly to ONNX.

Every op here takes explicit ``lengths`` so a sentence's result never depends on how much padding
its batch added: recurrent states are read at the sentence's own last position, reversal happens
within each sentence's length, and pooling masks padded positions.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def length_mask(lengths: torch.Tensor, T: int) -> torch.Tensor:
    """(B, T) bool: True at valid positions."""
    return torch.arange(T, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)


def last_valid(states: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """states (B, T, H) → (B, H) at position length-1 (position 0 for an empty sentence)."""
    idx = (lengths - 1).clamp(min=0)
    return states[torch.arange(states.shape[0], device=states.device), idx]


def reverse_within_length(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverse each sequence's first ``length`` steps; padding stays where it is.

    x (B, T, ...) → y with y[b, t] = x[b, len_b - 1 - t] for t < len_b, else x[b, t].
    Applying it twice is the identity, so it also maps reversed states back to positions.
    """
    T = x.shape[1]
    t = torch.arange(T, device=x.device).unsqueeze(0)  # (1, T)
    L = lengths.unsqueeze(1)  # (B, 1)
    idx = torch.where(t < L, L - 1 - t, t)  # (B, T)
    idx = idx.view(idx.shape[0], T, *([1] * (x.dim() - 2))).expand_as(x)
    return torch.gather(x, 1, idx)


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """x (B, T, H), mask (B, T) → (B, H); an empty sentence gives zeros."""
    m = mask.unsqueeze(-1).to(x.dtype)
    return (x * m).sum(1) / m.sum(1).clamp(min=1.0)


def masked_max(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Max over valid positions; an empty sentence gives zeros."""
    m = mask.unsqueeze(-1)
    big = torch.finfo(x.dtype).max
    out = x.masked_fill(~m, -big).amax(1)
    return out * m.any(1).to(x.dtype)


def masked_min(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return -masked_max(-x, mask)


def orthogonal_gru_init(gru: nn.GRU, low: float = -0.1, high: float = 0.1) -> None:
    """Skip-thought §3.1: recurrent matrices orthogonal, other weights uniform [-0.1, 0.1].

    PyTorch stacks the three gates' recurrent matrices (3H × H); each H × H block is made
    orthogonal on its own, as the reference implementation does per gate."""
    for name, p in gru.named_parameters():
        if "weight_hh" in name:
            H = p.shape[1]
            for g in range(3):
                nn.init.orthogonal_(p.data[g * H : (g + 1) * H])
        elif "weight_ih" in name:
            nn.init.uniform_(p, low, high)
        elif "bias" in name:
            nn.init.zeros_(p)


class GRUStates(nn.Module):
    """A GRU over embedded words that is padding-invariant by construction, optionally bidirectional.

    Returns per-position states (B, T, H·dirs) and the last-state summary (B, H·dirs). The backward
    direction reads each sentence reversed *within its own length* (not PyTorch's padded-reverse),
    so padding never reaches it either.
    """

    def __init__(self, input_size: int, hidden: int, bidirectional: bool):
        super().__init__()
        self.fwd = nn.GRU(input_size, hidden, batch_first=True)
        self.bwd = nn.GRU(input_size, hidden, batch_first=True) if bidirectional else None
        for g in (self.fwd, self.bwd):
            if g is not None:
                orthogonal_gru_init(g)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hf, _ = self.fwd(x)  # (B, T, H)
        last = last_valid(hf, lengths)  # (B, H)
        if self.bwd is None:
            return hf, last
        hb_rev, _ = self.bwd(reverse_within_length(x, lengths))  # (B, T, H), step t = word len-1-t
        last_b = last_valid(hb_rev, lengths)  # the backward state after reading the first word
        hb = reverse_within_length(hb_rev, lengths)  # back to word positions
        return torch.cat([hf, hb], -1), torch.cat([last, last_b], -1)


class FactoredTable(nn.Module):
    """A fixed (V, D) lookup table stored as column blocks of distinct rows: block k keeps its
    distinct rows (U_k, D_k) and an int32 row index (V,). Lossless: ``forward(ids)`` equals
    ``table[ids]`` exactly. spaCy's vectors map many words onto one row, so the GloVe ⊕ spaCy table
    of the invertible models shrinks from V·350 to V·50 + U·300 numbers (U ≈ V/4)."""

    def __init__(self, table: np.ndarray, dims: list[int]):
        super().__init__()
        if sum(dims) != table.shape[1]:
            raise ValueError(f"column blocks {dims} do not add up to the table's {table.shape[1]} columns")
        self.blocks = len(dims)
        start = 0
        for k, d in enumerate(dims):
            rows, index = np.unique(table[:, start : start + d], axis=0, return_inverse=True)
            self.register_buffer(f"rows{k}", torch.from_numpy(np.ascontiguousarray(rows, np.float32)))  # (U_k, D_k)
            self.register_buffer(f"index{k}", torch.from_numpy(index.reshape(-1).astype(np.int32)))  # (V,)
            start += d

    def forward(self, ids: torch.Tensor) -> torch.Tensor:  # (B, T) -> (B, T, D)
        parts = [F.embedding(getattr(self, f"index{k}")[ids].long(), getattr(self, f"rows{k}")) for k in range(self.blocks)]
        return torch.cat(parts, -1) if self.blocks > 1 else parts[0]
