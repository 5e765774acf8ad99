"""The errors of the bundle contract. ``ThoughtvecError`` is the base of every domain error
(the serving ones live in ``thoughtvec.service.errors``); ``status`` is the HTTP status the API answers with."""

from __future__ import annotations


class ThoughtvecError(Exception):
    """Base class. ``status`` is the HTTP status the API answers with."""

    status: int = 500
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
