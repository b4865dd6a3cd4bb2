"""``python -m sayuri_async``: the ``sayuri-async`` command (``cli.main``)."""
import sys

from .cli import main

sys.exit(main())
