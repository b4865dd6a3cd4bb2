"""The RL loop: self-play, train, export, evaluate, repeat, in one workspace.

Vocabulary
----------
workspace   the folder that holds a whole run, and its state: ``workspace``.
generation  g = 1, 2, ...: self-play ``games_per_generation`` games with the
            best network so far (random for g = 1), train until step
            ``g * steps_per_generation`` on the replay window, export
            gen-g, then (optionally) play it against the best network.
phase       "selfplay", "train" or "eval"; state.json is rewritten atomically
            after each, so a run killed at any moment (SIGKILL included)
            continues from the last finished step: self-play counts the games
            already in its generation's chunks, and training resumes from its
            last readable checkpoint (a training phase that had finished
            hands back its export again). A state file with another phase,
            or no loop state at all, is refused with its name.
signals     SIGINT and SIGTERM during self-play stop it cleanly and end the
            loop after it, with exit status 130 or 143 (128 + the signal's
            number); self-play processes end with the loop even when it
            is killed. During training and evaluation they end the loop at
            once: the step in progress is lost, the line says the next
            start continues from the last finished step, and the exit
            status is the same. Ctrl-C works in every phase even for a loop
            started with SIGINT ignored (a script's background job:
            ``lifetime.ctrl_c_interrupts``). Killed temporaries are cleaned
            at start (``fileio.clean_stale_temps``).
errors      a bad config or state file (a best network outside the
            workspace, missing or cut short included): one line, exit status
            2; a failure during the run (self-play, training, a weights
            file, the disk): one line, exit status 1, ending with how the
            next start goes on (``_what_next``: from the last finished step,
            but only once there is room on a full disk; nothing about going
            on where the best network is the trouble).
init        ``--init WEIGHTS`` starts a new workspace from a trained network
            (e.g. one supervised on ``import-sgf`` or ``import-data`` chunks;
            ours, a Sayuri network's export or import, or Sayuri's own file,
            which is imported): it is copied to weights/gen-000000 and is the best network of generation 0, so
            generation 1 self-plays with it and its training starts from its
            parameters ([model] unused). A started workspace keeps its own.
gating      with ``gating = true`` the new network becomes the best only if
            it passes the gate against the best network (``gating``):
            ``gating_rule = "sprt"`` plays rounds of ``eval_round_games``
            until a sequential test of ``sprt_elo0`` against ``sprt_elo1``
            decides (refused when ``eval_games`` pass undecided);
            "win_rate" plays ``eval_games`` and needs ``gating_win_rate``.
            Without gating it always does (the evaluation is only reported).
curves      per generation: game length and resignation false positives of
            its self-play, the losses, the win rate against the previous
            best, and (``anchor_games`` > 0) against a fixed GTP anchor with
            its Elo: logs/generations.csv and logs/curves.png
            (``stats``).
"""
from __future__ import annotations

import asyncio
import csv
import errno
import json
import shlex
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

from ..configfile import Bad, CommandLine, ConfigError
from .config import load_loop_config, reuse_figures
from .gating import GateRule
from ..fileio import atomic_path, run_stamp
from ..killpoint import kill_point
from ..lifetime import ctrl_c_interrupts
from .workspace import LoopState, Workspace, whole_positions
from .stats import CURVE_COLUMNS, anchor_figures, curve_rows, generation_game_stats, plot_curves
from ..console import console as wide_console
from ..usererror import ArgumentParser, answered, check_device, message, output_folder, stopped_by


def last_checkpoint_step(out: Path, warn=None) -> int | None:
    """The step of the newest readable checkpoint under ``out`` (newer
    unreadable ones are set aside with a warning: ``newest_readable``)."""
    from ..train.checkpoint import newest_readable

    found = newest_readable(out, warn or (lambda text: print(f"warning: {text}", file=sys.stderr)))
    return int(found[1]["step"]) if found else None


