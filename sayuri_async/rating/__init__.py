"""Rating players against each other: Elo by maximum likelihood over a pool
of networks (with their search settings) and GTP engines.

Modules
-------
elo       the Bradley-Terry fit with its intervals (``fit``).
engines   where the GTP engines of the ratings are (GNU Go, Pachi) and the
          command lines they are started with.
ladder    one network against a list of GTP opponents, a resumable table
          (``tools/rate_gtp.py``, ``tools/rate_gnugo.py``).
players   a pool's players: networks with search settings, GTP engines;
          the TOML file that names them.
pool      the round robin: its schedule, the games recorded as they finish,
          resuming.
report    the pool's table (markdown) and JSON.
cli       ``sayuri-async rate``.
"""
