# make demo : set up .venv and run a short 9x9 self-play of the shipped network with the live TUI
# make test : set up .venv and run the test suite
# make test-fast : the tests not marked slow (no processes started, none long)
# make test-boundscheck : the board, search and ladder tests with numba's bounds checks
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast test-boundscheck setup bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml tools/setup_venv.sh
	bash tools/setup_venv.sh $(PY) $(VENV)
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/sayuri-async selfplay --config configs/selfplay-9x9.toml --weights weights/9x9/gnugo9c-4x48.safetensors --num-games 24

test: $(STAMP)
	$(BIN)/python -m pytest -q

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

# bounds-checked code has a numba cache of its own (sayuri_async/numba_cache.py, "checked")
BOUNDSCHECKED_TESTS := tests/test_board*.py tests/test_search*.py tests/test_ladder*.py
test-boundscheck: $(STAMP)
	NUMBA_BOUNDSCHECK=1 $(BIN)/python -m pytest -q -m "not slow" $(BOUNDSCHECKED_TESTS)

bench: $(STAMP)
	$(BIN)/python tools/bench_board.py

clean:
	rm -rf $(VENV) runs .pytest_cache
