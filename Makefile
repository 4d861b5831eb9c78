# Quick start: `make demo` and `make test`. Everything installs into .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench

.PHONY: demo test lint typecheck check bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip uv
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[dev]'
	touch $(STAMP)

$(BENCH_STAMP): $(STAMP)
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[dev,bench]'
	touch $(BENCH_STAMP)

demo: $(STAMP)
	$(BIN)/agentloop demo

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

check: lint typecheck test

bench: $(BENCH_STAMP)
	$(BIN)/python bench/loop_overhead.py
	$(BIN)/python bench/parallel.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
