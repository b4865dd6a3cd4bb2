"""``python -m sayuri_async.train ...``: the entry point torchrun starts on every rank."""
import sys

from sayuri_async.train.cli import main

sys.exit(main(sys.argv[1:]))
