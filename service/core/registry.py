"""Every bundle under ``models_dir``: its encoder, its batcher, its relatedness head, its readiness.

Loading happens in the background after the server starts, so ``/health`` answers at once and
``/ready`` says what is still pending. A bundle that fails to load is reported, not fatal.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from thoughtvec.service.bundle.format import discover_bundles, load_bundle
from thoughtvec.service.bundle.heads import RelatednessHead
from thoughtvec.service.bundle.heads import load as load_head
from thoughtvec.service.core.batcher import Batcher, BatchLimits, Observer
from thoughtvec.service.core.encoder import Encoder, available_providers
from thoughtvec.service.core.results import ModelDescription, ViewDescription
from thoughtvec.service.errors import BundleError, NotReady, UnknownModel
from thoughtvec.service.model_guide import Guide
from thoughtvec.service.settings import Settings

log = logging.getLogger(__name__)

WARMUP_TEXTS = (
    "hello .",
    "the cat sat on the mat and looked out of the window at the rain .",
    "it was the best of times , it was the worst of times , it was the age of wisdom , it was the age of "
    "foolishness , it was the epoch of belief , it was the epoch of incredulity , it was the season of light .",
)


def usable_cores() -> int:
    """Cores this process may use: its CPU affinity, capped by a cgroup v2 quota (a container's --cpus)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, int(int(quota) / int(period))))
    except (OSError, ValueError):
        pass  # no cgroup v2 limit visible: affinity it is
    return cores


def default_ort_threads() -> int:
    """All usable cores. ONNX Runtime's idle threads sleep (``ort_spinning`` off), so between batches the
    HTTP loop has every core; during one, the batch goes faster. On 2 cores, against
    cores − 1 (``thoughtvec bench --server-flag=--ort-threads=1``): 32-sentence requests +40–80 % on all
    three measured bundles, 1-sentence requests at concurrency 64 +0–55 % (docs/BENCHMARKS.md)."""
    return usable_cores()


def run_threads(settings: Settings) -> int:
    """ONNX Runtime's intra-op threads for one run: ``ort_threads`` (or all usable cores) shared by the
    ``concurrent_runs`` a model may have at once."""
    return max(1, (settings.ort_threads or default_ort_threads()) // settings.concurrent_runs)


@dataclass(eq=False)
class Model:
    """One served bundle."""

    encoder: Encoder
    batcher: Batcher
    head: RelatednessHead | None = None
    head_view: str | None = None
    warmed: bool = False

    @property
    def name(self) -> str:
        return self.encoder.name

    def describe(self, default: bool, guide: Guide, provenance: bool = True) -> ModelDescription:
        """The model as ``/v1/models/{name}`` shows it, with what ``guide`` says it is for where it measured this very
        bundle; without ``provenance`` (the bundle's training record, kilobytes a bundle) as the ``/v1/models`` list
        does."""
        spec = self.encoder.spec
        return ModelDescription(
            id=spec.name,
            name=spec.name,
            family=spec.family,
            variant=spec.variant,
            description=spec.description,
            dimension=spec.views[spec.default_view].dim,
            default_view=spec.default_view,
            views={k: ViewDescription(v.dim, v.pooling, v.description, v.axes.count if v.axes else 0) for k, v in spec.views.items()},
            max_input_tokens=spec.max_input_tokens,
            relatedness_head=self.head is not None,
            providers=list(self.encoder.providers),
            runtime=self.encoder.runtime,
            default=default,
            **guide.entry(spec.name, self.encoder.fingerprint()),  # what it is for, chosen on dev, and its dev figures
            training=spec.training if provenance else None,
        )


def pick_default_model(settings: Settings, guide: Guide, names: Iterable[str], unmeasured: Iterable[str] = ()) -> str | None:
    """The model a request that names none gets, among the bundles ``names``: the ``default_model`` setting, else the
    first there of ``model_preference``, else of the guide's ``default_models`` (the dev rule's order over every
    evaluated bundle) leaving out the bundles loaded ``unmeasured``, else the first by name."""
    names = set(names)
    if settings.default_model:
        return settings.default_model
    if settings.model_preference:
        order: Iterable[str] = settings.model_preference
    else:
        order = [n for n in guide.default_models() if n not in set(unmeasured)]
    return next((n for n in order if n in names), min(names) if names else None)


def pick_retrieval_model(settings: Settings, guide: Guide, names: Iterable[str], unmeasured: Iterable[str] = ()) -> str | None:
    """What an alias ``=retrieval`` names among the bundles ``names``: the first there of the guide's
    ``retrieval_models`` (by dense nDCG@10 on dev) that it measured, else the default model."""
    names, skip = set(names), set(unmeasured)
    found = next((n for n in guide.retrieval_models() if n in names and n not in skip), None)
    return found or pick_default_model(settings, guide, names, unmeasured)


@dataclass
class Registry:
    settings: Settings
    observer: Observer | None = None
    models: dict[str, Model] = field(default_factory=dict)
    discovered: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    started: bool = False  # load_all finished (each bundle loaded or failed)
    guide: Guide = field(default_factory=Guide)  # the dev choices: read from models_dir when the registry is made
    unmeasured: set[str] = field(default_factory=set)  # loaded bundles the guide did not measure (no rule names them)
    bundles: list[Path] | None = None  # the bundle folders served; None: every bundle under models_dir (the Python API serves one)
    _picked: tuple[tuple, tuple[str | None, str | None]] | None = field(default=None, init=False, repr=False)  # see _picks
    _aliases: tuple[tuple[str, ...], dict[str, str]] | None = field(default=None, init=False, repr=False)  # see alias_table

    def __post_init__(self) -> None:
        if self.guide.source is None and not self.guide.data:
            self.guide = Guide.load(self.settings.models_dir)

    def _check_measured(self, model: Model) -> None:
        """Mark a loaded bundle unmeasured where the guide did not measure it (not in it, or another export: its
        fingerprint differs), saying so: no dev choice then applies to it."""
        name, now = model.name, model.encoder.fingerprint()
        if self.guide.measured(name, now):
            return
        self.unmeasured.add(name)
        known = self.guide.fingerprint(name)
        why = f"its fingerprint is {now}, the guide measured {known}" if known else "the model guide does not know it"
        if self.guide.source is not None:
            log.info("%s is unmeasured (%s): no dev choice applies to it (default model, retrieval, hybrid search)", name, why)

    def _limits(self) -> BatchLimits:
        s = self.settings
        return BatchLimits(s.max_batch_size, s.max_batch_tokens, s.max_wait_ms, s.max_queue_size, s.retry_after_s, s.concurrent_runs)

    def _load_one(self, path: Path) -> Model:
        bundle = load_bundle(path)
        providers = available_providers(self.settings.prefer_cuda)
        spin = "1" if self.settings.ort_spinning else "0"
        encoder = Encoder(
            bundle,
            providers=providers,
            threads=run_threads(self.settings),
            session_config={"session.intra_op.allow_spinning": spin, "session.inter_op.allow_spinning": spin},
            runtime=self.settings.cpu_runtime,
            runs=self.settings.concurrent_runs,
        )
        head, head_view = None, None
        spec = bundle.spec.heads.get("relatedness")
        if spec is not None:
            head = load_head(bundle.file(spec.file))
            head_view = spec.view
            if head.dim != bundle.spec.views[head_view].dim:
                raise ValueError(f"heads.relatedness expects dim {head.dim}, view '{head_view}' has {bundle.spec.views[head_view].dim}")
        rt = encoder.runtime
        log.info(
            "loaded %s (%s/%s, views %s, %s %s at %s: %s%s%s)",
            bundle.name,
            bundle.spec.family,
            bundle.spec.variant,
            list(bundle.spec.views),
            rt.name,
            rt.version,
            rt.precision,
            rt.note,
            f", providers {encoder.providers}" if encoder.providers else "",
            ", relatedness head" if head else "",
        )
        return Model(encoder, Batcher(bundle.name, encoder, self._limits(), self.observer), head, head_view)

    async def load_all(self) -> None:
        """Load, start and warm every bundle, one at a time (ONNX sessions load off the event loop)."""
        loop = asyncio.get_running_loop()
        paths = discover_bundles(self.settings.models_dir) if self.bundles is None else list(self.bundles)
        self.discovered = [p.name for p in paths]
        if not paths:
            log.warning("no bundles under %s", self.settings.models_dir)
        for path in paths:
            try:
                model = await loop.run_in_executor(None, self._load_one, path)
            except Exception as e:  # noqa: BLE001 - report it in /ready, serve the others
                log.error("bundle %s not loaded: %s", path, e)
                self.failed[path.name] = unloadable(e, path)
                continue
            if model.name in self.models:
                self.failed[path.name] = f"a bundle named '{model.name}' is already loaded"
                continue
            model.batcher.start()
            self._check_measured(model)
            self.models[model.name] = model
            if self.settings.warmup:
                for view in model.encoder.spec.views:
                    await model.batcher.warm_up(view, WARMUP_TEXTS)
                if self.settings.batch_planning == "cost":
                    await model.batcher.calibrate(model.encoder.spec.default_view, WARMUP_TEXTS)
            model.warmed = True
        self.started = True

    async def stop(self) -> None:
        for m in self.models.values():
            await m.batcher.stop()

    # -- lookups -------------------------------------------------------------------------
    def _servable(self) -> set[str]:
        """The bundles a rule may name: those loaded, and while loading goes on, those still to come (a rule's
        model is then awaited, never stood in for by whichever loaded first)."""
        coming = set() if self.started else set(self.discovered) - set(self.failed)
        return set(self.models) | coming

    def _picks(self) -> tuple[str | None, str | None]:
        """(default model, retrieval model), chosen again only when what may be served changes: every request
        that names no model, or an alias, asks."""
        key = (
            len(self.models),
            len(self.discovered),
            len(self.failed),
            self.started,
            self.settings.default_model,
            tuple(self.settings.model_preference),
        )
        if self._picked is None or self._picked[0] != key:
            servable = self._servable()
            picks = (
                pick_default_model(self.settings, self.guide, servable, self.unmeasured),
                pick_retrieval_model(self.settings, self.guide, servable, self.unmeasured),
            )
            self._picked = (key, picks)
        return self._picked[1]

    @property
    def default_model(self) -> str | None:
        return self._picks()[0]

    @property
    def retrieval_model(self) -> str | None:
        """The model chosen for retrieval on dev among those a rule may name (OpenAI's names, a new index's model)."""
        return self._picks()[1]

    @property
    def alias_table(self) -> dict[str, str]:
        """The ``model_aliases`` setting as alias -> target, parsed again only when the setting changes."""
        source = tuple(self.settings.model_aliases)
        if self._aliases is None or self._aliases[0] != source:
            self._aliases = (source, self.settings.aliases)
        return self._aliases[1]

    def resolve(self, name: str) -> str | None:
        """A bundle name for ``name``: itself, or what the ``model_aliases`` setting maps it to."""
        if name in self.models:
            return name
        target = self.alias_table.get(name)
        if target is None:
            return name
        if target == "retrieval":
            return self.retrieval_model
        return self.default_model if target == "default" else target

    def aliases(self) -> dict[str, str]:
        """Each alias and the bundle it names now (aliases of a bundle not loaded are left out)."""
        out = {a: self.resolve(a) for a in self.alias_table if a not in self.models}
        return {a: t for a, t in out.items() if t in self.models}

    def get(self, name: str | None, field_name: str = "model") -> Model:
        """The model called ``name`` (``None``: the default); 404 if unknown, 503 while loading."""
        name = self.resolve(name) if name else self.default_model
        if name is None:
            raise NotReady(
                "no model is loaded yet"
                if not self.started
                else "no models are served (no bundle of the models folder, models_dir, could be loaded)",
                field=field_name,
            )
        model = self.models.get(name)
        if model is None:
            if not self.started and (not self.discovered or name in self.discovered) and name not in self.failed:
                raise NotReady(f"model '{name}' is not loaded yet", field=field_name)
            aliases = f" and the aliases {sorted(self.settings.aliases)}" if self.settings.aliases else ""
            raise UnknownModel(f"no model '{name}'; the models are {sorted(self.models)}{aliases}", field=field_name)
        if not model.warmed:
            raise NotReady(f"model '{name}' is warming up", field=field_name)
        return model

    def readiness(self) -> tuple[bool, dict]:
        """(ready, body): ready when every discovered bundle is loaded or failed, each loaded one warmed and its worker alive."""
        pending = [
            n
            for n in self.discovered
            if n not in self.failed and not any(m.encoder.bundle.path.name == n and m.warmed for m in self.models.values())
        ]
        dead = [n for n, m in self.models.items() if m.warmed and not m.batcher.alive]
        models = {n: ("dead worker" if n in dead else "ready" if m.warmed else "warming up") for n, m in self.models.items()}
        ok = self.started and not pending and not dead and bool(self.models)
        body = {"ready": ok, "models": models, "pending": pending, "failed": self.failed, "default_model": self.default_model}
        if self.started and not self.models:
            body["problem"] = "no bundle could be served from the models folder (models_dir); the server log says why"
        return ok, body


def unloadable(e: Exception, folder: Path) -> str:
    """Why the bundle in ``folder`` is not served, as ``/ready`` shows it to clients: a bundle error's field and problem,
    an OS error's reason, any other error's words with the bundle's folder by its name (the models folder is the
    server's business: the log names it)."""
    if isinstance(e, BundleError):
        return f"{e.field}: {e.problem}"
    if isinstance(e, OSError):
        return f"its files cannot be read: {e.strerror or 'an I/O error'}"
    text = str(e).replace(str(folder.resolve()), folder.name).replace(str(folder), folder.name).strip()
    return text.splitlines()[0][:300] if text else "it could not be loaded; the server log has the error"
