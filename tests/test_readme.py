"""The README and the docs stay true: the settings table, the stack recipes, every route documented,
and every example shown with its output runs as pasted against a live server on the bundled models."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from thoughtvec.bench.bench import free_port
from thoughtvec.service.settings import settings_table

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]}
DOCS = "\n".join(PAGES.values())

_spec = importlib.util.spec_from_file_location("capture_examples", ROOT / "docs" / "capture_examples.py")
capture = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["capture_examples"] = capture  # its dataclass looks its module up there
_spec.loader.exec_module(capture)  # type: ignore[union-attr]


def test_settings_table_is_the_generated_one():
    assert settings_table() in DOCS  # `thoughtvec serve --settings-table` pasted whole: every setting, every flag


@pytest.mark.parametrize("recipe", sorted((ROOT / "docs" / "stack").glob("*.py")), ids=lambda p: p.name)
def test_stack_recipes_are_quoted_whole(recipe):
    assert f"```python\n{recipe.read_text(encoding='utf-8').rstrip()}\n```" in DOCS


def test_every_route_is_documented():
    from thoughtvec.service.http.app import create_app
    from thoughtvec.service.http.rules import routes_of
    from thoughtvec.service.settings import Settings

    app = create_app(Settings(models_dir=ROOT / "no-models", build_default_index=False))
    paths = {r.path_format for r in routes_of(app.routes)} - {"/openapi.json", "/docs-assets/{name}", "/"}
    missing = [p for p in sorted(paths) if not re.search(r"[` ]" + re.escape(p) + r"[` ]", DOCS)]
    assert not missing, f"routes not in the README or the docs: {missing}"


def test_the_readme_says_which_python_and_what_shared_is():
    import tomllib

    from thoughtvec.paths import SHARED_DATA

    python = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["requires-python"]
    assert python.startswith(">=") and f"Python {python[2:]} or newer" in README, python
    assert "`../shared` is a folder beside this checkout" in README
    for folder in sorted(p.name for p in SHARED_DATA.iterdir()) if SHARED_DATA.is_dir() else ["senteval", "retrieval"]:
        assert f"`../shared/data/{folder}" in README, folder  # each data set read in place is named


def test_the_readme_shows_live_examples():
    assert len(capture.blocks(README)) >= 1 and sum(len(b.commands) for b in capture.blocks(README)) >= 5


# --- the examples, run as pasted -------------------------------------------------------------------------

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"(\s*:)?')  # a JSON string, with the colon after it when it is a key


def skeleton(v):
    """A JSON value's shape: keys kept, numbers 0, strings "", lists item by item."""
    if isinstance(v, dict):
        return {k: skeleton(x) for k, x in v.items()}
    if isinstance(v, list):
        return [skeleton(x) for x in v]
    if isinstance(v, bool) or v is None:
        return v
    return 0 if isinstance(v, (int, float)) else ""


def line_shape(line: str) -> tuple[str, bool]:
    """(shape, whole) of one output line. A JSON line (with an HTTP status after it, as ``-w`` prints)
    becomes its skeleton and the status, kept exactly; any other line has its numbers and its quoted
    values blanked. ``whole`` is False for a line cut short (``| cut -c``), compared as a prefix."""
    body, status = re.fullmatch(r"(.*?)((?: \d{3})?)", line).groups()  # type: ignore[union-attr]
    try:
        return json.dumps(skeleton(json.loads(body))) + status, True
    except ValueError:
        coarse = _NUMBER.sub("0", _STRING.sub(lambda m: m.group(0) if m.group(1) else '""', line))  # keys kept, values blanked
        return coarse, not line.lstrip().startswith(("{", "["))


def same_shape(shown: str, got: str) -> bool:
    """Whether a command printed what the docs show, in shape: the same lines, each of the same shape
    (values may differ by machine and by the size of the default index). A line cut short at a fixed
    width (a number's width moves the cut) agrees up to the shorter one's last whole token."""
    a, b = shown.splitlines(), got.splitlines()
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        (sx, whole), (sy, _) = line_shape(x), line_shape(y)
        if whole:
            if sx != sy:
                return False
        else:
            sx, sy = (s[: max(s.rfind(c) for c in ",[{:")] for s in (sx, sy))  # drop the token the cut split
            short, long = sorted((sx, sy), key=len)
            if len(short) < 10 or not long.startswith(short):
                return False
    return True


