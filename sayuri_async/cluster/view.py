"""The live view of a fleet: totals, one row per node and per GPU, events.

Vocabulary
----------
group       the engines counted together: ``total`` (every engine), a node
            (its label), a GPU of a node (``<node>/gpu<ids>``, from the
            ``ActorStatus``'s ``gpu``). Each group's figures come from
            ``selfplay/report.py``'s ``aggregate``, ``Window`` and
            ``diagnose``: the same figures and verdicts as on one machine.
devices    a group's devices: each node's GPUs, or its CPU (``devices_key``);
            device busy and efficiency are per device, as on one machine
            with several GPUs.
membership  the engines of a group (their ``Status.proc``); when it changes
            (a node joins or leaves, an engine restarts) the group's window
            starts again, so that no rate mixes counters of engines that
            came or went.
row         ``<group>  engines N  games  spool  evals/s  eff  fill  loop
            games/s  net  | verdict``; ``spool``: the group's files waiting
            in spools. The totals line is ``report.plain_line``'s, with the
            engines that are gone added (``ledger.Done``): its games never
            shrink when a node leaves or an engine restarts.
fleet line  engines (those starting, before their first figures, and those
            waiting for the fleet's network said apart), the published
            generation, the files waiting in spools, Ingest's
            rate in files a second (over the last ``RATE_WINDOW_S``) and
            its counts: files written, the games and chunks they hold,
            duplicates refused.
behind      a node whose spools hold more than ``SPOOL_BEHIND`` files is
            said once as an event, with the files waiting and Ingest's rate,
            and again when it is down to ``SPOOL_CAUGHT_UP``.
event       a node joined or left (with the games it lost), a network
            published or refused, a spool behind: printed at once, with the
            time.
ClusterView  ``update(statuses, ingest, generation, done, waiting, starting)``
            about every second (``ActorStatus`` records with figures,
            ``IngestStats``, ``ledger.Done``, engines waiting for the
            network, engines with no figures yet), printing every ``every``
            seconds, the fleet line even before any figures; ``close(...)`` the
            summary: the totals, per node games, chunks and networks, the
            engines gone, Ingest's counts, the games lost and the files left
            in spools.
            ``tui.py`` draws the same rows (``row_cells``) with rich.
"""
from __future__ import annotations

import sys
import time
from collections import deque
from dataclasses import replace

from ..selfplay.report import Window, aggregate, diagnose, plain_line, summary_lines
from ..infer.stats import Counters
from ..selfplay.status import EngineSettings, Status
from .actor import ActorStatus
from .ingest import IngestStats
from .ledger import Done

TOTAL = "total"
ROW_COLUMNS = ("group", "engines", "games", "spool", "evals/s", "eff", "fill", "loop", "games/s", "network",
               "verdict")
RATE_WINDOW_S = 10.0
SPOOL_BEHIND = 100
SPOOL_CAUGHT_UP = 20


def group_keys(st: ActorStatus) -> list[str]:
    """The groups an engine's status counts in (see the vocabulary)."""
    keys = [TOTAL, st.node]
    if st.gpu:
        keys.append(f"{st.node}/gpu{st.gpu}")
    return keys


def devices_key(st: ActorStatus) -> tuple[str, str]:
    """The device an engine runs on: its node's GPU, or its node's CPU."""
    return st.node, st.gpu or st.engine.settings.device


class _Group:
    def __init__(self, members: frozenset[str], devices: int) -> None:
        self.members = members
        self.window = Window(devices=devices)


