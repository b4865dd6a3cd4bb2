"""The network (model.py), its weights file (weights.py) and the runners
that evaluate it for the search (backends.py)."""
