"""Every answer a test client receives is checked against the app's own OpenAPI schema.

:func:`check_responses` hooks a client: each response whose route and status the schema documents
with a JSON body is validated (``jsonschema_rs``, which schemathesis brings) against that body's
schema. A route that speaks another shape than it documents fails the test that called it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import jsonschema_rs


class ResponseChecker:
    def __init__(self, app: Any):
        self.app = app
        self._spec: dict | None = None
        self._validators: dict[tuple[str, str, str], Any] = {}
        self._templates: list[tuple[int, re.Pattern[str], str]] | None = None
        self.checked = 0

    @property
    def spec(self) -> dict:
        if self._spec is None:
            self._spec = self.app.openapi()
        return self._spec

    def _route_path(self, method: str, path: str) -> str | None:
        """The documented path template ``path`` matches for ``method`` (literal segments win over parameters)."""
        if self._templates is None:
            self._templates = sorted(
                ((t.count("{"), re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", t) + "$"), t) for t in self.spec["paths"]),
                key=lambda x: x[0],
            )
        for _, pattern, template in self._templates:
            if pattern.match(path) and method.lower() in self.spec["paths"][template]:
                return template
        return None

    def validator(self, method: str, path: str, status: int) -> Any | None:
        """The validator of a documented JSON answer, or None where the schema documents none."""
        route = self._route_path(method, path)
        if route is None:
            return None
        key = (method, route, str(status))
        if key not in self._validators:
            op = self.spec["paths"].get(route, {}).get(method.lower(), {})
            content = op.get("responses", {}).get(str(status), {}).get("content", {}).get("application/json")
            schema = content.get("schema") if content else None
            self._validators[key] = jsonschema_rs.validator_for({**schema, "components": self.spec["components"]}) if schema else None
        return self._validators[key]

    def check(self, method: str, path: str, status: int, body: bytes) -> None:
        validator = self.validator(method, path, status)
        if validator is None or not body:
            return
        errors = [f"{'/'.join(map(str, e.instance_path))}: {e.message}" for e in validator.iter_errors(json.loads(body))]
        assert not errors, f"{method} {path} -> {status}: the body does not match its OpenAPI schema: {errors[:5]}"
        self.checked += 1

    def __call__(self, response: httpx.Response) -> None:
        response.read()
        self.check(response.request.method, response.request.url.path, response.status_code, response.content)


def check_responses(client: httpx.Client, app: Any) -> ResponseChecker:
    checker = ResponseChecker(app)
    client.event_hooks["response"] = [*client.event_hooks["response"], checker]
    return checker
