# make demo : set up .venv and run a short 9x9 self-play of the shipped network with the live TUI
# make test : set up .venv (with Ray, for the cluster tests) and run the test suite
# make test-fast : the tests not marked slow (no processes started, none long)
# make test-boundscheck : the board, search and ladder tests with numba's bounds checks
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# the tests also run a real Ray cluster (tests/test_cluster_*.py): the cluster extra
TEST_STAMP := $(VENV)/.installed-cluster

.PHONY: demo test test-fast test-boundscheck setup bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml tools/setup_venv.sh
	bash tools/setup_venv.sh $(PY) $(VENV)
	touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[cluster]"
	touch $(TEST_STAMP)

demo: $(STAMP)
	$(BIN)/sayuri-async selfplay --config configs/selfplay-9x9.toml --weights weights/9x9/distil-continue-g3-6b96c.safetensors --num-games 24

test: $(TEST_STAMP)
	$(BIN)/python -m pytest -q

test-fast: $(TEST_STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

# bounds-checked code has a numba cache of its own (sayuri_async/numba_cache.py, "checked")
BOUNDSCHECKED_TESTS := tests/test_board*.py tests/test_search*.py tests/test_ladder*.py
test-boundscheck: $(STAMP)
	NUMBA_BOUNDSCHECK=1 $(BIN)/python -m pytest -q -m "not slow" $(BOUNDSCHECKED_TESTS)

bench: $(STAMP)
	$(BIN)/python tools/bench_board.py

clean:
	rm -rf $(VENV) runs .pytest_cache
