"""Published numbers, transcribed from the papers in ``../shared/papers`` (file, table, row).

Units are ours: accuracies and F1 in percent, correlations in [-1, 1] (the invertible-decoders
paper prints SICK-R Pearson × 100; we divide by 100), MSE as printed. A missing value is a task
the row's table does not report. "GloVe BOW" rows are Conneau et al.'s (2017) 300-d GloVe 840B
average, not the 50-d GloVe 6B average our ``glove-avg`` baseline uses.
"""

from __future__ import annotations

from dataclasses import dataclass

KIROS = "Kiros et al. 2015, Skip-Thought Vectors (NIPS) — shared/papers/skip-thought-vectors.txt"
ZHANG = "Zhang et al. 2018, mean-max attention autoencoder (EMNLP) — shared/papers/mean-max-attention-autoencoder.txt"
TANG = "Tang & de Sa 2019, Exploiting Invertible Decoders for Unsupervised Sentence Representation Learning (ACL) — shared/papers/invertible-decoders.txt"
CITATIONS = {"skip-thought": KIROS, "mean-max AAE": ZHANG, "invertible decoders": TANG}


@dataclass(frozen=True)
class Published:
    label: str
    paper: str  # key of CITATIONS
    table: str
    scores: dict[str, float]  # "TASK" (accuracy) or "TASK.metric"

    @property
    def cite(self) -> str:
        return f"{self.paper}, {self.table}"


def _cls(mr, cr, subj, mpqa, sst, trec) -> dict[str, float]:
    vals = {"MR": mr, "CR": cr, "SUBJ": subj, "MPQA": mpqa, "SST2": sst, "TREC": trec}
    return {k: v for k, v in vals.items() if v is not None}


def _row(label, paper, table, cls=(None,) * 6, mrpc=None, sick_e=None, sick_r=None, sick_r_cos=None) -> Published:
    s = _cls(*cls)
    if mrpc is not None:
        s["MRPC"], s["MRPC.f1"] = mrpc
    if sick_e is not None:
        s["SICK-E"] = sick_e
    if sick_r is not None:  # (pearson, spearman, mse); spearman and mse may be None
        for metric, v in zip(("pearson", "spearman", "mse"), sick_r):
            if v is not None:
                s[f"SICK-R.{metric}"] = v
    if sick_r_cos is not None:
        s["SICK-R-cos.pearson"] = sick_r_cos
    return Published(label, paper, table, s)


PUBLISHED: list[Published] = [
    # skip-thought: Table 7 (classification), Table 4 (SICK-R left, MRPC right); uni 2400-d, bi 2400-d, combine 4800-d
    _row("uni-skip", "skip-thought", "Tables 4, 7", (75.5, 79.3, 92.1, 86.9, None, 91.4), (73.0, 81.9), None, (0.8477, 0.7780, 0.2872)),
    _row("bi-skip", "skip-thought", "Tables 4, 7", (73.9, 77.9, 92.5, 83.3, None, 89.4), (71.2, 81.2), None, (0.8405, 0.7696, 0.2995)),
    _row("combine-skip", "skip-thought", "Tables 4, 7", (76.5, 80.1, 93.6, 87.1, None, 92.2), (73.0, 82.0), None, (0.8584, 0.7916, 0.2687)),
    # mean-max AAE: Table 1 (10 transfer tasks; † rows quoted there from Conneau et al. 2017), Table 3 (pooling)
    _row("mean-max AAE", "mean-max AAE", "Table 1", (78.7, 82.3, 93.4, 88.8, 83.8, 91.4), (75.5, 82.6), 83.5, (0.854, None, None)),
    _row("mean AAE", "mean-max AAE", "Table 3", (78.6, 81.6, 93.3, 88.6, 83.5, 90.2), (74.8, 82.3), 82.2, (0.851, None, None)),
    _row("max AAE", "mean-max AAE", "Table 3", (78.6, 81.4, 93.1, 88.7, 82.8, 90.6), (75.1, 82.5), 82.2, (0.851, None, None)),
    _row("combine-skip (SentEval)†", "mean-max AAE", "Table 1", (76.5, 80.1, 93.6, 87.1, 82.0, 92.2), (73.0, 82.0), 82.3, (0.858, None, None)),
    _row("skip-thoughts+LN†", "mean-max AAE", "Table 1", (79.4, 83.1, 93.7, 89.3, 82.9, 88.4), None, 79.5, (0.858, None, None)),
    _row("GloVe BOW (300-d 840B)†", "mean-max AAE", "Table 1", (78.7, 78.5, 91.6, 87.6, 79.8, 83.6), (72.1, 80.9), 78.6, (0.800, None, None)),
    # invertible decoders, BookCorpus models: Table 2 (supervised; SICK-R as Pearson), Table 3 (unsupervised SICK14)
    _row("B-Linear z_en", "invertible decoders", "Tables 2, 3", (80.4, 82.8, 94.0, 89.1, 84.6, 89.4), (75.1, 83.4), 83.4, (0.869, None, None), 0.698),
    _row("B-Linear z_de", "invertible decoders", "Tables 2, 3", (79.0, 82.0, 93.5, 88.8, 82.8, 88.2), (73.7, 82.5), 84.3, (0.873, None, None), 0.722),
    _row("B-Linear z", "invertible decoders", "Tables 2, 3", (81.3, 83.5, 94.6, 89.5, 85.9, 90.0), (76.5, 83.7), 85.2, (0.881, None, None), 0.738),
    _row("B-Bijection+Linear z_en", "invertible decoders", "Tables 2, 3", (80.4, 82.2, 94.1, 89.0, 83.7, 87.4), (74.6, 83.0), 83.3, (0.873, None, None), 0.698),
    _row("B-Bijection+Linear z_de", "invertible decoders", "Tables 2, 3", (78.5, 80.6, 92.5, 88.1, 82.0, 83.0), (74.1, 82.0), 81.2, (0.851, None, None), 0.708),
    _row("B-Bijection+Linear z", "invertible decoders", "Tables 2, 3", (80.9, 82.7, 94.4, 89.0, 84.2, 89.8), (75.9, 83.4), 85.1, (0.877, None, None), 0.728),
]  # fmt: skip
