"""Chunks whose values break the format's contract (docs/data-format.md,
"Values"): each is refused by name and field, skipped by the trainer with a
warning, and a run on good and poisoned chunks together trains on the good
ones only."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from sayuri_async.chunkfile import ChunkError, read_chunk
from sayuri_async.train import trainer as trainer_module
from sayuri_async.train.dataset import unpack_targets
from sayuri_async.train.trainer import train
from test_train_chunks import PLANES, make_chunk
from test_train_loop import quiet, tiny_config

N = 7
A = N * N + 1
Change = Callable[[np.ndarray, np.ndarray], None]  # (the field's array, full_search) -> None, in place


def poison(path: Path, key: str, change: Change, dtype: object = None) -> None:
    """Rewrite chunk ``path`` with ``change`` applied to field ``key``
    (added, zeros of ``dtype`` shaped like ``policy``'s rows, when absent)."""
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    if key not in arrays:
        width = {"opp_policy": A, "q_avg": 4, "score_avg": 4, "stddev": 2}.get(key)
        shape = (len(arrays["action"]),) + ((width,) if width else ())
        arrays[key] = np.zeros(shape, dtype=dtype or np.float32)
    arrays[key] = arrays[key].copy()
    change(arrays[key], arrays["full_search"].astype(bool))
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        np.savez_compressed(f, **arrays)
    os.replace(tmp, path)


def _set(rows: object, value: float, col: object = slice(None)) -> Change:
    def change(a: np.ndarray, full: np.ndarray) -> None:
        r = np.nonzero(full)[0][:3] if rows == "full" else rows
        if a.ndim == 1:
            a[r] = value
        else:
            a[r, col] = value
    return change


def _row_sum(factor: float) -> Change:
    def change(a: np.ndarray, full: np.ndarray) -> None:
        a[np.nonzero(full)[0][0]] *= factor
    return change


def _one_hot_pass(a: np.ndarray, _full: np.ndarray) -> None:
    a[:] = 0
    a[:, A - 1] = 1


# (case id, field, change, dtype of the field when the chunk lacks it, what the error says)
CASES = [
    ("policy-nan", "policy", _set("full", np.nan), None, "'policy' holds NaN"),
    ("policy-inf", "policy", _set("full", np.inf), None, "'policy' holds NaN or infinite"),
    ("policy-negative", "policy", _set("full", -0.5, 0), None, "'policy' holds negative values"),
    ("policy-sum", "policy", _row_sum(3.0), None, "'policy' has rows that neither sum to 1"),
    ("policy-full-zero", "policy", _set("full", 0.0), None, "'policy' has full-search rows that do not sum to 1"),
    ("opp-policy-nan", "opp_policy", _set(0, np.nan), np.float16, "'opp_policy' holds NaN"),
    ("opp-policy-negative", "opp_policy", lambda a, f: (_one_hot_pass(a, f), a.__setitem__((1, 0), -1)),
     np.float16, "'opp_policy' holds negative values"),
    ("wdl-nan", "wdl", _set(0, np.nan), None, "'wdl' holds NaN"),
    ("wdl-inf", "wdl", _set(0, np.inf, 1), None, "'wdl' holds infinite"),
    ("wdl-sum", "wdl", _set(0, 1.0), None, "'wdl' has rows that do not sum to 1"),
    ("wdl-negative", "wdl", _set(0, -1.0, 1), None, "'wdl' out of range"),
    ("score-huge", "score", _set(5, 1e30), None, "'score' out of range"),
    ("score-nan", "score", _set(5, np.nan), None, "'score' holds NaN"),
    ("score-inf", "score", _set(5, -np.inf), None, "'score' holds infinite"),
    ("komi-nan", "komi", _set(2, np.nan), None, "'komi' holds NaN"),
    ("komi-huge", "komi", _set(2, 1e9), None, "'komi' out of range"),
    ("action-high", "action", _set(3, 1000), None, "'action' out of range"),
    ("action-negative", "action", _set(3, -7), None, "'action' out of range"),
    ("next-action-high", "next_action", _set(3, A), None, "'next_action' out of range"),
    ("ownership", "ownership", _set(4, 5, 0), None, "'ownership' out of range"),
    ("to-move", "to_move", _set(4, 3), None, "'to_move' out of range"),
    ("game-negative", "game", _set(0, -1), None, "'game' out of range"),
    ("root-value-nan", "root_value", _set(1, np.nan), None, "'root_value' holds NaN"),
    ("root-value-high", "root_value", _set(1, 7.0), None, "'root_value' out of range"),
    ("q-avg-inf", "q_avg", _set(1, np.inf, 2), np.float32, "'q_avg' holds infinite"),
    ("q-avg-high", "q_avg", _set(1, 3.0, 2), np.float32, "'q_avg' out of range"),
    ("score-avg-huge", "score_avg", _set(1, -1e12, 0), np.float32, "'score_avg' out of range"),
    ("score-avg-inf", "score_avg", _set(1, np.inf, 0), np.float32, "'score_avg' holds infinite"),
    ("stddev-nan", "stddev", _set(1, np.nan, 0), np.float32, "'stddev' holds NaN"),
    ("stddev-negative", "stddev", _set(1, -2.0, 1), np.float32, "'stddev' out of range"),
    ("kld-inf", "policy_kld", _set(1, np.inf), np.float32, "'policy_kld' holds infinite"),
]


@pytest.mark.parametrize("case, key, change, dtype, message", CASES, ids=[c[0] for c in CASES])
def test_each_broken_value_is_refused_naming_the_file_and_the_field(tmp_path, case, key, change, dtype, message):
    path = tmp_path / f"chunk-000001-{case}-000001.npz"
    make_chunk(path, n=N, positions=32, seed=5)
    read_chunk(path, N, "simple-v1", PLANES)  # whole before
    poison(path, key, change, dtype)
    with pytest.raises(ChunkError) as caught:
        read_chunk(path, N, "simple-v1", PLANES)
    text = str(caught.value)
    assert text.startswith(str(path)) and message in text, text
    assert "\n" not in text and "row" in text


def test_values_the_format_allows_still_read(tmp_path):
    path = tmp_path / "chunk-000001-ok-000001.npz"
    make_chunk(path, n=N, positions=32, seed=5)
    poison(path, "q_avg", _set(slice(0, 10), np.nan), np.float32)  # NaN: unknown
    poison(path, "score_avg", _set(slice(0, 10), np.nan, 1), np.float32)
    poison(path, "opp_policy", lambda a, f: a.__setitem__((slice(1, None), A - 1), 1.0), np.float16)  # row 0: none
    poison(path, "action", _set(0, -1))  # -1: not known (import-data)
    poison(path, "komi", _set(slice(None), -7.5))
    poison(path, "score", _set(0, 2 * N * N + 7.5))  # at the bound
    poison(path, "root_value", _set(0, 1.0))
    got = read_chunk(path, N, "simple-v1", PLANES)
    assert np.isnan(got["q_avg"][:10]).all() and got["action"][0] == -1


def _mark(path: Path) -> None:
    """make_chunk's scores are whole counts; a poisoned chunk's rows all score 0.5."""
    poison(path, "score", _set(slice(None), 0.5))


MIX = [("policy-nan", "policy", _set("full", np.nan), None),
       ("policy-negative", "policy", _set("full", -0.5, 0), None),
       ("score-huge", "score", _set(5, 1e30), None),
       ("action-high", "action", _set(3, 1000), None),
       ("q-avg-inf", "q_avg", _set(1, np.inf, 2), np.float32)]


@pytest.mark.slow
@pytest.mark.parametrize("workers", [0, 2])
def test_a_run_on_good_and_poisoned_chunks_trains_on_the_good_ones_only(tmp_path, capfd, monkeypatch, workers):
    data = tmp_path / "data"
    for i in range(5):
        make_chunk(data / f"chunk-00000{i}-good-000001.npz", n=N, positions=32, seed=20 + i)
    poisoned = []
    for i, (case, key, change, dtype) in enumerate(MIX):
        path = data / f"chunk-00000{i}-{case}-000001.npz"
        make_chunk(path, n=N, positions=32, seed=40 + i)
        _mark(path)
        poison(path, key, change, dtype)
        poisoned.append((path, key))
    seen: list[np.ndarray] = []
    real_step = trainer_module.train_step

    def watching(model, net, optimizer, batch, *rest):  # what reaches the optimizer
        seen.append(unpack_targets(batch["targets"].numpy(), N)["score"].copy())
        assert np.isfinite(batch["targets"].numpy()).all()
        return real_step(model, net, optimizer, batch, *rest)

    monkeypatch.setattr(trainer_module, "train_step", watching)
    capfd.readouterr()
    # 12 steps of 16: more than the good chunks' 160 positions, so every chunk is met
    cfg = tiny_config(data, tmp_path / "out", data={"workers": workers, "shuffle_buffer": 64},
                      model={"blocks": 1, "channels": 8}, optim={"batch_size": 16}, run={"log_every": 1})
    result = train(cfg, steps=12, say=quiet)
    err = capfd.readouterr().err
    assert result.steps == 12 and np.isfinite(list(result.losses.values())).all()
    for path, key in poisoned:  # each skipped with a warning naming the file and the field
        assert any(path.name in line and f"'{key}'" in line and "skipping chunk" in line
                   for line in err.splitlines()), (path.name, err)
    scores = np.concatenate(seen)
    assert len(scores) == 12 * 16
    assert np.array_equal(scores, np.round(scores)), "a poisoned chunk's row reached the optimizer"
