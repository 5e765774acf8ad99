"""The one training loop, shared by every family.

A run lives in one folder (``runs/<variant>/`` by default)::

    checkpoint.pt    model + optimiser + progress + RNG + configs + vocabulary (written atomically)
    train_log.jsonl  one JSON object per logged step / validation
    loss.png         the loss curve, redrawn at each checkpoint

``--resume`` continues from ``checkpoint.pt`` at the exact batch it stopped at: batch order is a
pure function of (seed, epoch), so a killed run that resumes reaches the same step count.
SIGTERM / Ctrl-C save a checkpoint before exiting. Under ``torchrun`` each rank takes every
world-th batch of the same order and DDP averages gradients, so all ranks hold identical weights.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from tqdm import tqdm

from thoughtvec.service.bundle.atomic import atomic_save, atomic_write_text
from thoughtvec.training.train.config import TrainConfig
from thoughtvec.training.train.data import TokenCorpus, bucketed_batches
from thoughtvec.training.train.families import family_of_variant
from thoughtvec.training.train.families.base import Prepared
from thoughtvec.training.train.plots import plot_loss_curve
from thoughtvec.training.train.provenance import git_commit

log = logging.getLogger(__name__)


@dataclass
class Progress:
    """Where a run is; saved in the checkpoint (as a dict) and restored on resume."""

    step: int = 0
    epoch: int = 0
    batch: int = 0  # next batch of the epoch
    tokens: int = 0
    seconds: float = 0.0  # training wall time, over every resume
    best: float | None = None  # best validation score for early stopping
    stale: int = 0  # validations since ``best`` improved
    stopped_early: bool = False

    @classmethod
    def from_dict(cls, data: dict) -> Progress:
        return cls(**data)


@dataclass
class Window:
    """Losses and tokens since the last log line (its averages and rate)."""

    loss: float = 0.0
    steps: int = 0
    tokens: int = 0
    started: float = field(default_factory=time.time)


@dataclass
class Stop:
    """Why the loop should stop early: a signal (SIGTERM, SIGINT) or ``"time"`` (``--max-minutes``)."""

    reason: int | str | None = None


class _Dist:
    """World size / rank from torchrun's environment; one process when absent."""

    def __init__(self, device: torch.device):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        if self.world > 1 and not dist.is_initialized():
            dist.init_process_group("nccl" if device.type == "cuda" else "gloo")

    @property
    def main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.world > 1:
            dist.barrier()


def _device(name: str) -> torch.device:
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and "LOCAL_RANK" in os.environ:
        return torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    return torch.device(name)


