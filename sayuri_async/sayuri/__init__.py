"""Sayuri compatibility: its input planes, weights files and training data.

Vocabulary
----------
Sayuri        the C++ Go engine by CGLemon (GitHub CGLemon/Sayuri, GPLv3);
              nothing of its code is copied here, the formats are
              re-implemented from their description and source.
sayuri-v3     our name for the 43-plane encoder of Sayuri's weights versions
              3 to 5: an encoder like any other (``encoders/sayuri_v3.py``,
              whose ``sayuri_v3_decode.py`` turns its komi planes into
              Sayuri's floats on the device).
weights file  Sayuri's text format, or the same with ``FloatType float32bin``
              (``weights.py`` reads and writes both).
SayuriNet     the torch module that runs an imported network and trains it
              (``model.py``: its norms start as the identity).
export        ``sayuri-async export``: a (trained) SayuriNet back into Sayuri's
              text or float32bin file (``export.py``).
term average  Sayuri's short/middle/long-term value targets (``targets.py``).
chunk         Sayuri's gzip text training data, record version 2
              (``data.py`` turns it into our training samples).

This package is interoperability only: our own encoders, ladder reading and
safe areas live in ``encoders/``, the generic weight loading in ``net/``.
This package itself imports nothing heavy.
"""