EXAMPLES = [(page, i) for page, text in PAGES.items() for i, _ in enumerate(capture.blocks(text))]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``thoughtvec serve`` on the bundled models on a free port, with a small default index (300
    sentences of the sample) and no warm-up, so that it starts in seconds; yields its port."""
    port = free_port()
    cmd = [sys.executable, "-m", "thoughtvec.service.cli", "serve", "--port", str(port), "--models-dir", str(ROOT / "models"),
           "--index-dir", str(tmp_path_factory.mktemp("indexes")), "--default-index-max-docs", "300", "--no-warmup", "--log-level", "warning"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, env=os.environ | {"PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 300
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"server exited with {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/ready", timeout=2)
                if r.status_code == 200 and all(v == "ready" for v in r.json().get("indexes", {}).values()):
                    break
            except httpx.HTTPError:
                pass
            assert time.time() < deadline, "the server was not ready in 300 s"
            time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.slow
@pytest.mark.parametrize(("page", "index"), EXAMPLES, ids=[f"{p}#{i}" for p, i in EXAMPLES])
def test_examples_run_as_pasted(server, page, index):
    block = capture.blocks(PAGES[page])[index]
    for cmd, shown, (got, rc) in zip(block.commands, block.outputs, capture.run(block.commands, server, timeout=120)):
        assert rc == 0, f"{page}: `{cmd}` exited {rc}: {got}"
        assert same_shape(shown, got), f"{page}: `{cmd}` printed\n{got}\nwhere the page shows\n{shown}"


RECIPES = sorted((ROOT / "docs" / "stack").glob("*.py"))


def shown_after(recipe: str) -> str:
    """What the docs show that ``recipe`` prints: the block right after its quote."""
    found = re.search(re.escape(f"```python\n{recipe.rstrip()}\n```\n```\n") + r"(.*?)\n```", DOCS, re.S)
    assert found, "the recipe's quote is not followed by what it prints"
    return found[1]


@pytest.mark.slow
@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.name)
def test_stack_recipes_run_as_written(server, recipe, tmp_path):
    """Each recipe as a reader runs it: its own text (the server's address alone changed), a home folder of its own
    (no tiktoken or Hugging Face cache, no key), on this machine's network (none: nothing is downloaded)."""
    code = recipe.read_text(encoding="utf-8").replace("localhost:8000", f"127.0.0.1:{server}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TIKTOKEN", "DATA_GYM", "HF_", "HUGGING", "OPENAI", "CO_"))}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                         env=env | {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / ".cache")})  # fmt: skip
    assert run.returncode == 0, f"{recipe.name} failed:\n{run.stderr[-3000:]}"
    shown = shown_after(recipe.read_text(encoding="utf-8"))
    assert same_shape(shown, run.stdout.rstrip("\n")), f"{recipe.name} printed\n{run.stdout}\nwhere the docs show\n{shown}"


@pytest.mark.parametrize(
    ("shown", "got", "same"),
    [
        ('{"a":1.5,"b":"x"} 422', '{"a":2,"b":"yy"} 422', True),
        ('{"a":1.5,"b":"x"} 422', '{"a":2,"b":"yy"} 413', False),  # the status is kept exactly
        ('{"a":1.5}', '{"a":1.5,"c":1}', False),  # a field more
        ('{"a":[1,2]}', '{"a":[1]}', False),  # a list of another length
        ("x-split-inputs: 1", "x-split-inputs: 2", True),
        ("invertible-bijection 1024 False", "invertible-bijection 1024 True", False),
        (
            '{"object":"list","data":[{"embedding":[-0.0126,0.0175,0.0065,-0.0104,0.0140,0.0004,0.0060,0.01',
            '{"object":"list","data":[{"embedding":[0.012,-0.07,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,0.1,0.2,',
            True,
        ),
        (
            '{"object":"list","data":[{"embedding":[-0.0126,0.0175,0.0065,-0.0104,0.0140,0.0004,0.0060,0.01',
            '{"error":{"code":"not_ready","message":"the model is still loading, retry","field":"model"}',
            False,
        ),
        (
            '{"id":"n1","x":-0.44,"y":0.64},{"id":"7a229c5b","text":"A dog ran in the ci',
            '{"id":"n1","x":-0.45,"y":0.6},{"id":"18464d53cb","text":"A dog ran in',
            True,
        ),
        ("a\nb", "a", False),
    ],
)
def test_same_shape(shown, got, same):
    assert same_shape(shown, got) is same
