"""Service settings: one class, read from ``THOUGHTVEC_*`` environment variables and ``thoughtvec serve`` flags.

Every field is declared once here; :func:`settings_table` renders the documentation table and
:func:`add_cli_flags` the command-line flags from the same declarations. A misspelt variable
(``THOUGHTVEC_MAX_BACH_SIZE``) or flag is an error, never a silent default.
"""

from __future__ import annotations

import argparse
import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

ENV_PREFIX = "THOUGHTVEC_"
# THOUGHTVEC_* variables that other commands read (README: corpus and evaluation); not typos of a setting.
OTHER_COMMANDS_VARIABLES = frozenset({"THOUGHTVEC_SENTEVAL", "THOUGHTVEC_CACHE"})
# What `thoughtvec serve --workers N` hands each worker process (thoughtvec.service.http.worker_processes): its settings as
# JSON, and the folder the workers publish their readiness and metrics in.
WORKER_SETTINGS_VARIABLE, WORKER_GROUP_VARIABLE = "THOUGHTVEC_WORKER_SETTINGS", "THOUGHTVEC_WORKER_GROUP"
PACKAGE_DATA = Path(__file__).resolve().parent / "index" / "data"
# What happens to a text over the model's token limit; the one definition (core, HTTP schemas and settings use it).
Truncation = Literal["split", "truncate", "reject"]
# How an index is searched: vectors (dense), BM25 (lexical), or both fused (hybrid); the one definition.
SearchMode = Literal["dense", "lexical", "hybrid"]
RerankMode = Literal["hybrid", "dense"]  # POST /v1/rerank and its peers (scoring.RERANK_MODES)
SEARCH_MODES: tuple[SearchMode, ...] = ("dense", "lexical", "hybrid")


class IndexBackendName(StrEnum):
    """Where indexes live (setting ``index_backend``): the one list of backends, which the setting, the
    ``thoughtvec index`` commands' choices and ``thoughtvec.service.index.backend.open_store`` use."""

    faiss = "faiss"
    milvus = "milvus"


# Lists come from the environment as comma-separated strings, not JSON.
CsvList = Annotated[list[str], NoDecode]


# The model names OpenAI's and Cohere's clients send (their defaults and the names their docs show); by default each
# is an alias of the model chosen for retrieval (model_aliases `name=retrieval`).
OPENAI_MODEL_NAMES = ("text-embedding-ada-002", "text-embedding-3-small", "text-embedding-3-large")
COHERE_MODEL_NAMES = (
    "rerank-v3.5",
    "rerank-english-v3.0",
    "rerank-multilingual-v3.0",
    "embed-v4.0",
    "embed-english-v3.0",
    "embed-multilingual-v3.0",
    "embed-english-light-v3.0",
    "embed-multilingual-light-v3.0",
)


def is_lite(uri: str) -> bool:
    """A ``milvus_uri`` that is a file path (Milvus Lite, inside the process) rather than a server's address."""
    return not uri.startswith(("http://", "https://", "tcp://", "unix:"))


