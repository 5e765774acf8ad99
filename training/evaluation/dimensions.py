"""How much of a view's similarity survives fewer ``dimensions``: cosine Spearman on the STS-B and SICK-R
dev pairs at each size (the vector projected on the view's principal axes, as the server does, and, for
comparison, its first ``d`` coordinates), and STS-B **test** at one size beside the full vector (reported,
never used to choose).

    python -m thoughtvec.training.evaluation.dimensions --bundle models/invertible-bijection --bundle models/uni-skip
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from thoughtvec.service.bundle.postprocess import l2_normalize
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.training.evaluation import datasets
from thoughtvec.training.evaluation.dev_pairs import load_dev_pairs
from thoughtvec.training.export.postprocess import SIZES


def spearman(u: np.ndarray, v: np.ndarray, gold: np.ndarray) -> float:
    return float(spearmanr(np.sum(l2_normalize(u) * l2_normalize(v), 1), gold)[0])


def measure(bundle: Path, view: str | None, sizes: tuple[int, ...], test_size: int, data_root: Path | None,
            check_counts: bool = True) -> dict:  # fmt: skip
    """``{"dev": {size: (projected, cut)}, "test": {"full": ρ, test_size: ρ}}`` for one view (sizes over its axes left out)."""
    enc = Encoder.load(bundle)
    name = enc.view(view)
    axes = enc.spec.views[name].axes
    dev = load_dev_pairs(data_root, check_counts)
    test = datasets.load_task("STSBenchmark", data_root, check_counts=check_counts).pairs("test")
    texts = list(dict.fromkeys([*dev.sentences(), *test.first, *test.second]))
    full = dict(zip(texts, enc.encode(texts, name, normalize=False)))
    dim = enc.dim(name)
    fits = [d for d in sizes if d < dim and axes is not None and d <= axes.count] + [dim]
    out: dict = {"view": name, "dim": dim, "axes": axes.count if axes else 0, "dev": {}, "test": {}}

    def pair_scores(sents_a, sents_b, gold, d):
        a, b = np.stack([full[s] for s in sents_a]), np.stack([full[s] for s in sents_b])
        return spearman(enc.reduce(a, name, d), enc.reduce(b, name, d), gold), spearman(a[:, :d], b[:, :d], gold)

    for d in fits:
        per = [pair_scores(a, b, g, d) for a, b, g in dev.tasks.values()]
        out["dev"][d] = tuple(float(np.mean(x)) for x in zip(*per))
    gold = np.asarray(test.scores, np.float64)
    out["test"]["full"] = pair_scores(test.first, test.second, gold, dim)[0]
    if test_size in fits:
        out["test"][test_size] = pair_scores(test.first, test.second, gold, test_size)[0]
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bundle", action="append", required=True, type=Path)
    p.add_argument("--view", help="default: each bundle's default view")
    p.add_argument("--sizes", default=",".join(map(str, SIZES)))
    p.add_argument("--test-size", type=int, default=256)
    p.add_argument("--data", type=Path, help="SentEval downstream folder (default $THOUGHTVEC_SENTEVAL or ../shared/data/senteval)")
    args = p.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(","))
    print("| bundle | view | axes | " + " | ".join(f"dev ρ @{d}" for d in sizes) + " | dev ρ full | "
          f"STS-B test ρ @{args.test_size} | STS-B test ρ full |")  # fmt: skip
    print("|---|---|---:|" + "---:|" * (len(sizes) + 3))
    for b in args.bundle:
        m = measure(b, args.view, sizes, args.test_size, args.data)
        cells = [f"{m['dev'][d][0]:.4f} (cut {m['dev'][d][1]:.4f})" if d in m["dev"] else "–" for d in sizes]
        t = m["test"]
        at = f"{t[args.test_size]:.4f}" if args.test_size in t else "–"
        row = [b.name, m["view"], str(m["axes"]), *cells, f"{m['dev'][m['dim']][0]:.4f}", at, f"{t['full']:.4f}"]
        print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
