"""The one interface every model family implements; training, export and evaluation use only this.

A family is a config dataclass, its ``nn.Module``s and a registry entry. Variants are named
presets (config overrides). The trainer never branches on the family name.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from thoughtvec.service.bundle.format import TokenizerSpec, ViewSpec
from thoughtvec.service.bundle.vocab import Vocabulary
from thoughtvec.training.train.data import IdCorpus, TokenCorpus


@dataclass
class Prepared:
    """What a family derives from the corpus before training; saved inside every checkpoint.

    ``vocab``: the bundle vocabulary (input ids). ``state``: anything else the model needs to be
    rebuilt (output vocabulary, word counts, ...), as plain Python / numpy values.
    """

    vocab: Vocabulary
    state: dict[str, Any]

    def to_dict(self) -> dict:
        return {"vocab": self.vocab.tokens, "state": self.state}

    @classmethod
    def from_dict(cls, d: dict) -> Prepared:
        return cls(Vocabulary(d["vocab"]), d["state"])


class TrainModel(nn.Module, ABC):
    """A family's full training model. ``forward(batch)`` returns a dict with at least
    ``loss`` (what the optimiser minimises) and ``tokens`` (predicted tokens, for throughput)."""

    @abstractmethod
    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]: ...

    def after_step(self) -> None:
        """Called after each optimiser step (e.g. the orthonormal update of the invertible decoder)."""


class ExportEncoder(nn.Module):
    """``forward(input_ids (B, T) int64, lengths (B,) int64) -> tuple of (B, dim) float32``, one per view,
    in the order of ``views``. This is what goes into ``model.onnx``."""

    views: dict[str, ViewSpec]
    default_view: str


class Family(ABC):
    name: ClassVar[str]  # bundle family, e.g. "skip-thought"
    Config: ClassVar[type]  # dataclass of model hyper-parameters with paper-like defaults
    presets: ClassVar[dict[str, dict[str, Any]]]  # variant name -> Config overrides
    tokenizer: ClassVar[TokenizerSpec]
    needs_neighbours: ClassVar[tuple[int, int]] = (0, 0)  # (before, after) sentences a centre needs
    train_defaults: ClassVar[dict[str, Any]] = {"batch_size": 128, "lr": 1e-3, "clip": 10.0}
    stop_metric: ClassVar[str] = ""  # validation metric (higher is better) for --early-stop
    export_only: ClassVar[dict[str, tuple[str, ...]]] = {}  # variant -> the trained variants it is built from

    # ---- config -------------------------------------------------------------------------
    def config(self, variant: str, overrides: dict[str, Any] | None = None):
        if variant not in self.presets:
            raise ValueError(f"family {self.name!r} has no variant {variant!r}; choose one of {sorted(self.presets)}")
        fields = {f.name for f in dataclasses.fields(self.Config)}
        values = {**self.presets[variant], **(overrides or {})}
        unknown = sorted(set(values) - fields)
        if unknown:
            raise ValueError(f"unknown {self.name} setting(s) {unknown}; valid: {sorted(fields)}")
        return self.Config(**values)

    # ---- data ---------------------------------------------------------------------------
    @abstractmethod
    def prepare(self, cfg, corpus: TokenCorpus) -> Prepared: ...

    def id_corpus(self, cfg, prepared: Prepared, corpus: TokenCorpus) -> IdCorpus:
        return corpus.encode(prepared.vocab)

    @abstractmethod
    def collate(self, cfg, data: IdCorpus, centres: np.ndarray) -> dict[str, torch.Tensor]:
        """Batch tensors for the given centre sentence indices."""

    # ---- model --------------------------------------------------------------------------
    @abstractmethod
    def build(self, cfg, prepared: Prepared) -> TrainModel: ...

    @torch.no_grad()
    def validate(self, cfg, model: TrainModel, batches: Sequence[dict[str, torch.Tensor]]) -> dict[str, float]:
        """Metrics on held-out batches; the default is the mean loss per predicted token."""
        total, tokens = 0.0, 0.0
        for b in batches:
            out = model(b)
            total += float(out["loss"]) * float(out["sentences"])
            tokens += float(out["tokens"])
        return {"nll_per_token": total / max(tokens, 1.0)}

    # ---- export -------------------------------------------------------------------------
    @abstractmethod
    def export_encoder(
        self, cfgs: list, models: list[TrainModel], prepared: Prepared, variant: str, **options
    ) -> tuple[ExportEncoder, Vocabulary, dict]:
        """The ONNX-ready encoder for ``variant``, the bundle vocabulary and a report dict for the
        model card. ``models`` has one entry per checkpoint given (combine-skip takes two)."""

    def export_decoder(self, cfgs: list, models: list[TrainModel], prepared: Prepared):
        """The decoders trained with the encoder, as ``thoughtvec.training.train.decoders.DecoderExport`` (one ONNX
        decoding-step graph in the bundle), or ``None`` when the family's decoder does not generate sentences."""
        return None

    def max_input_tokens(self, cfg) -> int:
        return 128

    # ---- model card ---------------------------------------------------------------------
    def describe(self, cfgs: list, variant: str) -> str:
        """One line for bundle.json and /v1/models."""
        return f"{self.name} {variant}"

    def deviations(self, cfgs: list) -> list[str]:
        """Where this implementation departs from the paper (model card)."""
        return []

    def card_sections(self, cfgs: list, report: dict, bundle_dir) -> list[tuple[str, str]]:
        """Family-specific model-card sections: (title, markdown). May write PNGs into ``bundle_dir``."""
        return []
