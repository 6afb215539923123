# Quick start: `make run` (the demo on the embedded SQLite store) and `make test`.
# While working: `make check` (lint, types and the fast tests, in under two minutes).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The npm packages' stamp (the TypeScript client's, below).
NODE_INSTALLED := clients/typescript/node_modules/.installed

# Bytecode is written: the tests start `hitl-bridge` as a process hundreds of times, and each
# start would compile every module again without it.
unexport PYTHONDONTWRITEBYTECODE

# The tests `make check` runs: the fast ones (the core's parts, the adapters' pure functions, the
# checks read from the source), none that is slow, drives a browser, needs PostgreSQL or starts a
# process (the markers: pyproject.toml; tests/conftest.py marks the core's and fails a process
# started unmarked). `make test` runs every test.
FAST := fast and not slow and not browser and not postgres and not subprocess
# On every core (pytest-xdist; more workers than cores measured no faster here).
PARALLEL := -n auto

.PHONY: install install-dev browser run serve test check fast lint typecheck pytest bench docs figures clean

# Two stamps: `make run`, `make serve` and `make bench` install the runtime dependencies only;
# the checks add the developer extras (pytest, mypy, ruff, the examples' agent frameworks,
# selenium: minutes more). Each is made again when pyproject.toml changes.
install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev $(NODE_INSTALLED)

$(VENV)/.installed: pyproject.toml deploy/install.sh
	PYTHON=$(PYTHON) sh deploy/install.sh --editable $(VENV)  # the image's install step too
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed clients/python/pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev]' -e ./clients/python
	touch $@

# The TypeScript client, its Vercel AI SDK example and the CopilotKit-style page
# (clients/typescript, examples/vercel_ai, examples/copilotkit): Node and npm from Debian where
# absent, each package from its lockfile, the client and the page's bundle built (the tests
# build again what they run). Made again when a lockfile changes.
NODE_LOCKS := clients/typescript/package-lock.json examples/vercel_ai/package-lock.json \
	examples/copilotkit/package-lock.json
$(NODE_INSTALLED): $(NODE_LOCKS)
	command -v node >/dev/null && command -v npm >/dev/null || \
		(apt-get update && apt-get install -y --no-install-recommends nodejs npm)
	npm ci --prefix clients/typescript
	npm run build --prefix clients/typescript
	npm ci --prefix examples/vercel_ai
	npm ci --prefix examples/copilotkit
	npm run build --prefix examples/copilotkit
	touch $@

# The browser tests (the admin console's, the CopilotKit-style page's) drive Debian's headless
# chromium through its chromedriver; no test tool downloads a browser of its own.
browser:
	command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
		(apt-get update && apt-get install -y --no-install-recommends chromium chromium-driver)

# AGENT=path/to/agent.yaml runs your agent file (examples/ops/agent.yaml, for one)
AGENT ?=
AGENT_FLAG := $(if $(AGENT),--agent $(AGENT))

run: install
	$(BIN)/hitl-bridge demo $(AGENT_FLAG)

serve: install
	$(BIN)/hitl-bridge db upgrade
	$(BIN)/hitl-bridge serve $(AGENT_FLAG)

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install-dev
	$(BIN)/mypy

# Every test, as CI runs them: pytest's last line is the run's time, above it the slowest.
pytest: install-dev browser
	$(BIN)/pytest $(PARALLEL) --durations=15

# Lint, types and tests run side by side (mypy takes one core, for a minute when its cache is
# cold; the tests print as they go); any of them failing fails the target.
SIDE_BY_SIDE := $(MAKE) --no-print-directory -j3

test: install-dev
	@$(SIDE_BY_SIDE) lint typecheck pytest

# The working loop: the same, with the fast tests only (under two minutes: docs/figures.md).
check: install-dev
	@$(SIDE_BY_SIDE) lint typecheck fast

fast: install-dev
	$(BIN)/pytest $(PARALLEL) -m "$(FAST)"

bench: install
	$(BIN)/python bench/human_input_bench.py
	$(BIN)/python bench/store_throughput.py
	$(BIN)/python bench/startup.py

# The parts of docs/architecture.md the code says (the rank table, the module map), written
# again; tests/test_generated_docs.py fails until they are.
docs:
	$(PYTHON) -m tools.docs

# docs/figures.md's blocks measured again: each one's command run, its output written back with
# the date, the machine and the wall time (ONLY="name ..." for some; the format: its top).
ONLY ?=
figures: install-dev
	$(BIN)/python -m tools.figures $(ONLY)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
