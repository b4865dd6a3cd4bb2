# make demo : set up .venv and run a short 9x9 self-play of the shipped network with the live TUI
# make test : set up .venv and run the test suite
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test setup bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml tools/setup_venv.sh
	bash tools/setup_venv.sh $(PY) $(VENV)
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/sayuri-async selfplay --config configs/selfplay-9x9.toml --weights weights/9x9/gnugo9c-4x48.safetensors --num-games 24

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python tools/bench_board.py

clean:
	rm -rf $(VENV) runs .pytest_cache
