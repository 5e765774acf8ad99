"""Domain errors raised by the core. The HTTP layer maps each class to one status code.

Messages name the field, the limit and the value, e.g.
``input[3] has 812 tokens; the limit is 512``.
"""

from __future__ import annotations

from thoughtvec.service.bundle.errors import BundleError, ThoughtvecError

__all__ = ["BundleError", "ThoughtvecError"]  # the contract's errors, listed with the serving ones


class InvalidInput(ThoughtvecError):
    status = 422
    code = "invalid_input"


class InputTooLong(ThoughtvecError):
    status = 413
    code = "input_too_long"


class TooManyInputs(ThoughtvecError):
    status = 413
    code = "too_many_inputs"


class RequestTooLarge(ThoughtvecError):
    """A request over a limit of the work or the answer it asks for: characters or tokens in all, answer bytes."""

    status = 413
    code = "request_too_large"


class UnknownModel(ThoughtvecError):
    status = 404
    code = "unknown_model"


class UnknownView(ThoughtvecError):
    status = 404
    code = "unknown_view"


class UnknownIndex(ThoughtvecError):
    status = 404
    code = "unknown_index"


class Conflict(ThoughtvecError):
    status = 409
    code = "conflict"


class QueueFull(ThoughtvecError):
    status = 429
    code = "queue_full"

    def __init__(self, message: str, retry_after_s: float = 1.0):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class StorageUnavailable(ThoughtvecError):
    """The index folder cannot be written (a read-only replica, a full or failing disk)."""

    status = 503
    code = "storage_unavailable"


class IndexUnavailable(ThoughtvecError):
    """An index on disk that cannot be served (its log cannot be replayed, an unsupported factory)."""

    status = 503
    code = "index_unavailable"


class NotReady(ThoughtvecError):
    status = 503
    code = "not_ready"


class BodyTooLarge(ThoughtvecError):
    status = 413
    code = "body_too_large"


class Unauthorized(ThoughtvecError):
    status = 401
    code = "unauthorized"


class Forbidden(ThoughtvecError):
    status = 403
    code = "forbidden"


class WorkerDead(ThoughtvecError):
    """A batcher's worker stopped; the model answers nothing until the server restarts."""

    status = 503
    code = "worker_dead"
