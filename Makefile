# The README's two commands:  `make run`  and  `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: run test lint typecheck monitoring native unit bench clean

# A fresh virtualenv with the service (and, for tests, the dev tools) installed;
# re-installed whenever pyproject.toml changes.
$(BIN)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 is required"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

run: $(BIN)/.installed  ## set up and serve the API (embedded PostgreSQL unless DATABASE_URL is set)
	@$(MAKE) --no-print-directory native || echo "(the bot was not compiled: robots run interpreted)"
	$(BIN)/raiz serve

# The heuristic bot compiled with mypyc (app/native.py): used only while its stamp matches the
# sources of app/games, rebuilt here whenever one of them changes.
NATIVE := build/native/app/games/native.sha256
$(NATIVE): $(BIN)/.installed app/native.py $(wildcard app/games/*.py)
	$(BIN)/python -m app.native

native: $(NATIVE)  ## compile the bot (simulations, demo, load tests) with mypyc

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(BIN)/.installed
	$(BIN)/mypy

monitoring:  ## promtool: alert rules, scrape config, alert unit tests
	ops/monitoring/check

test: lint typecheck monitoring native  ## lint, type-check, check the alert rules and run the whole suite
	$(BIN)/python -m pytest

unit: $(BIN)/.installed $(NATIVE)
	$(BIN)/python -m pytest tests/unit -q

clean:
	rm -rf $(VENV) build .raiz .pytest_cache .mypy_cache .ruff_cache .hypothesis
