"""sayuri-async: a Go AlphaZero engine with asyncio self-play.

Importing the package first makes sure numba's cached machine code matches
the current sources (see ``numba_cache``).
"""
from . import numba_cache as _numba_cache

_numba_cache.refresh()
__version__ = "0.1.0"