class Loop:
    def __init__(self, config_path: str, workspace: str, use_tui: bool = False) -> None:
        self.config_path = config_path
        self.cfg, self.sp_cfg, self.train_cfg = load_loop_config(config_path)
        self.ws = Workspace(workspace)
        anchor = shlex.split(self.cfg.anchor_command)
        if self.cfg.anchor_games and (not anchor or shutil.which(anchor[0]) is None):
            raise ConfigError(f"{config_path}: [loop] anchor_command {self.cfg.anchor_command!r}: no such program "
                              f"(anchor_games = {self.cfg.anchor_games} needs it; 0 turns the anchor off)")
        d = self.train_cfg.data
        from ..train.dataset import list_chunks

        if self.cfg.reference_dir and not list_chunks(self.cfg.reference_dir, d.board_size)[0]:
            raise ConfigError(f"{config_path}: [loop] reference_dir {self.cfg.reference_dir!r}: no chunks (*.npz) "
                              f"of board size {d.board_size} (\"\" measures no reference)")
        if d.rehearsal_fraction > 0:  # refused now, not after a generation of self-play
            if not list_chunks(d.rehearsal_dir, d.board_size)[0]:
                raise ConfigError(f"{config_path}: [data] rehearsal_dir {d.rehearsal_dir!r}: no chunks (*.npz) of "
                                  f"board size {d.board_size} (rehearsal_fraction = {d.rehearsal_fraction:g} needs "
                                  f"them; 0 turns rehearsal off)")
        self.use_tui = use_tui
        self._interrupted = False

    def say(self, text: str) -> None:
        print(f"[loop {time.strftime('%H:%M:%S')}] {text}", flush=True)

    def warn(self, text: str) -> None:
        print(f"[loop {time.strftime('%H:%M:%S')}] warning: {text}", file=sys.stderr, flush=True)

    def _stopping(self) -> bool:
        return self._interrupted or self.ws.stop_requested()

    # ---- phases --------------------------------------------------------------
    def selfplay(self, st: LoopState) -> bool:
        """Play the generation's games; False when stopped before the end."""
        from ..selfplay.report import PlainReporter
        from ..selfplay.runner import run_selfplay

        done, _ = self.ws.games_in_generation(st.generation)
        left = self.cfg.games_per_generation - done
        if left <= 0:
            return True
        best = None if st.best == "random" else str(self.ws.root / st.best)
        self.say(f"generation {st.generation}: self-play {left} games with {st.best}")
        cfg = replace(self.sp_cfg, num_games=left, out=str(self.ws.root), weights=best or "",
                      generation=st.generation, chunk_games=min(self.sp_cfg.chunk_games, left))
        reporter = PlainReporter(every=10.0, leaves_per_await=cfg.search.leaves_per_await)
        if self.use_tui and sys.stdout.isatty():
            try:
                from ..selfplay.tui import TuiReporter

                reporter = TuiReporter(cfg)
            except ImportError:
                pass
        stop_file = self.ws.root / "STOP"

        class _StopAware:
            def update(self, statuses):
                cmds = reporter.update(statuses) or []
                return cmds + ([{"stop": True}] if stop_file.exists() else [])

            def close(self, statuses):
                reporter.close(statuses)

        def interrupted(signum: int) -> None:
            self._interrupted = True
            stopped_by(signum)  # the loop ends after self-play with 128 + the signal's number

        run_selfplay(cfg, _StopAware(), on_signal=interrupted)
        done, _ = self.ws.games_in_generation(st.generation)
        return done >= self.cfg.games_per_generation

    def train(self, st: LoopState) -> dict:
        from ..train.errors import TrainError
        from ..train.launch import train  # in this process, or under torchrun with [run] processes > 1

        cfg = self.train_cfg
        target = st.train_target or st.generation * self.cfg.steps_per_generation
        ck = Path(self.ws.root / "checkpoints")
        cfg.data.dir = str(self.ws.root / "data")
        cfg.run.out = str(ck)
        cfg.run.export_every = max(cfg.run.export_every, target + 1)  # export once, at the end
        last = last_checkpoint_step(ck, self.warn)
        resume = last is not None
        # a new generation keeps the model and optimizer but picks a new window
        refresh = resume and last <= st.train_start_step
        self.say(f"generation {st.generation}: train to step {target}"
                 + (f" (resuming at {last})" if resume else ""))
        # "auto" without a checkpoint: the first generation, started afresh over what a kill left
        init = str(self.ws.root / st.best) if st.best_generation == 0 and st.best != "random" else None
        result = train(cfg, steps=target, init=init, resume=True if resume else "auto", refresh_window=refresh,
                       progress=None)
        if result.export is None:
            raise TrainError(f"{ck}: training reached step {result.steps} without an exported network")
        dest = self.ws.weights(st.generation)
        with atomic_path(dest) as tmp:
            shutil.copyfile(result.export, tmp)
        norms = {"export_norms": self.cfg.export_norms}
        if self.cfg.export_norms == "recompute":
            from ..train.norm_stats import recompute_export

            norms.update(recompute_export(dest, self.ws.root / "data", st.generation, self.cfg.norm_positions,
                                          seed=st.generation))
        return {"steps": result.steps, "samples": result.samples, "window_positions": self.window_positions(),
                **norms, **{f"loss_{k}": round(v, 4) for k, v in result.losses.items()}}

    def window_positions(self) -> int:
        """Positions in the replay window the trainer's rule picks now."""
        from ..train.dataset import list_chunks, window_size

        d = self.train_cfg.data
        chunks, _ = list_chunks(self.ws.root / "data", d.board_size)
        total = sum(c.positions for c in chunks)
        return min(total, window_size(total, d.window_min_positions, d.window_max_positions,
                                      d.window_expand_per_position, d.window_taper_exponent))

    def train_steps(self, new_positions: int) -> int:
        """Training steps for a generation that brought ``new_positions``
        (not held out): ``samples_per_position`` samples for each, or the
        fixed ``steps_per_generation``."""
        from ..train.schedule import reuse_steps

        if self.cfg.samples_per_position <= 0:
            return self.cfg.steps_per_generation
        # a rehearsed share of every batch adds steps: the new positions keep their reuse
        per_position = self.cfg.samples_per_position / (1.0 - self.train_cfg.data.rehearsal_fraction)
        return max(1, reuse_steps(new_positions, per_position, self.train_cfg.optim.batch_size))

    def evaluate(self, st: LoopState, summary: dict) -> dict:
        """Play the candidate against the best in rounds until the gate
        rule decides (``gating.py``); each round's tally is saved in the
        state, so a killed evaluation resumes at its last whole round.
        Returns the match record ({} without evaluation games)."""
        from ..rating.match import MatchResult, NetPlayer, run_match
        from ..backend_factory import make_backend

        rule = self.cfg.gate_rule()
        if self.cfg.eval_games == 0:
            return {}
        cand_path = self.ws.weights(st.generation)
        best_path = None if st.best == "random" else str(self.ws.root / st.best)
        size = self.sp_cfg.board_sizes[0]
        batch = 8

        def player(weights: str | None, name: str) -> NetPlayer:
            be = make_backend(weights, device=self.cfg.device, max_batch=batch)
            # a few sampled opening moves: two deterministic networks would replay the same games
            return NetPlayer(name, be, self.cfg.eval_playouts, False, 0.0, batch, opening_moves=size // 2)

        cand = player(str(cand_path), f"gen{st.generation}")
        best = player(best_path, f"gen{st.best_generation}" if best_path else "random")
        rec = dict(summary.get("match") or {})
        if rec.get("opponent") != best.name:
            rec = {}
        tally = MatchResult(cand.name, best.name, rec.get("wins", 0), rec.get("losses", 0), rec.get("draws", 0))
        rounds = rec.get("rounds", 0)
        decision = rule.decide(tally.wins, tally.draws, tally.losses) if tally.games else "play"
        self.say(f"generation {st.generation}: {cand.name} vs {best.name}, gate: {rule.describe()}"
                 + (f" (resuming after {tally.games} games)" if tally.games else ""))
        while decision == "play" and not self._stopping():
            games = rule.next_round(tally.games)
            sgf_dir = self.ws.root / "matches" / (f"gen-{st.generation:06d}" if rounds == 0
                                                  else f"gen-{st.generation:06d}-round{rounds + 1:03d}")
            if sgf_dir.is_dir() and any(sgf_dir.iterdir()):  # a killed round's games stay; this one's go beside
                sgf_dir = sgf_dir.with_name(f"{sgf_dir.name}-{run_stamp()}")
            sgf_dir.mkdir(parents=True, exist_ok=True)
            res = asyncio.run(run_match(cand, best, games, size, self.sp_cfg.komi, 8, sgf_dir,
                                        seed=st.generation * 1000 + rounds))
            tally.wins, tally.losses, tally.draws = (tally.wins + res.wins, tally.losses + res.losses,
                                                     tally.draws + res.draws)
            rounds += 1
            decision = rule.decide(tally.wins, tally.draws, tally.losses)
            summary["match"] = self.match_record(tally, rule, rounds, decision)
            self.ws.save_state(st)
            self.say(f"generation {st.generation}: {tally.wins}-{tally.losses}-{tally.draws} after {tally.games} "
                     f"games, llr {summary['match']['llr']:+.2f} ({decision})")
        return self.match_record(tally, rule, rounds, decision)

    @staticmethod
    def match_record(tally, rule: GateRule, rounds: int, decision: str) -> dict:
        """The evaluation's figures as the state keeps them."""
        from .gating import sprt_llr

        lo, hi = tally.wilson()
        return {"opponent": tally.b, "wins": tally.wins, "losses": tally.losses, "draws": tally.draws,
                "win_rate": round(tally.win_rate, 3), "ci": [round(lo, 3), round(hi, 3)], "rounds": rounds,
                "llr": round(sprt_llr(tally.wins, tally.draws, tally.losses, rule.elo0, rule.elo1), 3),
                "rule": rule.mode, "decision": decision}

    def value_quality(self, st: LoopState) -> dict:
        """The value head's squared error on the generation's held-out
        positions, for the candidate and the best, beside answering 0
        (``train/value_quality.py``); {} without held-out chunks."""
        from ..train.value_quality import load_positions, net_figures

        if not self.ws.holdout_chunks(st.generation):
            return {}
        pos, _ = load_positions(self.ws.root / "holdout", st.generation, 20_000)
        cand = net_figures(str(self.ws.weights(st.generation)), pos)
        out = {"holdout_positions": int(len(pos["z"])), "value_baseline_mse": cand["baseline_mse"],
               "value_mse": cand["value_mse"], "value_corr": cand["value_corr"], "policy_ce": cand["policy_ce"]}
        if st.best != "random":
            best = net_figures(str(self.ws.root / st.best), pos)
            out.update(value_mse_best=best["value_mse"], policy_ce_best=best["policy_ce"])
        self.say(f"generation {st.generation}: value mse {out['value_mse']} on {out['holdout_positions']} held-out "
                 f"positions (best {out.get('value_mse_best', '-')}, answering 0 {out['value_baseline_mse']})")
        return out

    def reference_quality(self, st: LoopState) -> dict:
        """The candidate's figures on ``reference_dir`` (the start network's
        kind of data, held out), beside generation 0's; {} without it."""
        from ..train.value_quality import load_positions, net_figures

        if not self.cfg.reference_dir:
            return {}
        pos, _ = load_positions(Path(self.cfg.reference_dir), None, 20_000)
        if not len(pos["z"]):
            return {}
        names = {"value_mse": "value_mse", "top1": "top1_played", "policy_ce": "policy_ce"}  # ours: net_figures'
        start_keys = [f"reference_start_{n}" for n in names]
        # generation 0's figures on the same positions, when an earlier generation measured them
        out = next(({k: s[k] for k in start_keys} for s in st.summaries
                    if s.get("reference_positions") == len(pos["z"]) and all(k in s for k in start_keys)), {})
        for key, gen in (("reference", st.generation), ("reference_start", 0)):
            if not self.ws.weights(gen).is_file() or f"{key}_value_mse" in out:
                continue
            f = net_figures(str(self.ws.weights(gen)), pos)
            out.update({f"{key}_{n}": f[theirs] for n, theirs in names.items()})
        out["reference_positions"] = int(len(pos["z"]))
        self.say(f"generation {st.generation}: on {out['reference_positions']} reference positions value mse "
                 f"{out.get('reference_value_mse', '-')}, played move first {out.get('reference_top1', '-')} "
                 f"(generation 0: {out.get('reference_start_value_mse', '-')}, "
                 f"{out.get('reference_start_top1', '-')})")
        return out

    def anchor(self, st: LoopState) -> dict:
        """``anchor_games`` games of the new network against the anchor
        (``stats``); {} when there are none."""
        from ..rating.match import GtpPlayer, NetPlayer, run_match
        from ..backend_factory import make_backend

        if self.cfg.anchor_games == 0:
            return {}
        size = self.sp_cfg.board_sizes[0]
        batch = 8
        playouts = self.cfg.anchor_playouts or self.cfg.eval_playouts
        be = make_backend(str(self.ws.weights(st.generation)), device=self.cfg.device, max_batch=batch)
        cand = NetPlayer(f"gen{st.generation}", be, playouts, False, 0.0, batch)
        anchor = GtpPlayer(self.cfg.anchor_command)
        anchor.name = "anchor"
        sgf_dir = self.ws.root / "matches" / f"anchor-{st.generation:06d}"
        sgf_dir.mkdir(parents=True, exist_ok=True)
        self.say(f"generation {st.generation}: {self.cfg.anchor_games} games against the anchor "
                 f"({self.cfg.anchor_command})")
        res = asyncio.run(run_match(cand, anchor, self.cfg.anchor_games, size, self.sp_cfg.komi, 2, sgf_dir,
                                    random_opening=2, seed=st.generation))
        return anchor_figures(res.wins, res.losses, res.draws)

    def anchor_init(self, st: LoopState) -> None:
        """The anchor games of an ``--init`` network (generation 0), once, so
        the curves start from it."""
        if (self.cfg.anchor_games == 0 or not self.ws.weights(0).is_file() or self._stopping()
                or any(s["generation"] == 0 for s in st.summaries)):
            return
        st.summaries.insert(0, {"generation": 0, **self.anchor(replace(st, generation=0)), "promoted": True})
        self.ws.save_state(st)

    def init_from(self, weights: str) -> None:
        """Begin a new workspace with ``weights`` as generation 0 (see the
        vocabulary); ConfigError for a started workspace or a bad file."""
        from ..net.weights import WeightsError
        from ..sayuri.weights import is_sayuri_file, load_any_weights, save_imported

        dest = self.ws.weights(0)
        rel = str(dest.relative_to(self.ws.root))
        if self.ws.state_path.exists():
            st = self.ws.load_state()
            if st.best == rel or st.best_generation > 0:
                self.say(f"--init {weights}: the workspace has started already; it goes on with {st.best}")
                return
            raise ConfigError(f"{self.ws.state_path}: the workspace has started already, --init {weights} "
                              "only begins a new one")
        try:
            net, meta = load_any_weights(weights)  # ours, a Sayuri file, or our import or export of one
        except (WeightsError, OSError) as e:
            raise ConfigError(f"--init {weights}: not a weights file ({e})") from None
        if is_sayuri_file(weights):  # Sayuri's own file: imported, so the workspace holds our format only
            save_imported(dest, net, meta)
        else:
            with atomic_path(dest) as tmp:
                shutil.copyfile(weights, tmp)
        self.ws.save_state(LoopState(best=rel, best_generation=0))
        self.say(f"workspace {self.ws.root}: generation 1 starts from {weights} (copied to {rel})")

    # ---- driver --------------------------------------------------------------
    def run(self) -> int:
        st = self.ws.load_state()
        problem = self.ws.best_problem(st)
        if problem is not None:  # every start would fail on it: said once, before any work
            raise ConfigError(problem)
        for stale in self.ws.clean_stale():
            self.say(f"removed {stale}, the temporary file of a killed write")
        self.say(f"workspace {self.ws.root}: generation {st.generation}, phase {st.phase}, best {st.best}")
        if self.ws.stop_requested():
            stop = self.ws.root / "STOP"
            self.say(f"{stop} is there (left from an earlier stop?): stopping before any work; "
                     f"delete it to run the loop: rm {stop}")
            return 0
        self.anchor_init(st)
        while self.cfg.generations == 0 or st.generation <= self.cfg.generations:
            if self._stopping():
                self.say("stop requested: leaving after the last finished step")
                return 0
            summary = next((s for s in st.summaries if s["generation"] == st.generation), None)
            if summary is None:
                summary = {"generation": st.generation}
                st.summaries.append(summary)
            if st.phase == "selfplay":
                if not self.selfplay(st):
                    self.say("self-play stopped before the generation's games were done")
                    return 0
                if self.cfg.holdout_fraction > 0:
                    self.ws.hold_out(st.generation, self.cfg.holdout_fraction)
                games, positions = self.ws.games_in_generation(st.generation)
                stats = generation_game_stats(self.ws.root / "data", st.generation)
                held = sum(whole_positions(p) for p in self.ws.holdout_chunks(st.generation))
                st.train_start_step = last_checkpoint_step(self.ws.root / "checkpoints", self.warn) or 0
                steps = self.train_steps(positions - held)
                st.train_target = st.train_start_step + steps
                summary.update(games=games, positions=positions, holdout_positions=held,
                               **{k: v for k, v in stats.items() if k != "games"},
                               **reuse_figures(positions - held, steps, self.train_cfg.optim.batch_size,
                                               self.train_cfg.data.rehearsal_fraction))
                st.phase = "train"
                self.ws.save_state(st)
            if st.phase == "train":
                if self._stopping():
                    continue
                summary.update(self.train(st))
                kill_point("loop-trained")  # the export is in weights/, the state still says "train"
                st.phase = "eval"
                self.ws.save_state(st)
            if st.phase == "eval":
                if self._stopping():
                    continue
                if "value_mse" not in summary:
                    summary.update(self.value_quality(st))
                if "reference_positions" not in summary:
                    summary.update(self.reference_quality(st))
                ev = self.evaluate(st, summary)
                if self._stopping():
                    continue
                summary["match"] = ev
                summary.update(self.anchor(st))
                kill_point("loop-evaluated")  # the match is played, the promotion not recorded
                promote = not ev or ev["decision"] == "promote"
                summary["promoted"] = promote
                if promote:
                    st.best = str(self.ws.weights(st.generation).relative_to(self.ws.root))
                    st.best_generation = st.generation
                summary["best_generation"] = st.best_generation
                st.generation += 1
                st.phase = "selfplay"
                self.ws.save_state(st)
                self.write_summary(st)
        self.say("all generations done")
        return 0

    def write_summary(self, st: LoopState) -> None:
        from rich.table import Table

        cols = ["generation", "games", "positions", "reuse", "game_length", "steps", "loss_policy", "loss_wdl",
                "value_mse", "match", "anchor", "resign FP", "promoted"]
        t = Table(title="generations")
        for c in cols:
            t.add_column(c, justify="right")
        for s in st.summaries:
            m = s.get("match") or {}
            match = (f"{m['wins']}-{m['losses']}-{m['draws']} vs {m['opponent']} ({m['win_rate']:.0%}"
                     + (f", llr {m['llr']:+.2f}" if m.get("rule") == "sprt" else "") + ")") if m else ""
            anchor = (f"{s['anchor_win_rate']:.0%} of {s['anchor_games']}, Elo {s['anchor_elo']}"
                      if s.get("anchor_games") else "")
            fp = f"{s['resign_false_positives']}/{s['resign_checked']}" if s.get("resign_checked") else ""
            t.add_row(*[str(s.get(c, "")) for c in cols[:9]], match, anchor, fp, str(s.get("promoted", "")))
        wide_console().print(t)
        csv_path = self.ws.root / "logs" / "generations.csv"
        with atomic_path(csv_path) as tmp:
            with open(tmp, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=CURVE_COLUMNS)
                w.writeheader()
                w.writerows(curve_rows(st.summaries))
        try:
            plot_curves(csv_path, self.ws.root / "logs" / "curves.png")
        except ImportError:
            pass  # matplotlib is an optional extra: the CSV holds the curves


@answered("loop")
def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(prog="sayuri-async loop", description="The RL loop: self-play, train, evaluate.")
    p.add_argument("--config", required=True, help="loop TOML (e.g. configs/loop-9x9.toml)")
    p.add_argument("--workspace", required=True, help="folder for the whole run (created if missing)")
    p.add_argument("--generations", type=int, help="override [loop] generations")
    p.add_argument("--tui", action="store_true", help="live view during self-play (plain lines otherwise)")
    p.add_argument("--init", metavar="WEIGHTS", help="begin a new workspace from this network (generation 0)")
    args = p.parse_args(argv)
    output_folder(args.workspace, "--workspace")
    try:
        loop = Loop(args.config, args.workspace, use_tui=args.tui)
        if args.init:
            loop.init_from(args.init)
    except ConfigError as e:
        print(f"sayuri-async loop: {e}", file=sys.stderr)
        return 2
    check_device(loop.cfg.device, f"{args.config}: [loop] device")
    check_device(loop.sp_cfg.device, f"{args.config}: [selfplay] device", allow=(r"model(:\d+)?",))
    if loop.train_cfg.run.device != "auto":
        check_device(loop.train_cfg.run.device, f"{args.config}: [run] device")
    if args.generations is not None:
        try:
            loop.cfg = replace(loop.cfg, generations=args.generations)
        except Bad as e:
            print(f"sayuri-async loop: {e.located(CommandLine(), None)}", file=sys.stderr)
            return 2
    with ctrl_c_interrupts():  # every phase, whatever SIGINT's disposition at start (see "signals")
        return _run(loop)


def _disk_full(e: BaseException) -> bool:
    """Whether ``e`` (or an error it came from) is a full disk (ENOSPC; a
    self-play or training process's failure arrives as its text)."""
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if (isinstance(e, OSError) and e.errno == errno.ENOSPC) or "No space left on device" in str(e):
            return True
        e = e.__cause__ or e.__context__
    return False


def _what_next(loop: Loop, e: BaseException) -> str:
    """The end of a failure's line: how the next start goes on. It continues
    from the last finished step, except where it would fail the same way:
    the best network missing or damaged (the next start refuses it), or a
    full disk (it continues once there is room)."""
    try:
        problem = loop.ws.best_problem(loop.ws.load_state())
    except ConfigError as bad:
        problem = str(bad)
    if problem is not None:
        return "" if problem in str(e) else f" ({problem}; the next start stops there too)"
    if _disk_full(e):
        return "; the disk is full: free some space, and the next start continues from the last finished step"
    return "; the next start continues from the last finished step"


def _run(loop: Loop) -> int:
    """``loop.run()`` with every error as one line (see the vocabulary)."""
    from ..net.weights import WeightsError
    from ..selfplay.runner import SelfplayError
    from ..selfplay.writer_proc import WriterError
    from ..train.errors import TrainError

    try:
        return loop.run()
    except ConfigError as e:
        print(f"sayuri-async loop: {e}", file=sys.stderr)
        return 2
    except (SelfplayError, WriterError, TrainError, WeightsError, OSError) as e:
        text = message(e)
        print(f"sayuri-async loop: {text}{_what_next(loop, e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("sayuri-async loop: interrupted; the next start continues from the last finished step",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
