# Two entry points on a fresh machine:
#   make serve   install the serving package (no torch) and start the API on the bundled models (PORT=8010 for another port)
#   make test    install everything (training extras + test tools) and run the test suite
# and `make docs` builds the docs site into build/site.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
HOST   ?= 127.0.0.1
PORT   ?= 8000

.PHONY: serve test lint docs install-serve install-dev install-browser lock clean

# Editable installs in setuptools' strict mode: build/__editable__.*/thoughtvec/ is a tree of links to the
# source files under their import names (service/core/x.py appears as thoughtvec/service/core/x.py), so mypy,
# import-graph tools and IDEs read `thoughtvec` as an ordinary package. A new module is linked by the next
# `make install-dev` (every `make test` runs it; tests/conftest.py says so when a module is not linked yet).
EDITABLE := --config-settings editable_mode=strict
# Each editable install makes setuptools print a dozen lines of notice about that auxiliary folder (its warning
# "Editable installation."): that one warning is filtered, by its message, for the install alone; every other
# warning and every error still shows.
QUIET := PYTHONWARNINGS="ignore:Editable installation"

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# constraints.txt: every package at the version the suite last passed with (`make lock` refreshes it).
CONSTRAINTS := -c constraints.txt

# The openvino extra: the bundles that chose OpenVINO run on it (service/core/runtime.py); without it ONNX Runtime serves them.
install-serve: $(PY)
	$(QUIET) $(PY) -m pip install -q $(CONSTRAINTS) $(EDITABLE) -e ".[openvino]"

# Also the openai npm client the tests drive (pinned by tests/clients/package-lock.json), where npm exists.
install-dev: $(PY)
	$(QUIET) $(PY) -m pip install -q $(CONSTRAINTS) $(EDITABLE) -e ".[train,dev,milvus,docs,otel,openvino]"
	if command -v npm >/dev/null; then npm ci --prefix tests/clients --no-audit --no-fund --silent || echo "npm ci failed: the npm client test will skip"; fi

serve: install-serve
	$(VENV)/bin/thoughtvec serve --host $(HOST) --port $(PORT)

# The docs site, strict (a broken link fails), offline, into build/site (gitignored), read over HTTP: its search
# runs in a web worker, which a browser does not start for a page opened as a file.
docs: $(PY)
	$(QUIET) $(PY) -m pip install -q $(CONSTRAINTS) $(EDITABLE) -e ".[docs]"
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet  # without the theme's end-of-life banner
	@echo "docs: build/site; read it with: python3 -m http.server -d build/site 8001, then http://127.0.0.1:8001/"

# The playground's browser test uses Debian's chromium (root; .ci/run does this too). Optional: it skips without one.
install-browser:
	command -v chromedriver >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium chromium-driver; }

# ruff (lint + format check) and mypy on every package (service, training, bench, the command), as configured
# in pyproject.toml; `make test` runs it first.
lint: install-dev
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy --config-file pyproject.toml -p thoughtvec -p thoughtvec.service -p thoughtvec.training -p thoughtvec.bench  # each: run from here, thoughtvec/ is this folder

test: install-dev lint
	$(PY) -m pytest -q

# A fresh resolution of the full install, in a throwaway venv, written to constraints.txt: run it to take new
# releases on purpose, then `make test`, and commit both.
lock:
	rm -rf build/lock-venv && $(PYTHON) -m venv build/lock-venv
	build/lock-venv/bin/python -m pip install -q --upgrade pip
	build/lock-venv/bin/python -m pip install -q ".[train,dev,milvus,docs,otel,openvino]"
	{ sed -n '1,3p' constraints.txt; build/lock-venv/bin/python -m pip freeze --all --exclude thoughtvec --exclude pip | sed 's/+cpu$$//' | sort -f; } > constraints.txt.new
	mv constraints.txt.new constraints.txt && rm -rf build/lock-venv
	@echo "constraints.txt: $$(grep -vc '^#' constraints.txt) packages"

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info
