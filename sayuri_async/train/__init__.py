"""Training: self-play chunks in, a network the engine loads out.

Vocabulary (each module's docstring says more):
  config      ``config.py``: the TOML file (``configs/train-*.toml``) as dataclasses.
  dataset     ``dataset.py``: listing chunks (read through ``chunkfile.py``), the replay window,
              the sharded, shuffled, augmented batch stream.
  losses      ``losses.py``: the five loss terms and their weighted sum.
  schedule    ``schedule.py``: warm-up plus piecewise-constant learning rate,
              counted in samples, and the batch-size rule.
  trainer     ``trainer.py``: the loop, DDP, the data window, saving and resuming its state.
  step        ``step.py``: the optimizer and one update on one batch.
  averaging   ``averaging.py``: EMA/SWA of the weights (what is exported).
  progress    ``progress.py``: messages, warnings, the progress bar, the log rows.
  runfolder   ``runfolder.py``: a fresh start refuses an earlier run's folder; stale temporaries.
  errors      ``errors.py``: TrainError and the user errors among them.
  distributed ``distributed.py``: the process group, the device, RNG states.
  syncnorm    ``syncnorm.py``: batch norms over the global batch with several ranks (``[optim] sync_norms``).
  launch      ``launch.py``: a training job under torchrun from one caller (the RL loop's training step).
  norm_stats  ``norm_stats.py``: batch-norm statistics recomputed on fresh positions before an export.
  value_quality ``value_quality.py``: how well a network judges and predicts a set of chunks (the
              value quality the RL loop records, ``tools/value_check.py``).
  checkpoint  ``checkpoint.py``: atomic checkpoints, weight exports, the CSV log.
  cli         ``cli.py``: ``sayuri-async train`` (also ``python -m sayuri_async.train``).
  plot        ``plot.py``: ``sayuri-async plot``, PNG curves from the CSV log.

``docs/training.md`` is the user's guide.
"""
