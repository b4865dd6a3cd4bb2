"""The RL loop's workspace: its folders, its state file, and the accounting
of the chunks in it (``driver`` runs the generations in it).

Vocabulary
----------
workspace   the folder that holds a whole run (created on first start):
              state.json        where the loop is: generation and phase, the
                                best network, per-generation summaries
              weights/          gen-000001.safetensors ... (generation 0 is the
                                random network and has no file, or the
                                ``--init`` network, gen-000000)
              data/, sgf/       self-play chunks and games of every generation
              holdout/          the chunks kept out of training (``[loop]
                                holdout_fraction``), for the value-quality figures
              checkpoints/      the trainer's checkpoints, exports and log
              logs/             generations.csv (the summary table)
              matches/          evaluation games (SGF) per generation: gen-000001/, and
                                gen-000001-<run stamp>/ for each evaluation after a
                                killed one (whose games stay as they were)
              STOP              create it to end the loop after the current step
state       ``LoopState``: the generation, its phase, the best network, the
            step training reaches this generation, and one summary (a dict
            of figures) per generation; written atomically after every
            phase, refused with the file's name when it is not a loop state
            (JSON nested too deeply included).
best        "random" or a file of the workspace's weights/ folder, named
            relative to the workspace (``weights/gen-000003.safetensors``);
            a state naming any other path (absolute, or with ``..``) is
            refused, so the loop reads no file outside its workspace.
            ``best_problem`` says when the best network is missing or not a
            whole weights file: a start refuses to go on from it.
phase       "selfplay", "train" or "eval" (``PHASES``).
held out    a chunk chosen by a stable hash of its name (``held_out``),
            moved from data/ to holdout/ and never trained on.
"""
from __future__ import annotations

import json
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..configfile import ConfigError
from ..fileio import atomic_path, clean_stale_temps

PHASES = ("selfplay", "train", "eval")


@dataclass
class LoopState:
    generation: int = 1
    phase: str = "selfplay"
    best: str = "random"  # weights path relative to the workspace, or "random"
    best_generation: int = 0
    train_start_step: int = 0
    train_target: int = 0  # the step this generation trains to (0: generation * steps_per_generation)
    summaries: list[dict] = field(default_factory=list)


class Workspace:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        for sub in ("weights", "data", "holdout", "sgf", "checkpoints", "logs", "matches"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)

    @property
    def state_path(self) -> Path:
        return self.root / "state.json"

    def load_state(self) -> LoopState:
        """The saved state (a fresh one without a file); ConfigError naming
        the file for anything that is not a loop state."""
        if not self.state_path.exists():
            return LoopState()
        try:
            st = LoopState(**json.loads(self.state_path.read_text()))
        except RecursionError:
            raise ConfigError(f"{self.state_path}: not a loop state file (JSON nested too deeply)") from None
        except (ValueError, TypeError) as e:  # bad JSON, not UTF-8, a number of too many digits, not an object
            raise ConfigError(f"{self.state_path}: not a loop state file ({' '.join(str(e).split())[:200]})") \
                from None
        except OSError as e:
            raise ConfigError(f"{self.state_path}: cannot read ({e.strerror or e})") from None
        if not isinstance(st.best, str) or not (st.best == "random" or in_weights_folder(st.best)):
            raise ConfigError(f"{self.state_path}: best {str(st.best)[:100]!r} is not a network of this workspace "
                              f"(\"random\" or a file under weights/, named relative to the workspace)")
        if st.phase not in PHASES:
            raise ConfigError(f"{self.state_path}: unknown phase {st.phase!r} (expected one of "
                              f"{', '.join(PHASES)})")
        if not isinstance(st.generation, int) or st.generation < 1:
            raise ConfigError(f"{self.state_path}: generation {st.generation!r} is not a whole number from 1")
        if not isinstance(st.summaries, list) or not all(isinstance(x, dict) and "generation" in x
                                                         for x in st.summaries):
            raise ConfigError(f"{self.state_path}: summaries is not a list of per-generation records")
        return st

    def best_problem(self, st: LoopState) -> str | None:
        """None when the best network of ``st`` can be played (the random
        network, or a whole weights file); else one line naming the file
        and what is wrong with it."""
        if st.best == "random":
            return None
        from ..net.weights import WeightsError, check_whole

        path = self.root / st.best
        if not path.is_file():
            return f"{path}: the best network that {self.state_path} names is missing"
        try:
            check_whole(path)
        except WeightsError as e:
            return f"{e} (the best network that {self.state_path} names)"
        return None

    def clean_stale(self) -> list[Path]:
        """Remove the stale temporaries of killed writes (state, weights, logs, matches)."""
        folders = [self.root, self.root / "weights", self.root / "logs", *(self.root / "matches").glob("gen-*")]
        return [p for d in folders for p in clean_stale_temps(d)]

    def save_state(self, st: LoopState) -> None:
        with atomic_path(self.state_path) as tmp:
            tmp.write_text(json.dumps(asdict(st), indent=1))

    def weights(self, gen: int) -> Path:
        return self.root / "weights" / f"gen-{gen:06d}.safetensors"

    def stop_requested(self) -> bool:
        return (self.root / "STOP").exists()

    def games_in_generation(self, gen: int) -> tuple[int, int]:
        """(games, positions) already in whole chunks of generation ``gen``,
        held-out chunks included."""
        from ..chunkfile import ChunkError, generation_glob, peek_chunk

        games = positions = 0
        for path in [*(self.root / "data").glob(generation_glob(gen)), *self.holdout_chunks(gen)]:
            try:
                count, meta = peek_chunk(path)  # sizes checked, nothing decompressed
                games += int(meta["games"])
                positions += count
            except (ChunkError, OSError, ValueError, KeyError, TypeError):
                continue  # a damaged chunk is the trainer's to skip, not a game to count
        return games, positions

    def holdout_chunks(self, gen: int) -> list[Path]:
        """Generation ``gen``'s held-out chunks (sorted by name)."""
        from ..chunkfile import generation_glob

        return sorted((self.root / "holdout").glob(generation_glob(gen)))

    def hold_out(self, gen: int, fraction: float) -> int:
        """Move the share ``fraction`` of generation ``gen``'s chunks from
        data/ to holdout/, chosen by a hash of each chunk's name (the same
        chunks whenever it runs, so a kill between two moves is harmless);
        returns how many it moved."""
        from ..chunkfile import generation_glob

        moved = 0
        for path in sorted((self.root / "data").glob(generation_glob(gen))):
            if held_out(path.name, fraction):
                path.replace(self.root / "holdout" / path.name)
                moved += 1
        return moved


def in_weights_folder(name: str) -> bool:
    """Whether ``name`` is a file of the workspace's weights/ folder, named
    relative to the workspace: ``weights/<file>``, no absolute path, no ``..``."""
    parts = Path(name).parts
    return (not Path(name).is_absolute() and len(parts) == 2 and parts[0] == "weights"
            and parts[1] not in (".", ".."))


def whole_positions(path: Path) -> int:
    """Positions in a chunk, from its header (0 for a damaged one: the
    trainer skips it too)."""
    from ..chunkfile import ChunkError, peek_positions

    try:
        return peek_positions(path)
    except (ChunkError, OSError, ValueError, KeyError, TypeError):
        return 0


def held_out(name: str, fraction: float) -> bool:
    """Whether the chunk ``name`` belongs to the held-out share ``fraction``
    (a stable hash of the name, not Python's salted ``hash``)."""
    return zlib.crc32(name.encode()) % 10_000 < round(fraction * 10_000)
