"""Inference: the async batching queue (``batcher.py``) with its flush rule
and the hand-off to the device (``dispatch.py``), the worker thread per
device (``worker.py``), the NN cache (``cache.py``) and the counters and
figures the live view shows (``stats.py``)."""
