# Two entry points on a fresh machine:
#   make serve   install the serving package (no torch) and start the API on the bundled models (PORT=8010 for another port)
#   make test    install everything (training extras + test tools) and run the test suite
# and `make docs` builds the docs site into build/site.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
HOST   ?= 127.0.0.1
PORT   ?= 8000

.PHONY: serve test lint docs install-serve install-dev install-browser clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

install-serve: $(PY)
	$(PY) -m pip install -q -e .

# Also the openai npm client the tests drive (pinned by tests/clients/package-lock.json), where npm exists.
install-dev: $(PY)
	$(PY) -m pip install -q -e ".[train,dev,milvus,docs]"
	if command -v npm >/dev/null; then npm ci --prefix tests/clients --no-audit --no-fund --silent || echo "npm ci failed: the npm client test will skip"; fi

serve: install-serve
	$(VENV)/bin/thoughtvec serve --host $(HOST) --port $(PORT)

# The docs site, strict (a broken link fails), offline, into build/site (gitignored): open build/site/index.html.
docs: $(PY)
	$(PY) -m pip install -q -e ".[docs]"
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet  # without the theme's end-of-life banner
	@echo "docs: build/site/index.html"

# The playground's browser test uses Debian's chromium (root; .ci/run does this too). Optional: it skips without one.
install-browser:
	command -v chromedriver >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium chromium-driver; }

# ruff (lint + format check) and mypy on service/, as configured in pyproject.toml; `make test` runs it first.
# mypy reads packages by folder name, so it checks service/ through .typecheck/thoughtvec/service, a link
# that gives the folder its installed name (thoughtvec.service).
lint: install-dev
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	mkdir -p .typecheck/thoughtvec && touch .typecheck/thoughtvec/__init__.py && ln -sfn ../../service .typecheck/thoughtvec/service
	cd .typecheck && ../$(PY) -m mypy --config-file ../pyproject.toml thoughtvec/service

test: install-dev lint
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .typecheck build *.egg-info