class ClusterView:
    def __init__(self, every: float = 5.0, stream=None, leaves_per_await: int = 1) -> None:
        self.every = every
        self.stream = stream or sys.stdout
        self.leaves = leaves_per_await
        self.groups: dict[str, _Group] = {}
        self.last_agg: dict[str, Status] = {}
        self.spool: dict[str, int] = {}  # group -> files waiting in its spools
        self.done = Done()
        self.behind: set[str] = set()  # nodes whose spools are behind
        self._ingest: deque[tuple[float, int]] = deque()  # (time, files Ingest answered)
        self._last = 0.0
        self._t0 = time.monotonic()

    def event(self, text: str) -> None:
        print(f"[{time.monotonic() - self._t0:7.1f}s] {text}", file=self.stream, flush=True)

    def _push(self, statuses: list[ActorStatus]) -> dict[str, list[ActorStatus]]:
        by_group: dict[str, list[ActorStatus]] = {}
        for st in statuses:
            for key in group_keys(st):
                by_group.setdefault(key, []).append(st)
        for key, sts in by_group.items():
            members = frozenset(s.engine.proc for s in sts)
            g = self.groups.get(key)
            if g is None or g.members != members:
                devices = len({devices_key(s) for s in sts}) or 1
                g = self.groups[key] = _Group(members, devices)
            agg = aggregate([s.engine for s in sts])
            g.window.push(agg)
            self.last_agg[key] = agg
            self.spool[key] = sum(s.spool_files for s in sts)
        for key in [k for k in self.groups if k not in by_group]:
            del self.groups[key]
            self.last_agg.pop(key, None)
            self.spool.pop(key, None)
        return by_group

    def total(self) -> Status | None:
        """The engines' aggregate with the engines that are gone added (see "row")."""
        agg, d = self.last_agg.get(TOTAL), self.done
        if agg is None:
            if not d.games:
                return None
            agg = Status(t=0.0, elapsed=time.monotonic() - self._t0, loop_cpu_s=0.0,
                         counters=Counters(), settings=EngineSettings())
        return replace(agg, finished=agg.finished + d.games, chunks=agg.chunks + d.chunks,
                       positions_written=agg.positions_written + d.positions)

    def ingest_rate(self) -> float | None:
        """Ingest's files a second over the last ``RATE_WINDOW_S`` (None before
        looks a second apart)."""
        if len(self._ingest) < 2 or self._ingest[-1][0] - self._ingest[0][0] < 1.0:
            return None
        (t0, n0), (t1, n1) = self._ingest[0], self._ingest[-1]
        return (n1 - n0) / (t1 - t0)

    def _note(self, ingest: IngestStats | None, done: Done | None) -> None:
        if done is not None:
            self.done = done
        if ingest is None:
            return
        now = time.monotonic()
        self._ingest.append((now, ingest.written + ingest.duplicates))
        while len(self._ingest) > 2 and now - self._ingest[0][0] > RATE_WINDOW_S:
            self._ingest.popleft()
        for node in sorted(k for k in self.spool if k != TOTAL and "/" not in k):
            waiting = self.spool[node]
            if node not in self.behind and waiting > SPOOL_BEHIND:
                self.behind.add(node)
                rate = self.ingest_rate()
                self.event(f"node {node}'s spools fall behind: {waiting} file(s) waiting, Ingest at "
                           + ("?" if rate is None else f"{rate:.1f}") + " file(s)/s")
            elif node in self.behind and waiting <= SPOOL_CAUGHT_UP:
                self.behind.discard(node)
                self.event(f"node {node}'s spools caught up: {waiting} file(s) waiting")
        self.behind &= set(self.spool)

    def rows(self) -> list[str]:
        """The totals line, then one row per node and per GPU."""
        out = []
        agg = self.total()
        if agg is None or TOTAL not in self.groups:
            return out
        r = self.groups[TOTAL].window.recent()
        out.append(f"{TOTAL}: " + plain_line(agg, r, self.leaves))
        for key in self.groups_in_order():
            out.append(self._row(key))
        return out

    def _row(self, key: str) -> str:
        c = self.row_cells(key)
        head = f"  {c[0]:<24} engines {c[1]:>2}  games {c[2]:>5}  spool {c[3]:>4}"
        if c[4] == "":
            return f"{head}  warming up  net {c[9]}"
        return (f"{head}  evals/s {c[4]:>8}  eff {c[5]:>4}  fill {c[6]:>4}  loop {c[7]:>4}  "
                f"games/s {c[8]:>6}  net {c[9]}  | {c[10]}")

    def row_cells(self, key: str) -> list[str]:
        """A group's row as ``ROW_COLUMNS`` texts; figures empty while it warms up."""
        agg, r = self.last_agg[key], self.groups[key].window.recent()
        settings = replace(agg.settings, leaves_per_await=self.leaves)
        net = agg.network or "-"
        spool = str(self.spool.get(key, 0))
        if r is None or r.warming:
            return [key, str(agg.loops), str(agg.finished), spool, "", "", "", "", "", net, "warming up"]
        eff = r.device_efficiency
        return [key, str(agg.loops), str(agg.finished), spool, f"{r.nn_evals_s:.0f}",
                "-" if eff is None else f"{eff:.0%}", f"{r.batch_fill:.0%}",
                f"{r.loop_busy_max:.0%}", f"{r.games_s:.2f}", net,
                diagnose(r, settings).kind]

    def groups_in_order(self) -> list[str]:
        """Every node, each followed by its GPUs (the totals apart)."""
        return sorted(k for k in self.groups if k != TOTAL)

    def fleet_line(self, statuses: list[ActorStatus], ingest: IngestStats | None, generation: int,
                   waiting: int = 0, starting: int = 0) -> str:
        """See "fleet line"."""
        apart = [f"{starting} starting"] * bool(starting) + [f"{waiting} waiting for the network"] * bool(waiting)
        engines = f"{len(statuses) + waiting + starting} engine(s)" + (f" ({', '.join(apart)})" if apart else "")
        spool = sum(s.spool_files for s in statuses)
        tail = ""
        if ingest is not None:
            rate = self.ingest_rate()
            tail = (f", ingest {'-' if rate is None else f'{rate:.1f}'} file(s)/s: {ingest.written} file(s), "
                    f"{ingest.games} game(s) in {ingest.chunks} chunk(s), {ingest.duplicates} duplicate(s)")
        return f"fleet: {engines}, published generation {generation}, spools {spool} file(s) waiting{tail}"

    def update(self, statuses: list[ActorStatus], ingest: IngestStats | None = None, generation: int = 0,
               done: Done | None = None, waiting: int = 0, starting: int = 0) -> None:
        self._push(statuses)
        self._note(ingest, done)
        now = time.monotonic()
        if now - self._last < self.every or not (statuses or waiting or starting):
            return
        self._last = now
        self.event(self.fleet_line(statuses, ingest, generation, waiting, starting))
        for line in self.rows():
            print(line, file=self.stream, flush=True)

    def close(self, statuses: list[ActorStatus], ingest: IngestStats | None = None, done: Done | None = None,
              spool_left: int = 0) -> None:
        if statuses:
            self._push(statuses)
        if done is not None:
            self.done = done
        g = self.groups.get(TOTAL)
        for line in summary_lines(self.total(), g.window.overall() if g else None):
            print(line, file=self.stream, flush=True)
        for key in sorted(k for k in self.last_agg if k != TOTAL and "/" not in k):
            agg = self.last_agg[key]
            print(f"  {key}: games {agg.finished}  chunks {agg.chunks}  networks played "
                  f"{', '.join(agg.networks) or '-'}", file=self.stream, flush=True)
        d = self.done
        if d.games or d.lost:
            print(f"  engines gone (nodes that left, engines restarted): games {d.games}  chunks {d.chunks}",
                  file=self.stream, flush=True)
        ing = ingest or IngestStats()
        print(f"ingest: {ing.written} file(s) written ({ing.bytes / 1e6:.1f} MB): {ing.games} game(s) in "
              f"{ing.chunks} chunk(s); {ing.duplicates} duplicate(s) refused; games lost with engines that went: "
              f"{d.lost} ({d.lost_in_progress} in progress, {d.lost_waiting} waiting for their chunk); "
              f"files left in spools: {spool_left}", file=self.stream, flush=True)
