# Two entry points: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-all docs benchmarks clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
# --force: each run replaces the previous results in demo_output/.
	$(BIN)/projmech demo --force

test: $(STAMP)
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -q

# The documentation site into docs/_build/html; any warning fails the build.
docs: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	$(BIN)/python -m sphinx -W --keep-going -b html -q docs docs/_build/html

test-all: $(STAMP)
	$(BIN)/python -m pytest -q -m ''

benchmarks: $(STAMP)
# Private-PGM (mbi) for the comparisons in solvers.py and relaxation.py; if it cannot be
# installed, those rows are skipped.
	-$(BIN)/python -m pip install --quiet -e '.[benchmarks]'
	$(BIN)/python benchmarks/solvers.py
	$(BIN)/python benchmarks/error_vs_n.py
	$(BIN)/python benchmarks/factorization.py
	$(BIN)/python benchmarks/factorization_scale.py --jax-objectives mean
	$(BIN)/python benchmarks/intervals.py
	$(BIN)/python benchmarks/widths.py
	$(BIN)/python benchmarks/relaxation.py
	$(BIN)/python benchmarks/synthetic.py
	$(BIN)/python benchmarks/feasibility.py
	$(BIN)/python benchmarks/audit.py
	$(BIN)/python benchmarks/noise.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache docs/_build docs/api