def _to(batch: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    return {k: v.to(device, non_blocking=True) for k, v in batch.items()}


# Settings a resumed run may change; the rest must match the checkpoint.
RESUMABLE = {"epochs", "max_steps", "max_minutes", "threads", "device", "checkpoint_every", "checkpoint_minutes", "log_every", "eval_every"}


class Trainer:
    def __init__(self, tcfg: TrainConfig, resume: bool = False, explicit: frozenset[str] = frozenset()):
        """``explicit``: settings the user gave (flags or config file); on resume only those in
        ``RESUMABLE`` may differ from the checkpoint's."""
        ck = None
        if resume:
            path = tcfg.run_dir() / "checkpoint.pt"
            if not path.is_file():
                raise FileNotFoundError(f"--resume: no checkpoint at {path}")
            ck = torch.load(path, map_location="cpu", weights_only=False)
            saved = TrainConfig.from_dict(ck["train_config"])
            changes = {k: getattr(tcfg, k) for k in explicit if getattr(tcfg, k) != getattr(saved, k)}
            changes.pop("out", None)
            changes.pop("variant", None)
            if set(changes) - RESUMABLE:
                raise ValueError(f"--resume cannot change {sorted(set(changes) - RESUMABLE)}; only {sorted(RESUMABLE)}")
            tcfg = dataclasses.replace(saved, out=str(tcfg.run_dir()), **changes)
        self.family = family_of_variant(tcfg.variant)
        tcfg = tcfg.resolved(self.family.train_defaults)
        self.tcfg = tcfg
        self.run = tcfg.run_dir()
        self.ckpt_path = self.run / "checkpoint.pt"
        self.device = _device(tcfg.device)
        if tcfg.threads:
            torch.set_num_threads(tcfg.threads)
        self.dist = _Dist(self.device)
        if self.device.type == "cuda":
            # TF32 matrix products and cuDNN RNNs: ~8x the fp32 rate on Ampere/Hopper; the export's
            # ONNX-vs-torch parity check (fp32, CPU) still gates every bundle.
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        if tcfg.variant in getattr(self.family, "export_only", {}):
            raise ValueError(f"{tcfg.variant} is not trained: export it from its parts {self.family.export_only[tcfg.variant]}")
        if ck:
            self.mcfg = self.family.Config(**ck["model_config"])
        else:
            if self.ckpt_path.exists():
                raise FileExistsError(f"{self.ckpt_path} exists: pass --resume to continue it, or choose another --out")
            self.mcfg = self.family.config(tcfg.variant, tcfg.model)
        self.ck = ck
        torch.manual_seed(tcfg.seed)

    # ---- setup ----------------------------------------------------------------------------
    def _setup(self) -> None:
        t, fam = self.tcfg, self.family
        assert t.batch_size is not None and t.lr is not None, "TrainConfig.resolved() fills the family's settings"
        self.corpus = TokenCorpus.load(t.corpus, t.limit_sentences or None)
        self.prepared = Prepared.from_dict(self.ck["prepared"]) if self.ck else fam.prepare(self.mcfg, self.corpus)
        self.data = fam.id_corpus(self.mcfg, self.prepared, self.corpus)
        train_idx, held_idx = self.data.split(t.holdout, t.seed)
        centres = self.data.centres(*fam.needs_neighbours)
        self.train_c = np.intersect1d(centres, train_idx)
        self.held_c = np.intersect1d(centres, held_idx)
        if len(self.train_c) < t.batch_size * self.dist.world:
            raise ValueError(f"only {len(self.train_c)} training examples: fewer than one batch per process")
        self.lengths = self.data.lengths()
        self.model = fam.build(self.mcfg, self.prepared).to(self.device)
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.opt = torch.optim.Adam(params, lr=t.lr)
        self.progress = Progress()
        if self.ck:
            self.model.load_state_dict(self.ck["model"])
            self.opt.load_state_dict(self.ck["optimizer"])
            self.progress = Progress.from_dict(self.ck["progress"])
            torch.set_rng_state(self.ck["rng"]["torch"])
            if self.device.type == "cuda" and self.ck["rng"].get("cuda") is not None:
                torch.cuda.set_rng_state(self.ck["rng"]["cuda"], self.device)  # negative sampling draws on the GPU
        self.net: torch.nn.Module = self.model
        if self.dist.world > 1:
            self.net = torch.nn.parallel.DistributedDataParallel(self.model)
        self.steps_per_epoch = len(self._epoch_batches(0)) // self.dist.world
        self.total_steps = t.max_steps or math.ceil(t.epochs * self.steps_per_epoch)
        held = bucketed_batches(self.lengths, self.held_c, t.batch_size, np.random.default_rng(t.seed))[: t.eval_batches]
        self.held_batches = [_to(fam.collate(self.mcfg, self.data, b), self.device) for b in held]

    def _epoch_batches(self, epoch: int) -> list[np.ndarray]:
        rng = np.random.default_rng([self.tcfg.seed, epoch])
        assert self.tcfg.batch_size is not None, "TrainConfig.resolved() fills the family's settings"
        return bucketed_batches(self.lengths, self.train_c, self.tcfg.batch_size, rng)

    # ---- persistence ----------------------------------------------------------------------
    def save(self, final: dict | None = None) -> None:
        if not self.dist.main:
            return
        ck = {
            "format": 1,
            "family": self.family.name,
            "variant": self.tcfg.variant,
            "train_config": dataclasses.asdict(self.tcfg),
            "model_config": dataclasses.asdict(self.mcfg),
            "prepared": self.prepared.to_dict(),
            "model": (state := self.model.state_dict()),
            "rebuilt": [name for name, _ in self.model.named_buffers() if name in state],  # build() makes them again
            "optimizer": self.opt.state_dict(),
            "progress": dataclasses.asdict(self.progress),
            "rng": {"torch": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None},
            "corpus": self.corpus.stats(),
            "git_commit": git_commit() or "unknown",
            "final": final,
        }
        atomic_save(self.ckpt_path, lambda f: torch.save(ck, f))
        plot_loss_curve(self.run / "train_log.jsonl", self.run / "loss.png", title=f"{self.tcfg.variant} training loss")

    def _log(self, entry: dict) -> None:
        if self.dist.main:
            with open(self.run / "train_log.jsonl", "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")

    def _trim_log(self) -> None:
        """On resume, forget log lines written after the checkpoint (they will be redone)."""
        path = self.run / "train_log.jsonl"
        if self.dist.main and path.exists():
            keep = [ln for ln in path.read_text().splitlines() if json.loads(ln).get("step", 0) <= self.progress.step]
            atomic_write_text(path, "".join(ln + "\n" for ln in keep))

    # ---- the loop -------------------------------------------------------------------------
    def validate(self) -> dict[str, float]:
        self.model.eval()
        metrics = self.family.validate(self.mcfg, self.model, self.held_batches)
        self.model.train()
        return metrics

    def train(self) -> Path:
        t = self.tcfg
        self.run.mkdir(parents=True, exist_ok=True)
        self._setup()
        p = self.progress
        if self.ck:
            self._trim_log()
        elif self.dist.main:
            (self.run / "train_log.jsonl").unlink(missing_ok=True)
            atomic_write_text(
                self.run / "config.json", json.dumps({"train": dataclasses.asdict(t), "model": dataclasses.asdict(self.mcfg)}, indent=2)
            )
        stop = Stop()

        def on_signal(signum, _frame):
            stop.reason = signum

        old = signal.signal(signal.SIGTERM, on_signal)
        log.info(
            "%s: %d training examples, %d held out, %d steps/epoch, %d steps in all, %d process(es), device %s",
            t.variant,
            len(self.train_c),
            len(self.held_c),
            self.steps_per_epoch,
            self.total_steps,
            self.dist.world,
            self.device,
        )
        try:
            self._loop(stop)
        except KeyboardInterrupt:
            stop.reason = signal.SIGINT
        finally:
            signal.signal(signal.SIGTERM, old)
        if stop.reason is not None or p.step < self.total_steps and not p.stopped_early:
            self.save()
            log.info("stopped at step %d/%d; checkpoint saved: resume with --resume", p.step, self.total_steps)
            if stop.reason == "time":
                log.info(
                    "--max-minutes %g reached: the run has trained %.1f min over all its sessions; resume with a larger "
                    "--max-minutes (or 0: no limit)",
                    self.tcfg.max_minutes,
                    p.seconds / 60,
                )
            return self.ckpt_path
        final = self._final()
        self.save(final=final)
        if self.dist.main:
            log.info("done: %d steps, %.0f s, final loss %.4f, checkpoint %s", p.step, p.seconds, final["final_loss"], self.ckpt_path)
        return self.ckpt_path

    def _final(self) -> dict:
        entries = (
            [json.loads(ln) for ln in (self.run / "train_log.jsonl").read_text().splitlines()]
            if (self.run / "train_log.jsonl").exists()
            else []
        )
        losses = [e["loss"] for e in entries if "loss" in e][-20:]
        evals = [e["eval"] for e in entries if "eval" in e]
        return {
            "steps": self.progress.step,
            "epochs": self.progress.step / max(self.steps_per_epoch, 1),
            "wall_time_s": round(self.progress.seconds, 1),
            "final_loss": float(np.mean(losses)) if losses else float("nan"),
            "validation": evals[-1] if evals else self.validate(),
            "tokens": self.progress.tokens,
            "processes": self.dist.world,
            "device": str(self.device),
            "date": time.strftime("%Y-%m-%d"),
        }

    def _loop(self, stop: Stop) -> None:
        t, p, fam = self.tcfg, self.progress, self.family
        assert t.clip is not None, "TrainConfig.resolved() fills the family's settings"
        bar = tqdm(
            total=self.total_steps,
            initial=p.step,
            disable=not self.dist.main,
            dynamic_ncols=True,
            mininterval=1.0 if os.isatty(2) else 30.0,
            desc=t.variant,
            unit="step",
        )
        started, last_ck, window = time.time() - p.seconds, time.time(), Window()
        self.model.train()
        while p.step < self.total_steps:
            batches = self._epoch_batches(p.epoch)
            for j in range(p.batch, self.steps_per_epoch):
                batch = _to(fam.collate(self.mcfg, self.data, batches[j * self.dist.world + self.dist.rank]), self.device)
                out = self.net(batch)
                self.opt.zero_grad(set_to_none=True)
                out["loss"].backward()
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), t.clip)
                self.opt.step()
                self.model.after_step()
                tokens = int(out["tokens"]) * self.dist.world
                p.step += 1
                p.batch = j + 1
                p.tokens += tokens
                p.seconds = time.time() - started
                window.loss += out["loss"].item()
                window.steps += 1
                window.tokens += tokens
                bar.update(1)
                if p.step % t.log_every == 0 or p.step == self.total_steps:
                    dt = max(time.time() - window.started, 1e-9)
                    entry = {
                        "step": p.step,
                        "epoch": round(p.step / self.steps_per_epoch, 4),
                        "loss": window.loss / window.steps,
                        "tokens_per_s": window.tokens / dt,
                        "seconds": round(p.seconds, 1),
                    }
                    self._log(entry)
                    bar.set_postfix(loss=f"{entry['loss']:.3f}", tok_s=f"{entry['tokens_per_s']:.0f}")
                    window = Window()
                if p.step % t.eval_every == 0 and self._evaluate_and_maybe_stop():
                    p.stopped_early = True
                    return
                if p.step % t.checkpoint_every == 0 or time.time() - last_ck > 60 * t.checkpoint_minutes:
                    self.save()
                    last_ck = time.time()
                out_of_time = bool(t.max_minutes) and p.seconds > 60 * t.max_minutes
                if out_of_time:
                    stop.reason = "time"
                if stop.reason is not None or p.step >= self.total_steps:
                    bar.close()
                    return
            p.epoch += 1
            p.batch = 0
        bar.close()

    def _evaluate_and_maybe_stop(self) -> bool:
        metrics = self.validate()
        p = self.progress
        self._log({"step": p.step, "eval": metrics})
        log.info("step %d validation: %s", p.step, ", ".join(f"{k} {v:.4f}" for k, v in metrics.items()))
        score = metrics.get(getattr(self.family, "stop_metric", ""), None)
        if score is None or not self.tcfg.early_stop:  # 0: never
            return False
        if p.best is None or score > p.best:
            p.best, p.stale = score, 0
            return False
        p.stale += 1
        return p.stale >= self.tcfg.early_stop
