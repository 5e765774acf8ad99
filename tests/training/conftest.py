"""Shared fixtures: a toy corpus with real neighbour structure, and tiny training configs."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

NAMES = ["anna", "ben", "carl", "dora", "eve", "fred"]
OBJECTS = ["apple", "book", "coat", "door", "letter", "table"]
PLACES = ["kitchen", "garden", "river", "city", "house"]


def toy_documents(n_docs: int = 300, seed: int = 0) -> list[list[str]]:
    """Five-sentence stories: each sentence predicts its neighbours (same name, object, place)."""
    rng = random.Random(seed)
    docs = []
    for _ in range(n_docs):
        n, o, p = rng.choice(NAMES), rng.choice(OBJECTS), rng.choice(PLACES)
        docs.append([
            f"{n} walked into the {p} .", f"{n} saw a {o} there .", f"the {o} was old and small .",
            f"{n} took the {o} home .", f"later {n} slept in the {p} .",
        ])  # fmt: skip
    return docs


def write_corpus(path: Path, docs: list[list[str]]) -> Path:
    path.write_text("\n\n".join("\n".join(d) for d in docs) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def toy_corpus(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus") / "corpus.txt", toy_documents())


# Model settings small enough that a step takes milliseconds.
TINY = {
    "uni-skip": {"vocab_size": 60, "emb_dim": 16, "hidden": 24, "dec_hidden": 24, "num_sampled": 16},
    "bi-skip": {"vocab_size": 60, "emb_dim": 16, "hidden": 24, "dec_hidden": 24, "num_sampled": 16},
}


def tiny_config(variant: str, corpus: Path, out: Path, **kw):
    from thoughtvec.training.train.config import TrainConfig

    base = dict(variant=variant, corpus=str(corpus), out=str(out), max_steps=40, batch_size=32, holdout=100,
                eval_every=20, eval_batches=2, log_every=10, checkpoint_every=20, threads=1, model=dict(TINY.get(variant, {})))  # fmt: skip
    base.update(kw)
    return TrainConfig(**base)
