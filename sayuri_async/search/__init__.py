"""The search: ``mcts.Search`` (the API every caller uses: self-play, match,
GTP) with its settings ``config.SearchConfig``, over the compiled tree
(``tree.py``, the pools of ``pools.py``), PUCT descent (``puct.py``), root
statistics and choices (``root.py``), Gumbel sequential halving
(``gumbel.py``) and superko (``superko.py``); the network side it calls is
``evaluator.Evaluator``."""
