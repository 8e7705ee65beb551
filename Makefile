# Two commands are all a new user needs: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test bench install clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	RAY_AUTH_MODE=disabled $(BIN)/legionrm demo

# The pure cores' tests (no Ray) on both cores, then the Ray and fault tests, which share
# one session Ray cluster, in one process: the whole suite stays under 15 minutes on 2 cores.
test: $(STAMP)
	RAY_AUTH_MODE=disabled $(BIN)/python -m pytest -n 2 tests/unit tests/arch tests/docs
	RAY_AUTH_MODE=disabled $(BIN)/python -m pytest tests/ray tests/faults

# Every benchmark prints target, measured and OK/SHORT per line and appends
# them to BENCH_SUMMARY; the one-screen summary of all of them comes last, and
# make bench exits nonzero when any target is SHORT (after running them all).
BENCH_SUMMARY ?= /tmp/legionrm-bench-summary.tsv

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	rm -f $(BENCH_SUMMARY)
	for b in benchmarks/bench_*.py; do \
	  LEGIONRM_BENCH_SUMMARY=$(BENCH_SUMMARY) RAY_AUTH_MODE=disabled $(BIN)/python $$b || exit 1; done
	$(BIN)/python benchmarks/_report.py $(BENCH_SUMMARY)

clean:
	rm -rf $(VENV) build *.egg-info
