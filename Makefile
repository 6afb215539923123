# Quick start: `make run` (the demo on the embedded SQLite store) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install browser run serve test lint typecheck pytest bench clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
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

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

pytest: install browser
	$(BIN)/pytest

test: lint typecheck pytest

bench: install
	$(BIN)/python bench/human_input_bench.py
	$(BIN)/python bench/store_throughput.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
