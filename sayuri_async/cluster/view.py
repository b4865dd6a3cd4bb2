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
row         ``<group>  engines N  evals/s  eff  fill  loop  games/s  net  |
            verdict``; the totals line is ``report.plain_line``'s.
event       a node joined or left (with the games it lost), a network
            published or refused: printed at once, with the time.
ClusterView  ``update(statuses, ingest, generation)`` about every second
            (``ActorStatus`` records with figures, ``IngestStats``),
            printing every ``every`` seconds; ``close(...)`` the summary.
            ``tui.py`` draws the same rows (``row_cells``) with rich.
"""
from __future__ import annotations

import sys
import time
from dataclasses import replace

from ..selfplay.report import Window, aggregate, diagnose, plain_line, summary_lines
from ..selfplay.status import Status
from .actor import ActorStatus
from .ingest import IngestStats

TOTAL = "total"
ROW_COLUMNS = ("group", "engines", "games", "evals/s", "eff", "fill", "loop", "games/s", "network", "verdict")


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
        for key in [k for k in self.groups if k not in by_group]:
            del self.groups[key]
            self.last_agg.pop(key, None)
        return by_group

    def rows(self) -> list[str]:
        """The totals line, then one row per node and per GPU."""
        out = []
        agg = self.last_agg.get(TOTAL)
        if agg is None:
            return out
        r = self.groups[TOTAL].window.recent()
        out.append(f"{TOTAL}: " + plain_line(agg, r, self.leaves))
        for key in self.groups_in_order():
            out.append(self._row(key))
        return out

    def _row(self, key: str) -> str:
        c = self.row_cells(key)
        head = f"  {c[0]:<24} engines {c[1]:>2}  games {c[2]:>5}"
        if c[3] == "":
            return f"{head}  warming up  net {c[8]}"
        return (f"{head}  evals/s {c[3]:>8}  eff {c[4]:>4}  fill {c[5]:>4}  loop {c[6]:>4}  "
                f"games/s {c[7]:>6}  net {c[8]}  | {c[9]}")

    def row_cells(self, key: str) -> list[str]:
        """A group's row as ``ROW_COLUMNS`` texts; figures empty while it warms up."""
        agg, r = self.last_agg[key], self.groups[key].window.recent()
        settings = replace(agg.settings, leaves_per_await=self.leaves)
        net = agg.network or "-"
        if r is None or r.warming:
            return [key, str(agg.loops), str(agg.finished), "", "", "", "", "", net, "warming up"]
        eff = r.device_efficiency
        return [key, str(agg.loops), str(agg.finished), f"{r.nn_evals_s:.0f}",
                "-" if eff is None else f"{eff:.0%}", f"{r.batch_fill:.0%}",
                f"{r.loop_busy_max:.0%}", f"{r.games_s:.2f}", net,
                diagnose(r, settings).kind]

    def groups_in_order(self) -> list[str]:
        """Every node, each followed by its GPUs (the totals apart)."""
        return sorted(k for k in self.groups if k != TOTAL)

    def fleet_line(self, statuses: list[ActorStatus], ingest: IngestStats | None, generation: int) -> str:
        tail = ""
        if ingest is not None:
            tail = f"  ingest {ingest.written} file(s), {ingest.duplicates} duplicate(s)"
        spool = sum(s.spool_files for s in statuses)
        return f"fleet: {len(statuses)} engine(s), published generation {generation}, spools {spool} file(s){tail}"

    def update(self, statuses: list[ActorStatus], ingest: IngestStats | None = None,
               generation: int = 0) -> None:
        self._push(statuses)
        now = time.monotonic()
        if now - self._last < self.every or not statuses:
            return
        self._last = now
        self.event(self.fleet_line(statuses, ingest, generation))
        for line in self.rows():
            print(line, file=self.stream, flush=True)

    def close(self, statuses: list[ActorStatus], ingest: IngestStats | None = None, lost_games: int = 0,
              spool_left: int = 0) -> None:
        if statuses:
            self._push(statuses)
        g = self.groups.get(TOTAL)
        for line in summary_lines(self.last_agg.get(TOTAL), g.window.overall() if g else None):
            print(line, file=self.stream, flush=True)
        for key in sorted(k for k in self.last_agg if k != TOTAL and "/" not in k):
            agg = self.last_agg[key]
            print(f"  {key}: games {agg.finished}  chunks {agg.chunks}  networks played "
                  f"{', '.join(agg.networks) or '-'}", file=self.stream, flush=True)
        ing = ingest or IngestStats()
        print(f"ingest: {ing.written} file(s) written ({ing.bytes / 1e6:.1f} MB), "
              f"{ing.duplicates} duplicate(s) refused; games lost with nodes that left: {lost_games}; "
              f"files left in spools: {spool_left}", file=self.stream, flush=True)
