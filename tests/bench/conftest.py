"""The benchmark tools run against the service tests' tiny bundles."""

from tests.service.conftest import models_dir  # noqa: F401 - the session fixture, shared
