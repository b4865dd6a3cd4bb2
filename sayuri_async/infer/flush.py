"""The flush rule: when the batcher's filling buffer leaves for the device.

One pure function, ``flush_reason``, decides it from the batcher's state:
the fields of ``QueueState``, passed one by one (``flush_reason(*state)``:
no record is built on the batcher's hot path). The batcher
(``infer/batcher.py``) asks at each moment the answer may change (an
``Event``; a commit is one only when it fills the buffer or leaves every
client waiting, the only commits after which the answer is not None) and
flushes when told.
``tests/test_flush_rule.py`` holds the rule as a table of ``QueueState``
rows.

Vocabulary
----------
queued       requests in the filling buffer.
partial      a buffer holding fewer than ``batch_size`` requests.
clients      games attached to the batcher; ``waiting``: those blocked on
             their answers (from their last commit until the batch holding
             that request comes back).
idle slot    the device would run dry after what it has: fewer than
             ``bound`` batches handed and none ready behind them
             (``Dispatch.idle_slot``, ``infer/dispatch.py``).
device empty no batch handed at all.
age          seconds since the filling buffer's first commit.
event        what prompts the look (``Event``).
reason       why a batch left, as ``Counters.flush`` records it
             (``infer/stats.py``): "full", "waiting" or "timeout".
"""
from __future__ import annotations

from typing import NamedTuple


class Event:
    """The moments the batcher consults the rule."""
    FILLED = "filled"  # a commit that filled the buffer, or a change of batch_size
    BLOCKED = "blocked"  # a client blocked on its answers, and now every client waits
    POLLED = "polled"  # a client detached, or the engine stops
    RETURNED = "returned"  # a batch came back from the device
    TIMER = "timer"  # the filling buffer's timer ran out (armed for timeout_ms at its first commit)


FILLED, BLOCKED, RETURNED, TIMER = Event.FILLED, Event.BLOCKED, Event.RETURNED, Event.TIMER  # (module-level reads)


class QueueState(NamedTuple):
    """The batcher's state as the rule sees it, in ``flush_reason``'s
    argument order."""
    event: str  # an ``Event``
    queued: int
    batch_size: int
    clients: int
    waiting: int
    age_s: float
    timeout_s: float | None  # None: no timeout
    idle_slot: bool
    device_empty: bool


def flush_reason(event: str, queued: int, batch_size: int, clients: int, waiting: int, age_s: float,
                 timeout_s: float | None, idle_slot: bool, device_empty: bool) -> str | None:
    """Why the filling buffer leaves now, or None: it keeps filling.

    - "full": ``batch_size`` requests (or more, right after batch_size was
      lowered). It leaves at once, whatever the device holds; the dispatch
      keeps it in its ready queue while the device has its ``bound``.
    - A *partial* buffer leaves only into an idle slot, so that while the
      device has work the games it answers join the filling buffer, and
      groups of games merge into full batches rather than split into small
      ones. A commit alone never sends one (only "full" is looked at then).
      Into an idle slot it leaves:
      - "waiting": when every client waits (nothing more can arrive), on a
        block, a poll or a returned batch;
      - "timeout": when its timer runs out, or, on a poll, when its age
        has reached ``timeout_s``; right after a batch returned only if
        the device is empty, since the returned games are about to join it.

    A trigger that comes while the device has no idle slot is not lost: the
    batcher looks again when a batch returns (``Event.RETURNED``), and the
    timer, when it finds no idle slot, is armed again.

    Why not "flush whenever every game waits": when the device is slower
    than the search, every game is waiting most of the time, so each full
    batch would split a group of games and the remainder would leave at once
    as a small batch; nothing would merge the groups again (docs/engine.md,
    "The flush rule", has the measurement). One game alone (GTP analysis)
    is unaffected: every commit finds the device idle and every client
    waiting, so each request leaves at once.
    """
    if queued <= 0:
        return None
    if queued >= batch_size:
        return "full"
    if event == FILLED or not idle_slot:
        return None
    if event == TIMER:
        return "timeout"
    if waiting >= clients:
        return "waiting"
    if (event != BLOCKED and timeout_s is not None and age_s >= timeout_s
            and (event != RETURNED or device_empty)):
        return "timeout"
    return None
