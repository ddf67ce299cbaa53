# Kernel Studio. `make run` serves the product; `make test` runs the tests.
# Both start from nothing but Python 3.11: they create .venv and install into it.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Re-install only when the dependency list changes.
STAMP  := $(VENV)/.installed

.PHONY: run test test-fast lint typecheck doctor clean install

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# PyTorch first and pinned: 2.13.0 resolves to the CPU wheel here; an open range would pull CUDA builds.
	$(BIN)/python -m pip install -q "torch==2.13.0"
	$(BIN)/python -m pip install -q -e ".[dev,worker]"
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/python -m kernelstudio.embedded

# The whole suite, slow and browser tests included. pytest's exit code 5 means
# "no tests collected": say so loudly, but it is not a failure of the code.
test: $(STAMP)
	@$(BIN)/python -m pytest $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests"; exit 0; fi; exit $$rc

test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow and not browser" $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy kernelstudio annotations pipeline

doctor: $(STAMP)
	$(BIN)/python manage.py doctor

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
