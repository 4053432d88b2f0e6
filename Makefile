# The two entry points the README names:
#   make demo  - set everything up, build the demo stack, and start JupyterLab on it
#   make test  - set everything up and run the whole test suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
JS_DEPS := js/node_modules/.package-lock.json
DEMO_DIR ?= demo-data
# JupyterLab refuses to run as root unless told; containers and CI machines often are root.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: setup demo test test-python test-js test-vitest test-ui lint types bench bench-check clean

# The front end's packages come first, once, from the lock (npm ci, below): the editable install's
# build hook then finds them in place (its `npm install` changes nothing) and builds the front end.
$(VENV)/.installed: pyproject.toml | $(JS_DEPS)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -e ".[test]"
	touch $@

setup: $(VENV)/.installed

$(DEMO_DIR)/.built: $(VENV)/.installed
	rm -rf $(DEMO_DIR)
	$(PY) -m sds_jupyter demo $(DEMO_DIR) > $(DEMO_DIR).top
	mv $(DEMO_DIR).top $(DEMO_DIR)/top-version.txt
	touch $@

demo: $(DEMO_DIR)/.built
	$(PY) -m sds_jupyter describe "$$(cat $(DEMO_DIR)/top-version.txt)"
	$(VENV)/bin/jupyter lab --no-browser --ServerApp.root_dir="$(CURDIR)" \
		--LabApp.default_url=/lab/tree/binder/demo.ipynb $(ALLOW_ROOT) $(LAB_ARGS)

# pytest first, then vitest beside the flows: all three at once on 2 cores took longer (measured in
# docs/contributing.md).
test: test-python
	$(MAKE) test-js

# The Python suite on every core (pytest-xdist; tests share nothing but read-only session
# fixtures, built once per worker). PYTEST_ARGS adds options, e.g. PYTEST_ARGS="-m 'not install'";
# PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= auto
test-python: setup
	$(PY) -m pytest -n $(PYTEST_WORKERS) $(PYTEST_ARGS)

# The front end's packages (npm ci), again whenever package-lock.json changes.
$(JS_DEPS): js/package-lock.json
	cd js && npm ci

# The front end: unit tests (vitest) beside the JupyterLab flows in the system Chromium (eight groups
# of flows, each on its own server, four at a time: package.json's test:ui). One group alone waits
# more than it computes; four at once keep both cores busy (Chromium's software WebGL most of all),
# so more at once is slower, not faster (docs/contributing.md has the runs). vitest is small beside
# them (about 40 s of CPU); each target's output is printed whole when it ends.
test-js: setup $(JS_DEPS)
	$(MAKE) -j2 --output-sync=target test-vitest test-ui

test-vitest: setup $(JS_DEPS)
	cd js && npm test

test-ui: setup $(JS_DEPS)
	cd js && PATH="$(CURDIR)/$(VENV)/bin:$$PATH" SDS_PYTHON="$(CURDIR)/$(PY)" npm run test:ui

# Habits: ruff (lint), mypy (the stack library strictly, the rest as configured; and the tests' kit
# with the contract test, whose helpers other tests lean on),
# import-linter (layers, no cycles, no Jupyter below the service). Config in pyproject.toml.
# The front end: ESLint (js/eslint.config.mjs) and no import cycles (madge), `npm run lint`.
lint: setup $(JS_DEPS)
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy sds_jupyter
	MYPYPATH=tests $(VENV)/bin/mypy tests/kit tests/project/test_contract.py
	$(VENV)/bin/lint-imports --no-cache
	cd js && npm run lint

# The protocol's payload types, generated from sds_jupyter/protocol/types.py:
# docs/payloads.schema.json and js/src/app/shared/payloads.gen.ts (re-run after changing types.py),
# and the binary replies' buffer layouts from protocol/layouts.py: js/src/app/shared/layouts.gen.ts.
types: setup
	$(PY) -m sds_jupyter.service.contract

bench: setup
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 $(PY) -m pip install -q -e ".[test,bench]"
	$(PY) benchmarks/run_all.py $(BENCH_ARGS)

# The published figures (benchmarks/published.json) beside a new run of their benchmarks: published
# ratio, this run's, within 25 % or not, the load. Never fails on timing (BENCH_ARGS=--strict does).
bench-check: setup
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 $(PY) -m pip install -q -e ".[test,bench]"
	$(PY) benchmarks/reproduce.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(DEMO_DIR) build dist
