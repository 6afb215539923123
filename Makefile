# Quick start: `make run` (the demo on the embedded SQLite store) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install install-dev browser run serve test lint typecheck pytest bench clean

# Two stamps: `make run`, `make serve` and `make bench` install the runtime dependencies only;
# the checks add the developer extras (pytest, mypy, ruff, the examples' agent frameworks,
# selenium: minutes more). Each is made again when pyproject.toml changes.
install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# The admin console's browser tests drive Debian's headless chromium through its chromedriver;
# no test tool downloads a browser of its own.
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

pytest: install-dev browser
	$(BIN)/pytest

test: lint typecheck pytest

bench: install
	$(BIN)/python bench/human_input_bench.py
	$(BIN)/python bench/store_throughput.py
	$(BIN)/python bench/startup.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
