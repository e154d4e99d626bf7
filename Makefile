# Three entry points: `make demo`, `make test` and `make docs`. Each creates .venv on first use and
# installs exactly the versions in constraints.txt, the lock file the suite was last green with:
# a fresh machine gets what CI tested. `make upgrade-lock` moves the lock to the newest versions
# pyproject.toml's ranges allow and runs the suite on them: upgrades are a deliberate, tested step.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
LOCK := constraints.txt
STAMP := $(VENV)/.installed
# pip and setuptools come from the lock too; the package is built with the locked setuptools
# (no isolated build environment, which would fetch the newest).
PIP := $(BIN)/python -m pip install --quiet --constraint $(LOCK)

.PHONY: demo test test-cpus test-all docs benchmarks benchmarks-smoke upgrade-lock clean

$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) pip setuptools
	$(PIP) --no-build-isolation -e '.[test]'  # test includes the engines and docs extras
	touch $(STAMP)

demo: $(STAMP)
# --force: each run replaces the previous results in demo_output/ (created if missing).
	$(BIN)/projmech demo --force

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -q

# The tests marked solver again, on the BLAS kernels of other CPUs. OpenBLAS picks its kernels by
# CPU, in numpy, in SciPy (whose LAPACK computes Clarabel's semidefinite cones) and in SCS: a
# solve that ends "optimal" on one CPU can end "optimal_inaccurate" on another, and a test must
# pass on both. OPENBLAS_CORETYPE forces a kernel set; one this CPU cannot run is skipped, saying so.
CORETYPES := Haswell:avx2,fma SkylakeX:avx512f,avx512bw,avx512dq,avx512vl

test-cpus: $(STAMP)
	@for entry in $(CORETYPES); do \
	  core=$${entry%%:*}; missing=""; \
	  for flag in $$(echo $${entry#*:} | tr , ' '); do \
	    grep -qw $$flag /proc/cpuinfo 2>/dev/null || missing="$$missing $$flag"; \
	  done; \
	  if [ -n "$$missing" ]; then echo "== OPENBLAS_CORETYPE=$$core skipped: this CPU lacks$$missing"; continue; fi; \
	  echo "== OPENBLAS_CORETYPE=$$core"; \
	  OPENBLAS_CORETYPE=$$core $(BIN)/python -m pytest -q -m 'solver and not slow' || exit 1; \
	done

# The documentation site into docs/_build/html; any warning fails the build, and so does a page
# that loads anything from another host (docs/conf.py: the site must read the same offline).
docs: $(STAMP)
	$(BIN)/python -m sphinx -W --keep-going -b html -q docs docs/_build/html

test-all: $(STAMP)
	$(BIN)/python -m pytest -q -m ''

benchmarks: $(STAMP)
# Private-PGM (mbi) and jax-privacy for the comparisons; if they cannot be installed, those rows
# are skipped.
	-$(PIP) --no-build-isolation -e '.[benchmarks]'
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

# Every benchmark script with --smoke: its whole code path on tiny sizes, outputs into a temporary
# folder (benchmarks/README.md); the comparisons whose packages are missing say they are skipped.
benchmarks-smoke: $(STAMP)
	-$(PIP) --no-build-isolation -e '.[benchmarks]'
	for script in benchmarks/[a-z]*.py benchmarks/_aim_runner.py; do \
	  echo "== $$script --smoke"; $(BIN)/python $$script --smoke || exit 1; done

# Re-resolve every extra the targets install (test, engines, docs, benchmarks) to the newest
# versions the ranges allow, in a throwaway environment; write the lock; rebuild .venv from it and
# run the demo, the suite and the docs. Commit constraints.txt only if all three pass.
upgrade-lock:
	rm -rf $(VENV)-lock
	$(PYTHON) -m venv $(VENV)-lock
	$(VENV)-lock/bin/python -m pip install --quiet --upgrade pip setuptools
	$(VENV)-lock/bin/python -m pip install --quiet '.[test,docs,benchmarks]'
	$(VENV)-lock/bin/python -m pip check
	{ echo "# The versions the suite was last green with (make upgrade-lock wrote this; do not edit by hand)."; \
	  echo "# Resolved for Python $$($(VENV)-lock/bin/python -c 'import platform; print(platform.python_version(), platform.machine())') on $$(date -u +%Y-%m-%d): every extra the Makefile installs."; \
	  $(VENV)-lock/bin/python -m pip freeze --all --exclude projmech; } > $(LOCK).new
	mv $(LOCK).new $(LOCK)
	rm -rf $(VENV)-lock $(VENV)
	$(MAKE) demo test docs

clean:
	rm -rf $(VENV) $(VENV)-lock build *.egg-info .pytest_cache .mypy_cache docs/_build docs/api demo_output
