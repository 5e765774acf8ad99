"""``thoughtvec index build`` against the embedding throughput of the same model, on real sentences.

    python -m thoughtvec.bench.build_bench --model mean-max-aae --n 20000 --rounds 3

Each round runs these three, each in a fresh process, back to back (every other round in the reverse order: on a
shared machine a ratio of neighbours is what holds):

* ``embed``: the bare embedding throughput, :meth:`EmbeddingService.embed_bulk` (the batcher, as the server runs it)
  over the sentences in chunks of 2 048, no index;
* ``build``: ``thoughtvec index build --quiet`` of the sentences (a ``.txt`` of the search sample's first ``n``) into
  a new FAISS ``Flat`` index, dense: its own documents/s (reading, embedding, each chunk written to the log, and the
  final snapshot; the model's load is not counted);
* ``encoder``: the simplest build there is, as a reference: :meth:`Encoder.encode` on the calling thread (one ONNX
  run at a time over all cores, 2 048 texts a call), then the whole index installed as one snapshot (in memory until
  then, nothing durable before the end).

Prints documents/s per round and the build's ratio to ``embed`` and to ``encoder``; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from thoughtvec.bench.load import load_sentences
from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.core.encoder import Encoder, available_providers
from thoughtvec.service.core.metrics import Metrics
from thoughtvec.service.index.backend import open_store
from thoughtvec.service.index.contents import BuiltIndex, Doc, NewIndex
from thoughtvec.service.settings import load_settings

CHUNK = 2048


def embed(bundle: Path, texts: list[str]) -> float:
    """Documents/s of the embedding service's bulk path alone."""

    async def go() -> float:
        service = EmbeddingService(load_settings(models_dir=bundle.parent, build_default_index=False), Metrics())
        service.registry.bundles = [bundle]
        await service.start()
        model = next(iter(service.registry.models.values()))
        view = model.encoder.view(None)
        started = time.perf_counter()
        for i in range(0, len(texts), CHUNK):
            await service.embed_bulk(model, view, texts[i : i + CHUNK])
        seconds = time.perf_counter() - started
        await service.stop()
        return len(texts) / seconds

    return asyncio.run(go())


def encoder(bundle: Path, texts: list[str], folder: Path) -> float:
    """Documents/s of Encoder.encode on the calling thread, then one snapshot."""
    enc = Encoder.load(bundle, providers=available_providers(), runtime=load_settings().cpu_runtime)  # as the other two: THOUGHTVEC_*
    view = enc.view(None)
    enc.encode(texts[:64], view)  # ONNX Runtime allocates
    store = open_store("faiss", index_dir=folder)
    config = store.new_config(NewIndex("encoder", enc.name, view, enc.dim(view), fingerprint=enc.fingerprint(view), mode="dense"))
    started = time.perf_counter()
    vectors = np.concatenate(
        [enc.encode(texts[i : i + CHUNK], view, normalize=False, truncation="split") for i in range(0, len(texts), CHUNK)]
    )
    store.install(BuiltIndex(config, [Doc(str(i + 1), t) for i, t in enumerate(texts)], vectors))
    store.close()
    return len(texts) / (time.perf_counter() - started)


def build(bundle: Path, source: Path, folder: Path) -> float:
    """Documents/s that ``thoughtvec index build`` reports of itself."""
    cmd = [sys.executable, "-m", "thoughtvec.service.cli", "index", "build", "--model", str(bundle), "--input", str(source),
           "--name", "build", "--index-dir", str(folder), "--mode", "dense", "--quiet"]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"([\d.]+) documents/s", out)[1])  # type: ignore[index]


def one(kind: str, bundle: Path, n: int) -> float:
    texts = load_sentences(None, n)
    with tempfile.TemporaryDirectory() as tmp:
        if kind == "embed":
            return embed(bundle, texts)
        if kind == "encoder":
            return encoder(bundle, texts, Path(tmp))
        source = Path(tmp) / "sentences.txt"
        source.write_text("".join(t.replace("\n", " ") + "\n" for t in texts), encoding="utf-8")
        return build(bundle, source, Path(tmp) / "indexes")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="mean-max-aae", help="bundle name under models/, or a bundle folder")
    p.add_argument("--n", type=int, default=20000, help="sentences of the search sample")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--one", choices=("embed", "build", "encoder"), help=argparse.SUPPRESS)  # a measurement, in its own process
    args = p.parse_args(argv)
    bundle = Path(args.model) if Path(args.model).is_dir() else Path("models") / args.model
    if args.one:
        print(f"{one(args.one, bundle.resolve(), args.n):.1f}")
        return
    print(f"{args.n} sentences of the search sample, {bundle.name}, {os.cpu_count()} cores; documents/s:")
    print("round  load   embed   build  encoder  build/embed  build/encoder")
    for r in range(1, args.rounds + 1):
        load = os.getloadavg()[0]
        rates = {}
        for kind in ("embed", "build", "encoder")[:: 1 if r % 2 else -1]:  # every other round the other way round
            cmd = [sys.executable, "-m", "thoughtvec.bench.build_bench", "--one", kind, "--model", str(bundle), "--n", str(args.n)]
            rates[kind] = float(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()[-1])
        e, b, c = rates["embed"], rates["build"], rates["encoder"]
        print(f"{r:5d}  {load:4.1f}  {e:6.0f}  {b:6.0f}  {c:7.0f}  {b / e:11.2f}  {b / c:13.2f}", flush=True)


if __name__ == "__main__":
    main()
