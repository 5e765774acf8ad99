"""The Python API in a distributed engine's map step: a corpus embedded in Dask partitions into FAISS indexes.

    pip install -c constraints.txt -e ".[dask]"
    python -m thoughtvec.bench.dask_embed --model mean-max-aae --sentences 20000

The corpus is the search sample's sentences (public-domain books, ``load.load_sentences``), as a Dask DataFrame of
``--partitions`` partitions. ``map_partitions`` runs :func:`embed_partition` on each: the worker's index (its model
loaded by its first partition, once a worker process: :func:`worker_index`) adds the partition's sentences through
the Python API (``Index.add``: embedded by the engine, written to a FAISS index in the worker's own folder, as one
process writes a folder). The same sentences go through the plain in-process loop first (one ``Index.add`` a
partition, on one thread); both rates are printed, the models' loading left out of both. ``--scheduler threads`` (the
default) runs the partitions on threads of this process, sharing one model and one index; ``processes``, in worker
processes, each loading the model once into an index folder of its own.
"""

from __future__ import annotations

import argparse
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd

from thoughtvec.bench.load import load_sentences
from thoughtvec.paths import MODELS
from thoughtvec.service.api import Index, load

INDEX = "corpus"
_INDEXES: dict[tuple[str, str], Index] = {}  # this process's index (and its model), per (model, folder)
_LOADING = threading.Lock()


def worker_index(model: str, folder: str, settings: dict[str, Any]) -> Index:
    """This worker process's index under ``folder`` (a folder of its own: one process writes a folder), its model
    loaded at the first call; every later partition on this process, on any thread, gets the same."""
    with _LOADING:
        key = (model, folder)
        if key not in _INDEXES:
            m = load(model, models_dir=MODELS, **settings)
            _INDEXES[key] = Index.create(m, Path(folder) / f"worker-{os.getpid()}", INDEX, mode="dense", exist_ok=True)
        return _INDEXES[key]


def embed_partition(part: pd.DataFrame, model: str, folder: str, settings: dict[str, Any]) -> pd.DataFrame:
    """The map step: the partition's sentences added to this worker's index; one row a document (its id, the worker)."""
    index = worker_index(model, folder, settings)
    ids = index.add(part["text"].tolist(), ids=part["id"].tolist(), show_progress_bar=False)
    return pd.DataFrame({"id": ids, "worker": os.getpid()}, index=part.index)


def plain_loop(frame: pd.DataFrame, model: str, folder: Path, partitions: int, settings: dict[str, Any]) -> float:
    """Seconds to add ``frame`` to an index one partition at a time, on this thread (the model loaded beforehand)."""
    with load(model, models_dir=MODELS, **settings) as m:
        index = Index.create(m, folder, INDEX, mode="dense")
        start = time.perf_counter()
        for part in split(frame, partitions):
            index.add(part["text"].tolist(), ids=part["id"].tolist(), show_progress_bar=False)
        return time.perf_counter() - start


def split(frame: pd.DataFrame, partitions: int) -> list[pd.DataFrame]:
    size = -(-len(frame) // partitions)
    return [frame.iloc[i : i + size] for i in range(0, len(frame), size)]


def main(argv: list[str] | None = None) -> int:
    import dask  # noqa: PLC0415  # an optional extra (`dask`): the map step above runs without it
    import dask.dataframe as dd  # noqa: PLC0415  # the same

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="mean-max-aae", help="a bundle of models/ (default: mean-max-aae)")
    p.add_argument("--sentences", type=int, default=20_000, help="sentences of the search sample (up to 50 000)")
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--workers", type=int, default=2, help="Dask's threads or processes")
    p.add_argument("--scheduler", choices=("threads", "processes"), default="threads")
    p.add_argument("--out", type=Path, default=Path("build/dask-embed"), help="where its index folders go (loop/, dask/: emptied first)")
    args = p.parse_args(argv)

    sentences = load_sentences(None, args.sentences)
    frame = pd.DataFrame({"id": [f"s{i}" for i in range(len(sentences))], "text": sentences})
    for ours in ("loop", "dask"):  # this recipe's own index folders, from an earlier run
        shutil.rmtree(args.out / ours, ignore_errors=True)
    # processes share the cores: each model's ONNX threads are its share of them
    settings = {"ort_threads": max(1, (os.cpu_count() or 1) // args.workers)} if args.scheduler == "processes" else {}
    print(f"{len(frame)} sentences, {args.model}, {args.partitions} partitions; {os.cpu_count()} cores")

    loop_s = plain_loop(frame, args.model, args.out / "loop", args.partitions, settings)
    print(f"in-process loop (Index.add a partition, one thread): {len(frame) / loop_s:,.0f} documents/s ({loop_s:.1f} s)")

    folder = str(args.out / "dask")
    if args.scheduler == "threads":
        worker_index(args.model, folder, settings)  # this process is the worker: its model loaded before the clock starts
    ddf = dd.from_pandas(frame, npartitions=args.partitions)
    meta = pd.DataFrame({"id": pd.Series(dtype=object), "worker": pd.Series(dtype="int64")})
    start = time.perf_counter()
    done = ddf.map_partitions(embed_partition, args.model, folder, settings, meta=meta).compute(
        scheduler=args.scheduler, num_workers=args.workers
    )
    dask_s = time.perf_counter() - start
    workers = done["worker"].nunique()
    loads = "" if args.scheduler == "threads" else ", each loading its model once inside the clock"
    print(
        f"dask map_partitions ({args.scheduler}, {args.workers} workers, {workers} process{'es' if workers > 1 else ''}{loads}):"
        f" {len(done) / dask_s:,.0f} documents/s ({dask_s:.1f} s)"
    )
    if args.scheduler == "threads":
        index = worker_index(args.model, folder, settings)
        hit = index.search(sentences[123], k=1, mode="dense")[0]
        print(f"{len(index)} documents in {os.path.relpath(index.folder)}; the first hit of sentence s123 is {hit.id}")
        index.model.close()
    print(f"dask / loop: {loop_s / dask_s:.2f}x  (dask {dask.__version__})")
    return 0


if __name__ == "__main__":
    # run as the module it is, not as __main__: Dask hashes the map step by its module, worker processes import it from
    # there, and the driver's worker_index is then the one the map step calls
    from thoughtvec.bench.dask_embed import main as run

    raise SystemExit(run())
