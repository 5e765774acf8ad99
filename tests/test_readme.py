"""The README stays true where it can be checked without a server: the settings table, the stack recipes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from thoughtvec.service.settings import settings_table

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_settings_table_is_the_generated_one():
    assert settings_table() in README  # `thoughtvec serve --settings-table` pasted whole: every setting, every flag


@pytest.mark.parametrize("recipe", sorted((ROOT / "docs" / "stack").glob("*.py")), ids=lambda p: p.name)
def test_stack_recipes_are_quoted_whole(recipe):
    assert f"```python\n{recipe.read_text(encoding='utf-8').rstrip()}\n```" in README


def test_every_route_is_documented():
    from thoughtvec.service.http.app import _routes, create_app
    from thoughtvec.service.settings import Settings

    app = create_app(Settings(models_dir=ROOT / "no-models", build_default_index=False))
    paths = {r.path for r in _routes(app.routes)} - {"/openapi.json", "/docs-assets/{name}", "/"}
    missing = [p for p in sorted(paths) if not re.search(r"[` ]" + re.escape(p) + r"[` ]", README)]
    assert not missing, f"routes not in the README: {missing}"