class Settings(BaseSettings):
    """All knobs of the server. Defaults suit one CPU machine; every limit is here."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid", validate_default=True)

    # -- where things are ------------------------------------------------------------------
    host: str = Field("127.0.0.1", description="address uvicorn binds")
    port: int = Field(8000, ge=0, le=65535, description="port uvicorn binds")
    workers: int = Field(
        1,
        ge=1,
        le=64,
        description="server processes sharing the port, each with every model loaded (one Python process tops out well below a GPU's rate); above 1, indexes in a FAISS folder are read-only (one process writes a folder: the default index is built before the workers start) and Milvus needs a server's address",
    )
    models_dir: Path = Field(Path("models"), description="folder of bundles; every bundle in it is served")
    index_dir: Path = Field(Path("data/indexes"), description="folder where search indexes persist")
    default_model: str | None = Field(
        None,
        description="model used when a request names none; unset = the first served of model_preference, else the first bundle by name",
    )
    model_aliases: CsvList = Field(
        [f"{name}=retrieval" for name in (*OPENAI_MODEL_NAMES, *COHERE_MODEL_NAMES)],
        description="comma-separated `alias=bundle` names a request's `model` may use (`=default`: the default model; `=retrieval`: the served bundle best for retrieval on dev, else the default model); listed in /v1/models. Empty: only bundle names",
    )
    model_preference: CsvList = Field(
        [],
        description="comma-separated bundle names tried in order for the default model; empty = the dev rule's order over every evaluated bundle (best mean dev cosine Spearman of the default view; within 0.002 of the best, the smallest on disk), from the model guide `thoughtvec eval report` writes (docs/RESULTS.md's 'Choices made on dev')",
    )

    # -- the default search index --------------------------------------------------------
    default_index: str = Field("default", pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$", description="name of the index built on first start")
    build_default_index: bool = Field(
        True, description="build the default index on first start when the sample and the default model exist"
    )
    search_sample: Path = Field(
        PACKAGE_DATA / "search_sample.tsv.gz", description="gzip TSV `source<TAB>sentence` the default index is built from"
    )
    default_index_max_docs: int = Field(50_000, gt=0, description="sentences taken from the sample")

    # -- dynamic batching ----------------------------------------------------------------
    max_batch_size: int = Field(32, ge=1, le=4096, description="sentences per ONNX run (1 switches batching off)")
    max_batch_tokens: int = Field(8192, ge=1, description="padded tokens per ONNX run (batch size x longest input)")
    max_wait_ms: float = Field(
        2.0,
        ge=0,
        le=1000,
        description="longest wait for more sentences once one has arrived (a lone request does not wait while waiting has not paid off)",
    )
    batch_planning: Literal["cost", "greedy"] = Field(
        "cost",
        description="how a window of queued sentences is cut into batches: `cost` times each model at warm-up and takes the cut of least predicted run time (splits a window of mixed lengths where padding costs more than a run); `greedy` fills each batch to the limits (also what `cost` does without warm-up)",
    )
    max_queue_size: int = Field(2048, ge=1, description="sentences waiting per model before requests get 429")
    retry_after_s: int = Field(1, ge=1, description="Retry-After seconds sent with 429 and 503")
    ort_threads: int = Field(
        0, ge=0, description="ONNX Runtime intra-op threads per model (0 = all usable cores; idle threads sleep unless ort_spinning)"
    )
    concurrent_runs: int = Field(
        2,
        ge=1,
        le=16,
        description="batches of one model run at once, each on its share of ONNX Runtime's threads (ort_threads, or all usable cores, over this; at least one): on 2 vCPUs two one-thread runs served every measured bundle 1.05-1.54x faster than one two-thread run. 1: one run at a time",
    )
    ort_spinning: bool = Field(
        False, description="let ONNX Runtime's idle threads spin; off leaves the cores to the HTTP loop between batches"
    )
    cpu_runtime: Literal["auto", "onnxruntime", "openvino"] = Field(
        "auto",
        description="what runs the graphs on the CPU: `auto`, each bundle's measured choice (its onnx.cpu_runtime: OpenVINO at bfloat16 where it is installed, the `openvino` extra, and the CPU has bf16 instructions, else ONNX Runtime); `onnxruntime` for every bundle; `openvino` for every bundle (bfloat16 where the CPU has it, else float32)",
    )
    prefer_cuda: bool = Field(True, description="use CUDAExecutionProvider / GPU FAISS when present")
    warmup: bool = Field(True, description="run each model on a few inputs before /ready turns true")

    # -- request limits ------------------------------------------------------------------
    max_inputs: int = Field(
        2048, ge=1, description="texts per request (embeddings input, similarity texts, search queries, documents added)"
    )
    max_input_chars: int = Field(20_000, ge=1, description="characters per text")
    max_request_chars: int = Field(
        1_000_000,
        ge=1,
        description="characters per request, all its texts together (checked before any is tokenized; 413 `request_too_large` beyond)",
    )
    max_request_tokens: int = Field(
        300_000,
        ge=1,
        description="tokens per request, all its texts together (the parts of split texts; the tokens /tokenize lists), as OpenAI's embeddings limit; 413 `request_too_large` beyond",
    )
    max_query_chars: int = Field(
        2_000, ge=1, description="characters per search query text (`/v1/search`, the map's `query`); 413 `input_too_long` beyond"
    )
    max_response_bytes: int = Field(
        64 * 2**20,
        ge=1024,
        description="largest answer in bytes, estimated before the work (vectors x dimensions, tokens listed, search hits with their text and metadata); 413 `request_too_large` beyond",
    )
    truncation: Truncation = Field(
        "split",
        description="text over the bundle's max_input_tokens: `split` into sentences (windows for a sentence still too long), embed each, pool (mean of unit vectors); `truncate` to the limit; or `reject` (413). Requests may override it (`truncation` field). Over max_input_chars: 413 unless `truncate`",
    )
    max_k: int = Field(1000, ge=1, description="largest k a search may ask for")
    max_generate_tokens: int = Field(
        64, ge=1, le=1024, description="words a generated sentence may have (`max_tokens` of `POST /v1/generate`)"
    )
    max_beam_width: int = Field(8, ge=1, le=64, description="largest `beam_width` of `POST /v1/generate`")
    max_generate_count: int = Field(
        16,
        ge=1,
        le=256,
        description="sentences one `POST /v1/generate` decodes: samples (`count`), story sentences (`story`) or points on a path (`steps`)",
    )
    max_body_bytes: int = Field(16 * 2**20, ge=1024, description="largest request body in bytes (413 beyond)")
    max_metadata_bytes: int = Field(4096, ge=0, description="UTF-8 JSON size of one document's metadata")
    max_metadata_depth: int = Field(16, ge=1, le=64, description="nesting levels of one document's metadata (the object itself is 1)")

    # -- security ------------------------------------------------------------------------
    api_keys: CsvList = Field(
        [],
        description="comma-separated Bearer keys; empty = no auth. Every route but `GET /health` and the playground page (`GET /`) needs one",
    )
    admin_keys: CsvList = Field([], description="comma-separated Bearer keys for index writes; empty = any API key may write")
    cors_origins: CsvList = Field([], description="comma-separated origins allowed by CORS (`*` for any); empty = CORS off")

    # -- indexes -------------------------------------------------------------------------
    index_wal_max_mb: int = Field(64, ge=1, description="an index's write-ahead log is folded into a fresh snapshot past this size")
    index_read_only: bool = Field(
        False,
        description="serve the FAISS index folder read-only: index writes answer 409 `indexes_read_only` and no default index is built. Read-only servers share a folder with each other, never with a process that writes it (one process writes a folder, alone: either refuses to start beside the other, as a reader beside a writer would serve a stale copy)",
    )
    index_backend: IndexBackendName = Field(
        IndexBackendName.faiss,
        description=f"where indexes live: `{IndexBackendName.faiss}` (this process's memory, persisted under index_dir) or `{IndexBackendName.milvus}` (at milvus_uri, shared by every replica pointed at it; needs the `milvus` extra)",
    )
    milvus_uri: str = Field(
        "data/milvus.db",
        description="with index_backend=milvus: a file path runs Milvus Lite inside this process (one process per file); `http://host:port` is a Milvus standalone or cluster",
    )
    milvus_token: str = Field("", description="Milvus credentials (`user:password` or an API key); empty = none")
    milvus_collection_prefix: str = Field(
        "thoughtvec_",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$",
        description="Milvus collections are named `<prefix><index name>`: deployments sharing one Milvus keep apart by prefix",
    )
    milvus_timeout_s: int = Field(
        3,
        ge=1,
        le=600,
        description="deadline of one Milvus call, in seconds; after a call found Milvus unreachable, calls answer 503 at once for as long",
    )
    milvus_retries: int = Field(
        1, ge=0, le=10, description="extra attempts of a Milvus call that found it unreachable, before a 503 `storage_unavailable`"
    )

    # -- logging -------------------------------------------------------------------------
    log_level: Literal["debug", "info", "warning", "error"] = Field("info", description="server log level")
    access_log: bool = Field(False, description="uvicorn access log (one line per request)")

    # -- traces ----------------------------------------------------------------------------
    otlp_endpoint: str = Field(
        "",
        description="send each request's trace (its parse, queue, run and answer stages) by OTLP to this collector, e.g. `http://localhost:4317`; empty = no traces, at no cost. Needs the `otel` extra (`pip install 'thoughtvec[otel]'`)",
    )
    otlp_protocol: Literal["grpc", "http/protobuf"] = Field(
        "grpc", description="OTLP's transport: `grpc` (a collector's port 4317, as TEI sends) or `http/protobuf` (port 4318)"
    )
    otlp_service_name: str = Field("thoughtvec", min_length=1, description="the traces' `service.name`")

    @field_validator("model_aliases", "model_preference", "api_keys", "admin_keys", "cors_origins", mode="before")
    @classmethod
    def _split_csv(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [s.strip() for s in v.split(",") if s.strip()]
        return v

    @field_validator("model_aliases")
    @classmethod
    def _aliases(cls, v: list[str]) -> list[str]:
        for item in v:
            alias, eq, target = item.partition("=")
            if not eq or not alias.strip() or not target.strip():
                raise ValueError(f"model_aliases item {item!r} is not alias=bundle (or alias=default)")
        return v

    @property
    def aliases(self) -> dict[str, str]:
        """alias -> bundle name (or ``default``)."""
        return dict((a.strip(), t.strip()) for a, _, t in (item.partition("=") for item in self.model_aliases))

    @model_validator(mode="after")
    def _limits(self) -> Settings:
        if self.max_queue_size < self.max_batch_size:
            raise ValueError(f"max_queue_size ({self.max_queue_size}) must be at least max_batch_size ({self.max_batch_size})")
        if self.index_read_only and self.index_backend == IndexBackendName.milvus:
            raise ValueError(
                "index_read_only is for a FAISS index folder (index_backend=faiss); Milvus shares its indexes with every"
                " replica, each of which writes them"
            )
        if self.workers > 1 and self.index_backend == IndexBackendName.milvus and is_lite(self.milvus_uri):
            raise ValueError(
                f"workers={self.workers} cannot share Milvus Lite ({self.milvus_uri}: one process opens a Lite file);"
                " give milvus_uri a Milvus server's address (http://host:19530), or use index_backend=faiss"
            )
        return self


def check_environment(environ: dict[str, str] | None = None) -> None:
    """Raise ``ValueError`` for a ``THOUGHTVEC_*`` variable that names no setting (a typo)."""
    known = {ENV_PREFIX + name.upper() for name in Settings.model_fields} | OTHER_COMMANDS_VARIABLES
    known |= {WORKER_SETTINGS_VARIABLE, WORKER_GROUP_VARIABLE}
    unknown = sorted(k for k in (os.environ if environ is None else environ) if k.upper().startswith(ENV_PREFIX) and k.upper() not in known)
    if unknown:
        raise ValueError(f"unknown setting(s) in the environment: {', '.join(unknown)}; known: {', '.join(sorted(known))}")


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment (checked for typos), then ``overrides`` (CLI flags) on top."""
    check_environment()
    return Settings(**overrides)


