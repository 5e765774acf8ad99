"""Training settings, declared once (no torch here: the CLI builds its flags from this dataclass)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class TrainConfig:
    variant: str = "uni-skip"
    corpus: str = "data/corpus/corpus.txt"
    out: str = ""  # run folder; default runs/<variant>
    epochs: float = 1.0
    max_steps: int = 0  # 0: derived from epochs
    batch_size: int = 0  # per process; 0 = the family's default (skip-thought 128, AAE 64)
    lr: float = 0.0  # Adam learning rate; 0 = the family's default
    clip: float = 0.0  # gradient-norm clipping; 0 = the family's default (skip-thought 10, AAE 5)
    seed: int = 1234
    holdout: int = 2000  # held-out sentences (whole documents) for validation
    eval_every: int = 1000
    eval_batches: int = 20
    early_stop: int = -1  # stop after this many validations without improvement; 0 = never; -1 = the family's (AAE 3, others never)
    log_every: int = 50
    checkpoint_every: int = 1000
    checkpoint_minutes: float = 10.0
    max_minutes: float = 0.0  # stop (checkpointed, resumable) after this much wall time; 0 = no limit
    limit_sentences: int = 0  # read only the first N corpus sentences (smoke runs)
    threads: int = 0  # torch CPU threads; 0 = all cores
    device: str = "auto"  # auto | cpu | cuda
    model: dict[str, Any] = field(default_factory=dict)  # family config overrides

    def resolved(self, defaults: dict[str, Any]) -> "TrainConfig":
        """Fill the settings left unset with the family's defaults: 0 for sizes and rates, -1 for
        ``early_stop`` (whose 0 means "never", so an explicit 0 is kept)."""
        from dataclasses import replace

        fill = {k: v for k, v in defaults.items() if k != "early_stop" and not getattr(self, k)}
        if self.early_stop < 0:
            fill["early_stop"] = int(defaults.get("early_stop", 0))
        return replace(self, **fill)

    def run_dir(self) -> Path:
        return Path(self.out or f"runs/{self.variant}")
