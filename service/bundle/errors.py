"""The errors of the bundle contract. ``ThoughtvecError`` is the base of every domain error
(the serving ones live in ``thoughtvec.service.errors``; the HTTP layer maps each to a status)."""

from __future__ import annotations


class ThoughtvecError(Exception):
    """Base class: an unexpected failure unless a subclass says what went wrong."""

    code: str = "internal_error"

    def __init__(self, message: str, *, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field


class BundleError(ThoughtvecError):
    """A bundle folder is missing, malformed or inconsistent."""

    code = "invalid_bundle"

    def __init__(self, bundle: str, field: str, problem: str):
        super().__init__(f"bundle '{bundle}': {field}: {problem}", field=field)
        self.bundle = bundle
        self.problem = problem  # without the bundle's folder, which may be a path on the server
