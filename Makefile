# The whole set-up: `make run` serves the demo world, `make test` runs the suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8000

.PHONY: run test bench clean mcp-clients

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.runtime: requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.test: requirements-test.txt requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements-test.txt
	touch $(VENV)/.runtime $@

# The embedded default: SQLite, local files, in-process tasks, debug on.
run: export DJANGO_DEBUG ?= 1
run: $(VENV)/.runtime
	$(BIN)/python manage.py migrate --noinput -v0
	$(BIN)/python manage.py arkme_demo
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

test: export DJANGO_SECRET_KEY ?= test-only-secret-key
test: export DJANGO_SECURE_COOKIES ?= 0
test: $(VENV)/.test
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python manage.py check --fail-level WARNING
	$(BIN)/python manage.py makemigrations --check --dry-run -v0
	rm -f var/reliability.json
	$(BIN)/python -m pytest $(PYTEST_ARGS)
	$(BIN)/python -m tests.support.figures

$(VENV)/.bench: requirements-bench.txt requirements-test.txt requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements-bench.txt
	touch $(VENV)/.runtime $(VENV)/.test $@

# Benchmarks print ratios against a baseline measured in the same run and fail when a goal is
# missed (see docs/PERFORMANCE.md); BENCH_ARGS='--ci' runs the quick instruction-counted subset.
bench: $(VENV)/.bench
	$(BIN)/python -m bench $(BENCH_ARGS)

# Node 22, the official MCP conformance suite and TypeScript SDK, for the MCP tests (CI
# installs them; without them those tests skip and say so). Pinned by tests/mcp/package-lock.json.
NODE_DIR := var/node
$(NODE_DIR)/.installed: tests/mcp/package.json tests/mcp/package-lock.json
	mkdir -p $(NODE_DIR)
	cp tests/mcp/package.json tests/mcp/package-lock.json $(NODE_DIR)/
	cd $(NODE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

mcp-clients: $(NODE_DIR)/.installed

clean:
	rm -rf $(VENV) var .pytest_cache
