# The README's two commands:  `make run`  and  `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: run test lint typecheck monitoring unit bench clean

# A fresh virtualenv with the service (and, for tests, the dev tools) installed;
# re-installed whenever pyproject.toml changes.
$(BIN)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 is required"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

run: $(BIN)/.installed  ## set up and serve the API (embedded PostgreSQL unless DATABASE_URL is set)
	$(BIN)/raiz serve

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(BIN)/.installed
	$(BIN)/mypy

monitoring:  ## promtool: alert rules, scrape config, alert unit tests
	ops/monitoring/check

test: lint typecheck monitoring  ## lint, type-check, check the alert rules and run the whole suite
	$(BIN)/python -m pytest

unit: $(BIN)/.installed
	$(BIN)/python -m pytest tests/unit -q

clean:
	rm -rf $(VENV) .raiz .pytest_cache .mypy_cache .ruff_cache .hypothesis
