"""What stops a training run, in the project's error policy (``usererror``).

Vocabulary:
  TrainError       training cannot start or continue: a failure during the
                   run (exit status 1).
  user errors      the subclasses that are also ``UserError`` (exit status
                   2: a bad option or input the user can fix): no data, bad
                   ``--init`` weights, nothing to resume, a run folder in use.
"""
from __future__ import annotations

from sayuri_async.usererror import RunFailure, UserError


class TrainError(RuntimeError, RunFailure):
    """Training cannot start or continue (no data, bad checkpoint, bad setup)."""


class NoTrainingData(UserError, TrainError):
    """No chunk under [data] dir can be trained on (none, or all of other board sizes or encoders)."""


class BadInitWeights(UserError, TrainError):
    """The weights to start from (``--init``) cannot be loaded."""


class NothingToResume(UserError, TrainError):
    """``--resume`` on a run folder without a readable checkpoint."""


class RunFolderInUse(UserError, TrainError):
    """A fresh start into a folder that holds an earlier run; the message
    names the folder and how to go on."""
