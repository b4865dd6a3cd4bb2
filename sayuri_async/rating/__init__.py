"""Matches and ratings: players against each other, and Elo by maximum
likelihood over a pool of networks (with their search settings) and GTP
engines.

Modules
-------
match     matches between networks and GTP engines, with win rates, Elo and
          ratings (``sayuri-async match``; ``play_game``, ``run_match``).
referee   the one game loop (``referee_game``) and its players (``Player``,
          ``GtpPlayer``).
gtpclient the GTP client: one engine subprocess spoken to over pipes
          (``GtpProcess``, ``probe_engine``).
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
