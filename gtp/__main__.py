"""``python -m gtp``: the same as ``sayuri-async gtp``."""
from __future__ import annotations

import sys

from .main import main

sys.exit(main(sys.argv[1:]))
