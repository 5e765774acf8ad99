"""The errors the service raises: what went wrong (a class and a ``code``), never how to say it over HTTP.

Messages name the field, the limit and the value, e.g.
``input[3] has 812 tokens; the limit is 512``. The HTTP layer's one table
(``thoughtvec.service.http.middleware.STATUS``) maps each class to a status and a body per API family
(OpenAI's and this API's, TEI's, Cohere's).
"""

from __future__ import annotations

from thoughtvec.service.bundle.errors import BundleError, ThoughtvecError

__all__ = ["BundleError", "ThoughtvecError"]  # the contract's errors, listed with the serving ones


class InvalidInput(ThoughtvecError):
    code = "invalid_input"


class EmptyInput(InvalidInput):
    """Nothing to embed: an empty list, or a text that is empty or only whitespace (TEI answers these apart)."""


class InputTooLong(ThoughtvecError):
    code = "input_too_long"


class TooManyInputs(ThoughtvecError):
    code = "too_many_inputs"


class RequestTooLarge(ThoughtvecError):
    """A request over a limit of the work or the answer it asks for: characters or tokens in all, answer bytes."""

    code = "request_too_large"


class UnknownModel(ThoughtvecError):
    code = "unknown_model"


class UnknownView(ThoughtvecError):
    code = "unknown_view"


class UnknownIndex(ThoughtvecError):
    code = "unknown_index"


class Conflict(ThoughtvecError):
    code = "conflict"


class IndexesReadOnly(Conflict):
    """An index write to a server whose indexes only one other process may write (``workers`` over a FAISS folder)."""

    code = "indexes_read_only"


class QueueFull(ThoughtvecError):
    code = "queue_full"

    def __init__(self, message: str, retry_after_s: float = 1.0):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class StorageUnavailable(ThoughtvecError):
    """The index folder cannot be written (a read-only replica, a full or failing disk)."""

    code = "storage_unavailable"


class IndexUnavailable(ThoughtvecError):
    """An index on disk that cannot be served (its log cannot be replayed, an unsupported factory)."""

    code = "index_unavailable"


class NotReady(ThoughtvecError):
    code = "not_ready"


class WorkerDead(ThoughtvecError):
    """A batcher's worker stopped; the model answers nothing until the server restarts."""

    code = "worker_dead"


# -- raised at the HTTP edge: the request rules, the router, the body parser -------------------------
class BodyTooLarge(ThoughtvecError):
    code = "body_too_large"


class Unauthorized(ThoughtvecError):
    code = "unauthorized"


class Forbidden(ThoughtvecError):
    code = "forbidden"


class InvalidRequest(ThoughtvecError):
    """The body does not validate against the route's schema (a missing, misspelt or mistyped field)."""

    code = "invalid_request"


class MalformedJson(ThoughtvecError):
    code = "malformed_json"


class NotFound(ThoughtvecError):
    code = "not_found"


class MethodNotAllowed(ThoughtvecError):
    code = "method_not_allowed"


class ClientClosed(ThoughtvecError):
    """The client went away before the answer was ready (nobody reads the answer; the metrics count it)."""

    code = "client_closed_request"


# -- refused at start-up, to the operator: never an HTTP answer, so no ThoughtvecError (the HTTP table maps those) ----
class IndexFolderLocked(Exception):
    """Another process holds the index folder (one process writes a folder), or its lock cannot be taken: the server
    does not start and the ``thoughtvec index`` commands stop. The message names the folder as configured
    (``index_dir``) and what to do."""
