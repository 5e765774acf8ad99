"""Training settings, declared once (no torch here: the CLI builds its flags, help included, from this dataclass).

A setting whose default depends on the model family (``batch_size``, ``lr``, ``clip``,
``early_stop``) is ``None`` until :meth:`TrainConfig.resolved` fills it from the family's
``train_defaults``, in one place; any value given, 0 included, is kept as given.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any


def _setting(default: Any, help: str) -> Any:
    """A field with its help text beside it (``thoughtvec train --help`` shows it)."""
    return field(default=default, metadata={"help": help})


# The family's defaults fill these when unset; a family that names none falls back to these values.
FAMILY_DEFAULTS: dict[str, Any] = {"batch_size": 128, "lr": 1e-3, "clip": 10.0, "early_stop": 0}


@dataclass
class TrainConfig:
    variant: str = _setting(
        "uni-skip", "what to train: uni-skip, bi-skip, mean-max-aae, mean-aae, max-aae, invertible-linear, invertible-bijection"
    )
    corpus: str = _setting("data/corpus/corpus.txt", "corpus file from `thoughtvec corpus build`")
    out: str = _setting("", "run folder (empty: runs/<variant>)")
    epochs: float = _setting(1.0, "passes over the corpus")
    max_steps: int = _setting(0, "stop after this many steps instead (0: use --epochs)")
    batch_size: int | None = _setting(None, "sentences per step and process (default: the family's, e.g. skip-thought 128, AAE 64)")
    lr: float | None = _setting(None, "Adam learning rate (default: the family's, e.g. skip-thought 1e-3, AAE 2e-4, invertible 5e-4)")
    clip: float | None = _setting(None, "gradient-norm clipping (default: the family's, e.g. skip-thought 10, AAE 5)")
    seed: int = _setting(1234, "seed for initialisation, batch order and the held-out split")
    holdout: int = _setting(2000, "sentences held out for validation (whole documents)")
    eval_every: int = _setting(1000, "validate every N steps")
    eval_batches: int = _setting(20, "held-out batches per validation")
    early_stop: int | None = _setting(
        None,
        "stop after N validations without improvement; 0: never (default: the family's; AAE: 3, on reconstruction accuracy; others: never)",
    )
    log_every: int = _setting(50, "append to train_log.jsonl every N steps")
    checkpoint_every: int = _setting(1000, "write checkpoint.pt every N steps (and every --checkpoint-minutes)")
    checkpoint_minutes: float = _setting(10.0, "write checkpoint.pt at least this often")
    max_minutes: float = _setting(
        0.0,
        "stop once the run has trained this long over all its sessions (a resumed run counts its earlier ones), checkpointed and resumable (0: no limit)",
    )
    limit_sentences: int = _setting(0, "read only the first N corpus sentences (0: all), for smoke runs")
    threads: int = _setting(0, "torch CPU threads (0: all cores)")
    device: str = _setting("auto", "auto, cpu or cuda")
    model: dict[str, Any] = field(default_factory=dict, metadata={"help": "family config overrides (--set KEY=VALUE, or [model])"})

    def __post_init__(self) -> None:
        for name, ok, what in (
            ("batch_size", lambda v: v >= 1, "at least 1"),
            ("lr", lambda v: v > 0, "above 0"),
            ("clip", lambda v: v > 0, "above 0"),
            ("early_stop", lambda v: v >= 0, "0 (never) or more"),
        ):
            value = getattr(self, name)
            if value is not None and not ok(value):
                raise ValueError(f"{name} is {value}; it must be {what} (leave it out for the family's default)")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """A config as checkpoints and config.json store it, older ones included (they wrote 0 for "the family's"
        batch size, rate and clipping, and -1 for its early stopping: both read as unset)."""
        legacy = {"batch_size": 0, "lr": 0, "clip": 0, "early_stop": -1}
        values: dict[str, Any] = {k: (None if k in legacy and v == legacy[k] else v) for k, v in data.items()}
        return cls(**values)

    def resolved(self, defaults: dict[str, Any]) -> TrainConfig:
        """This config with every unset family setting filled from ``defaults`` (the family's ``train_defaults``)."""
        fill = {k: defaults.get(k, fallback) for k, fallback in FAMILY_DEFAULTS.items() if getattr(self, k) is None}
        return replace(self, **fill)

    def run_dir(self) -> Path:
        return Path(self.out or f"runs/{self.variant}")
