"""import-sgf: SGF records -> chunks (targets, masks, skips), the optional
ownership mask (older chunks still read), and a tiny end to end: import,
train a few steps, start the loop from the result."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from sayuri_async.chunkfile import read_chunk
from sayuri_async.go import board as B
from sayuri_async.go.coords import vertex_to_action
from sayuri_async.sgf_import import SgfResult, import_sgf, main, parse_result
from sayuri_async.train.losses import ownership_bce

# 7x7: black walls column C, white column D; both pass. Black area 21, white 28.
WALLS = "".join(f";B[c{r}];W[d{r}]" for r in "abcdefg")
COUNTED = f"(;GM[1]FF[4]SZ[7]KM[0.5]RE[W+7.5]{WALLS};B[];W[])"  # white 28 - black 21 + komi 0.5
RESIGNED = "(;GM[1]FF[4]SZ[7]KM[7.5]RE[B+Resign];B[dd];W[cc];B[dc])"
HANDICAP = "(;GM[1]FF[4]SZ[7]KM[0.5]HA[2]AB[cc][ee]RE[W+3.5];W[dd];B[cd])"
NO_RESULT = "(;GM[1]FF[4]SZ[7]KM[7.5];B[dd];W[cc])"
ILLEGAL = "(;GM[1]FF[4]SZ[7]KM[7.5]RE[B+1.5];B[dd];W[dd])"
WRONG_SIZE = "(;GM[1]FF[4]SZ[9]KM[7.5]RE[B+1.5];B[ee])"
OUT_OF_TURN = "(;GM[1]FF[4]SZ[7]KM[7.5]RE[B+1.5];B[dd];B[cc])"
DEAD_LEFT = f"(;GM[1]FF[4]SZ[7]KM[0.5]RE[W+7.5]{WALLS};B[fd];W[];B[];W[])"  # B[fd] dead in white's area


def write(folder: Path, records: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in records.items():
        (folder / f"{name}.sgf").write_text(text)
    return folder


def load_all(out: Path) -> dict:
    arrays = [read_chunk(p) for p in sorted((out / "data").glob("*.npz"))]
    return {k: np.concatenate([a[k] for a in arrays]) for k in arrays[0] if k != "meta"}


def test_parse_result():
    assert parse_result("B+3.5") == SgfResult(B.BLACK, 3.5)
    assert parse_result("w+r") == SgfResult(B.WHITE, None)
    assert parse_result("W+Resign") == SgfResult(B.WHITE, None)
    assert parse_result("B+T") == SgfResult(B.BLACK, None)
    assert parse_result("B+") == SgfResult(B.BLACK, None)
    assert parse_result("0") == SgfResult(0, 0.0)
    assert parse_result("Jigo") == SgfResult(0, 0.0)
    for bad in ("", "Void", "?", "B+-3", "X+3", "B+nan"):
        assert parse_result(bad) is None


def test_counted_game_targets_and_ownership(tmp_path):
    report = import_sgf([write(tmp_path / "in", {"a": COUNTED})], tmp_path / "out", board_size=7)
    assert (report.games, report.positions, report.ownership_games) == (1, 16, 1)
    a = load_all(tmp_path / "out")
    moves = [vertex_to_action(f"{c}{r}", 7) for r in range(7, 0, -1) for c in "CD"] + [49, 49]
    assert a["action"].tolist() == moves
    assert (a["policy"].argmax(1) == a["action"]).all() and (a["policy"].sum(1) == 1).all()
    assert a["next_action"].tolist() == moves[1:] + [-1]
    assert a["to_move"].tolist() == [1, 2] * 8
    # white won: the side to move's view alternates
    assert a["wdl"][0].tolist() == [0, 0, 1] and a["wdl"][1].tolist() == [1, 0, 0]
    assert a["score"][0] == -7.5 and a["score"][1] == 7.5
    assert a["ownership_mask"].all()
    own_black_view = a["ownership"][0]  # black to move: +1 black's points
    assert own_black_view.sum() == 21 - 28
    assert a["full_search"].all() and not a["after_resign"].any()


def test_masks_and_skips(tmp_path):
    records = {"resigned": RESIGNED, "handicap": HANDICAP, "none": NO_RESULT, "illegal": ILLEGAL,
               "size": WRONG_SIZE, "turn": OUT_OF_TURN, "dead": DEAD_LEFT, "garbage": "(;GM[1]SZ[7"}
    report = import_sgf([write(tmp_path / "in", records)], tmp_path / "out", board_size=7, chunk_games=2)
    assert report.games == 3 and report.files == 8
    assert dict(report.skipped) == {"no result": 1, "illegal move": 1, "board size": 1, "out of turn": 1,
                                    "unreadable": 1}
    assert report.ownership_games == 0  # resigned; handicap (count differs); dead stone left
    assert report.chunks == 2  # 2 + 1 games, chunk_games 2
    a = load_all(tmp_path / "out")
    assert not a["ownership_mask"].any()
    games = {int(g): np.flatnonzero(a["game"] == g) for g in np.unique(a["game"])}
    # the handicap game (AB, HA, W first) keeps its komi and white moves first
    hcp = [rows for rows in games.values() if len(rows) == 2 and a["to_move"][rows[0]] == B.WHITE]
    assert len(hcp) == 1 and a["komi"][hcp[0][0]] == 0.5
    # resigned: a win for black, score at least half a point with the winner's sign
    black_first = np.flatnonzero((a["komi"] == 7.5) & (a["to_move"] == B.BLACK))
    assert (a["wdl"][black_first, 0] == 1).all() and (a["score"][black_first] >= 0.5).all()


def test_cli_reports_and_refuses_bad_input(tmp_path, capsys):
    folder = write(tmp_path / "in", {"r": RESIGNED, "n": NO_RESULT})
    assert main([str(folder), "-o", str(tmp_path / "out"), "--board", "7"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    summary = json.loads(out[-1])
    assert summary["games"] == 1 and summary["skipped"] == {"no result": 1} and summary["positions"] == 3
    assert main([str(tmp_path / "missing"), "-o", str(tmp_path / "out")]) == 2
    assert "missing: no such file or folder" in capsys.readouterr().err
    assert main([str(folder), "-o", str(tmp_path / "o2"), "--encoder", "nope"]) == 2


def test_older_chunks_without_the_mask_still_read(tmp_path):
    import_sgf([write(tmp_path / "in", {"r": RESIGNED})], tmp_path / "out", board_size=7)
    path = next((tmp_path / "out" / "data").glob("*.npz"))
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files if k != "ownership_mask"}
    old = tmp_path / "old.npz"
    np.savez_compressed(old, **arrays)
    assert read_chunk(old)["ownership_mask"].all()


def test_ownership_loss_leaves_masked_rows_out():
    pred = torch.tensor([[0.9, -0.9], [0.0, 0.0]])
    target = torch.tensor([[1.0, -1.0], [1.0, 1.0]])
    only_first = ownership_bce(pred, target, torch.tensor([1.0, 0.0]))
    assert only_first == pytest.approx(ownership_bce(pred[:1], target[:1]).item())
    assert ownership_bce(pred, target) > only_first


@pytest.mark.slow
def test_import_then_train_then_loop_init(tmp_path):
    from sayuri_async.loop.driver import Loop
    from sayuri_async.train.trainer import train
    from test_loop import write_cfg
    from test_train_loop import tiny_config

    records = {f"g{i}": COUNTED for i in range(3)} | {"r": RESIGNED}
    import_sgf([write(tmp_path / "in", records)], tmp_path / "sup", board_size=7)
    cfg = tiny_config(tmp_path / "sup", tmp_path / "run", data={"shuffle_buffer": 64},
                      optim={"batch_size": 16}, schedule={"reference_batch": 16})
    result = train(cfg, steps=10, say=lambda _: None)
    assert result.steps == 10 and result.export is not None
    assert all(np.isfinite(v) for v in result.losses.values())
    loop = Loop(write_cfg(tmp_path, 1), str(tmp_path / "ws"))
    loop.init_from(str(result.export))
    st = loop.ws.load_state()
    assert st.best == "weights/gen-000000.safetensors" and st.best_generation == 0
    assert loop.run() == 0
    st = json.loads((tmp_path / "ws" / "state.json").read_text())
    assert st["generation"] == 2 and st["best_generation"] == 1
    log = (tmp_path / "ws" / "checkpoints" / "train_log.csv")
    assert log.is_file()
    # generation 1 trained from the supervised network: same shape as it, not the loop's [model]
    from sayuri_async.net.weights import read_header

    gen1 = read_header(tmp_path / "ws" / "weights" / "gen-000001.safetensors")
    sup = read_header(result.export)
    assert json.loads(gen1["config"]) == json.loads(sup["config"])  # 2x16, not the loop's 1x8
    assert json.loads(sup["config"])["channels"] == 16


def test_loop_init_refuses_a_bad_file_and_a_started_workspace(tmp_path):
    from sayuri_async.configfile import ConfigError
    from sayuri_async.loop.driver import Loop
    from sayuri_async.loop.workspace import LoopState
    from test_loop import write_cfg

    loop = Loop(write_cfg(tmp_path, 1), str(tmp_path / "ws"))
    (tmp_path / "bad.safetensors").write_bytes(b"not weights")
    with pytest.raises(ConfigError, match="not a weights file"):
        loop.init_from(str(tmp_path / "bad.safetensors"))
    assert not loop.ws.state_path.exists()
    loop.ws.save_state(LoopState(generation=1, phase="train"))  # a started workspace (random start)
    with pytest.raises(ConfigError, match="has started already"):
        loop.init_from(str(tmp_path / "bad.safetensors"))
