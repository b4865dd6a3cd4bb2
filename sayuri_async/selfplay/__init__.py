"""Self-play: games as coroutines over the batching queue, chunks and SGF."""
