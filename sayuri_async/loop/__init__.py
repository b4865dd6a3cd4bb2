"""The RL loop: self-play, train, export, evaluate, repeat, in one workspace
(``sayuri-async loop``).

Modules
-------
driver    the loop itself: the generations and their phases (``Loop``),
          the command.
config    its settings: the ``[loop]`` table (``LoopConfig``) and the one
          TOML file that holds it with the self-play and training tables.
workspace the loop's folder: its state file, held-out chunks, the games and
          positions in it.
stats     the per-generation figures: ``logs/generations.csv`` and
          ``logs/curves.png``.
gating    the promotion rule: an SPRT on the evaluation games, or a fixed
          win rate.

The value-quality figures it records come from ``train/value_quality.py``.
"""
