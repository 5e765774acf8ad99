"""Where the checkout's own folders are, named once.

The repository keeps the design's top-level folders and installs the code ones under ``thoughtvec``
(``service/`` is :mod:`thoughtvec.service`, ...). Code that reads or writes the checkout's other folders (the
bundled models, the corpus and runs, the docs' evaluation records) finds them here instead of counting
parent folders from its own file, which breaks silently when a module moves. The shared data (SentEval,
the retrieval dev set) are read in place beside the checkout, in ``../shared``.

These are the checkout's folders: an installed wheel has none of them, so only training, evaluation and the
benchmarks (which need a checkout) use this module; the serving package never does.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent  # this file is <checkout>/thoughtvec/paths.py
MODELS = REPO / "models"  # the bundled models
DOCS = REPO / "docs"  # the docs, with the evaluation records under docs/results
DATA = REPO / "data"  # the corpus and word vectors `thoughtvec corpus` builds (gitignored)
SHARED_DATA = REPO.parent / "shared" / "data"  # read in place: SentEval's sets, the retrieval dev set