def _default_text(name: str) -> str:
    field = Settings.model_fields[name]
    value = field.default
    if isinstance(value, list):
        return ",".join(value) or "(empty)"
    if value is None:
        return "(unset)"
    if value == "":
        return "(empty)"
    if isinstance(value, Path) and value.is_absolute():
        try:
            return str(value.relative_to(Path.cwd()))
        except ValueError:
            return str(value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def flag_name(name: str) -> str:
    return "--" + name.replace("_", "-")


def flags_text(name: str) -> str:
    """The flag as typed: a boolean has two (``--warmup`` / ``--no-warmup``), the other one than the default first."""
    flag = flag_name(name)
    if Settings.model_fields[name].annotation is not bool:
        return f"`{flag}`"
    off = "--no-" + flag[2:]
    return f"`{off}` / `{flag}`" if Settings.model_fields[name].default else f"`{flag}` / `{off}`"


def settings_table() -> str:
    """The Markdown table of every setting: variable, flag(s), default, meaning."""
    rows = ["| environment variable | `thoughtvec serve` flag | default | meaning |", "|---|---|---|---|"]
    for name, field in Settings.model_fields.items():
        rows.append(f"| `{ENV_PREFIX}{name.upper()}` | {flags_text(name)} | `{_default_text(name)}` | {field.description} |")
    return "\n".join(rows)


def add_cli_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per setting; an unset flag leaves the environment's value (or the default) alone."""
    group = parser.add_argument_group("settings (each also THOUGHTVEC_<NAME>; see `thoughtvec serve --settings-table`)")
    for name, field in Settings.model_fields.items():
        help_text = f"{field.description} (default: {_default_text(name)})".replace("%", "%%")
        if field.annotation is bool:
            group.add_argument(flag_name(name), dest=name, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS, help=help_text)
        else:
            group.add_argument(flag_name(name), dest=name, default=argparse.SUPPRESS, metavar=name.upper(), help=help_text)


def overrides_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given as flags (pydantic converts and validates the strings)."""
    return {name: getattr(args, name) for name in Settings.model_fields if hasattr(args, name)}
