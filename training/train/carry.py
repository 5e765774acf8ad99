"""A training checkpoint cut to carry over a narrow link, and made whole again.

A lent GPU machine keeps nothing and returns at most a few files of 16 MiB: a full checkpoint of a wide model
(weights, two Adam moments, the fixed word-vector table) does not fit. ``pack`` keeps what cannot be rebuilt:

* the trained weights, in float32;
* Adam's second moment in bfloat16 (its first moment is dropped: with β₁ = 0.9 it refills within tens of
  steps, while the second one, β₂ = 0.999, would take thousands);
* everything else of the checkpoint (configs, vocabulary, progress, RNG states),

and drops the buffers that the family's ``build`` makes again from the vocabulary (the fixed word vectors),
as the checkpoint's ``rebuilt`` entry names them. It writes ``checkpoint.json`` (the parts' SHA-256 and what
was dropped) and parts ``checkpoint.pt.00``, ``.01``, …, each at most ``part_bytes``. ``unpack`` checks and
joins the parts, rebuilds the dropped buffers, sets the first moment to zero, and returns a checkpoint that
``thoughtvec train --resume`` and ``thoughtvec export`` read as any other.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import torch

from thoughtvec.service.bundle.atomic import atomic_write_bytes, atomic_write_text

MANIFEST = "checkpoint.json"
PART = "checkpoint.pt.{:02d}"
PART_BYTES = 15 * 2**20  # under the 16 MiB a file that a lent machine returns


def pack(ck: dict, out: str | Path, part_bytes: int = PART_BYTES) -> dict:
    """Write ``ck`` cut down into ``out`` (parts and manifest); returns the manifest. Parts are written before
    the manifest, each atomically, and stale parts of an earlier pack are removed after."""
    rebuilt = list(ck.get("rebuilt", []))
    slim = {k: v for k, v in ck.items() if k not in ("model", "optimizer")}
    slim["model"] = {k: v for k, v in ck["model"].items() if k not in rebuilt}
    opt = ck["optimizer"]
    state = {}
    for i, s in opt["state"].items():
        state[i] = {k: (v.to(torch.bfloat16) if k == "exp_avg_sq" else v) for k, v in s.items() if k != "exp_avg"}
    slim["optimizer"] = {"state": state, "param_groups": opt["param_groups"]}
    buf = io.BytesIO()
    torch.save(slim, buf)
    data = buf.getvalue()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    parts = [data[i : i + part_bytes] for i in range(0, len(data), part_bytes)] or [b""]
    names = []
    for n, chunk in enumerate(parts):
        names.append(PART.format(n))
        atomic_write_bytes(out / names[-1], chunk)
    manifest = {
        "format": 1,
        "parts": names,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "dropped": {"model": rebuilt, "optimizer": ["exp_avg"], "bfloat16": ["exp_avg_sq"]},
        "variant": ck.get("variant"),
        "progress": ck.get("progress"),
    }
    atomic_write_text(out / MANIFEST, json.dumps(manifest, indent=1) + "\n")
    for stale in out.glob("checkpoint.pt.*"):
        if stale.name not in names:
            stale.unlink()
    return manifest


def read_packed(folder: str | Path) -> dict:
    """The cut checkpoint in ``folder``, its parts checked against the manifest."""
    folder = Path(folder)
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    missing = [p for p in manifest["parts"] if not (folder / p).is_file()]
    if missing:
        raise ValueError(f"{folder}: parts {missing} missing")
    data = b"".join((folder / p).read_bytes() for p in manifest["parts"])
    if len(data) != manifest["bytes"] or hashlib.sha256(data).hexdigest() != manifest["sha256"]:
        raise ValueError(f"{folder}: the parts do not match {MANIFEST} (a part from another pack?)")
    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=False)


def unpack(folder: str | Path) -> dict:
    """A whole checkpoint from the packed ``folder``: dropped buffers rebuilt by the family, Adam's first moment
    zero, its second in float32."""
    from thoughtvec.training.train.families import family_of_variant  # noqa: PLC0415  # an import circle: the families import carry
    from thoughtvec.training.train.families.base import Prepared  # noqa: PLC0415  # an import circle: the families import carry

    ck = read_packed(folder)
    rebuilt = list(ck.get("rebuilt", []))
    if rebuilt:
        fam = family_of_variant(ck["variant"])
        model = fam.build(fam.Config(**ck["model_config"]), Prepared.from_dict(ck["prepared"]))
        whole = model.state_dict()
        ck["model"] = {**{k: whole[k] for k in rebuilt}, **ck["model"]}
    for s in ck["optimizer"]["state"].values():
        sq = s["exp_avg_sq"].float()
        s["exp_avg_sq"] = sq
        s["exp_avg"] = torch.zeros_like(sq)
    return ck
