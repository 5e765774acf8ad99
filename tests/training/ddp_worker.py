"""Run under torchrun by test_trainer.py: train a tiny model, then every rank saves its weights."""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.training.conftest import tiny_config
from thoughtvec.training.train.trainer import Trainer

corpus, out = Path(sys.argv[1]), Path(sys.argv[2])
trainer = Trainer(tiny_config("bi-skip", corpus, out, max_steps=12, batch_size=16, eval_every=1000))
trainer.train()
rank = torch.distributed.get_rank()
torch.save(trainer.model.state_dict(), out / f"rank{rank}.pt")
