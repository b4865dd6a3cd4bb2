"""Chunk reading, bad-chunk handling and the replay window; also ``make_chunk``,
the synthetic-chunk writer the other training tests use.

``make_chunk`` follows docs/data-format.md by hand (it shares no code with the
reader), and its targets are simple functions of the input planes so that a
network can learn them: the policy is uniform over the cells of plane 2, the
opponent replies on the first cell of plane 3, the side to move owns the cells
of plane 0 that are not in plane 1 (and the opponent the reverse), the score is
the difference and the outcome its sign.
"""
from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest

from sayuri_async.chunkfile import ChunkError, peek_positions, read_chunk
from sayuri_async.train.dataset import ChunkStream, StreamSpec, list_chunks, pass_pieces, select_window, window_size

PLANES = 25  # simple-v1


def make_chunk(path: str | os.PathLike, n: int = 7, positions: int = 64, seed: int = 0,
               planes: int = PLANES, encoder: str = "simple-v1", game_length: int = 16,
               full_search_prob: float = 0.75, meta: dict | None = None) -> dict[str, np.ndarray]:
    """Write a chunk of ``positions`` rows on an ``n``x``n`` board; returns its arrays."""
    rng = np.random.default_rng(seed)
    m, area = positions, n * n
    bits = (rng.random((m, planes, area)) < 0.3).astype(np.uint8)
    policy = np.zeros((m, area + 1), dtype=np.float32)
    for i in range(m):
        cells = np.nonzero(bits[i, 2])[0]
        if len(cells):
            policy[i, cells] = 1.0 / len(cells)
        else:
            policy[i, area] = 1.0
    full = rng.random(m) < full_search_prob
    policy[~full] = 0.0
    next_action = np.array([np.nonzero(bits[i, 3])[0][0] if bits[i, 3].any() else area for i in range(m)],
                           dtype=np.int16)
    game = (np.arange(m) // game_length).astype(np.int32)
    last = np.r_[game[1:] != game[:-1], True]
    next_action[last] = -1
    own = bits[:, 0].astype(np.int8) - bits[:, 1].astype(np.int8)
    score = own.sum(axis=1).astype(np.float32)
    wdl = np.zeros((m, 3), dtype=np.float32)
    wdl[np.arange(m), np.where(score > 0, 0, np.where(score == 0, 1, 2))] = 1.0
    arrays = {
        "meta": np.array(json.dumps({"format": "sayuri-async-chunk", "version": 1, "encoder": encoder,
                                     "planes": planes, "board_size": n, "games": int(game[-1]) + 1,
                                     "generator": "random", **(meta or {})})),
        "planes": np.packbits(bits, axis=-1),
        "policy": policy.astype(np.float16),
        "next_action": next_action,
        "action": rng.integers(0, area + 1, size=m).astype(np.int16),
        "wdl": wdl,
        "score": score,
        "ownership": own,
        "to_move": (1 + np.arange(m) % 2).astype(np.int8),
        "komi": np.full(m, 7.5, dtype=np.float32),
        "full_search": full,
        "after_resign": np.zeros(m, dtype=bool),
        "game": game,
        "root_value": rng.random(m).astype(np.float32),
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        np.savez_compressed(f, **arrays)
    os.replace(tmp, path)
    return {**arrays, "bits": bits}


def test_read_chunk_unpacks_planes_and_keeps_targets(tmp_path):
    made = make_chunk(tmp_path / "chunk-0-1-0.npz", n=7, positions=20, seed=3)
    got = read_chunk(tmp_path / "chunk-0-1-0.npz", board_size=7, encoder="simple-v1", planes=PLANES)
    assert got["meta"]["board_size"] == 7
    unpacked = np.unpackbits(got["planes"], axis=-1, count=49)
    assert np.array_equal(unpacked, made["bits"])
    assert np.array_equal(got["next_action"], made["next_action"])
    assert peek_positions(tmp_path / "chunk-0-1-0.npz") == 20


def test_bad_chunks_raise_with_file_name(tmp_path):
    good = tmp_path / "chunk-0-1-0.npz"
    make_chunk(good, positions=30)
    truncated = tmp_path / "chunk-0-1-1.npz"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(ChunkError, match="chunk-0-1-1.npz"):
        read_chunk(truncated)
    wrong_version = tmp_path / "chunk-0-1-2.npz"
    make_chunk(wrong_version, meta={"version": 2})
    with pytest.raises(ChunkError, match="chunk-0-1-2.npz.*version"):
        read_chunk(wrong_version)
    with pytest.raises(ChunkError, match="board size 7, training 9"):
        read_chunk(good, board_size=9)
    # a misshapen array: rewrite the chunk with one policy column missing
    with np.load(good) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["policy"] = arrays["policy"][:, :-1]
    misshapen = tmp_path / "chunk-0-1-3.npz"
    np.savez_compressed(misshapen, **arrays)
    with pytest.raises(ChunkError, match="chunk-0-1-3.npz.*'policy' has shape"):
        read_chunk(misshapen)


def test_window_size_follows_the_power_law():
    # below the minimum everything is used
    assert window_size(5_000, 10_000, 10**9, 0.4, 0.65) == 5_000
    assert window_size(10_000, 10_000, 10**9, 0.4, 0.65) == 10_000
    # exponent 1: straight line of slope `expand` above the minimum
    assert window_size(110_000, 10_000, 10**9, 0.5, 1.0) == 10_000 + 50_000
    # exponent 0.5, min 10000, total 40000: 10000 + 0.4 * (sqrt(40000) - sqrt(10000)) / (0.5 / sqrt(10000))
    # = 10000 + 0.4 * (200 - 100) * 200 = 18000
    assert window_size(40_000, 10_000, 10**9, 0.4, 0.5) == 18_000
    assert window_size(40_000, 10_000, 15_000, 0.4, 0.5) == 15_000


def test_list_and_select_window_take_the_newest(tmp_path):
    for gen in (2, 0, 1):
        make_chunk(tmp_path / "data" / f"chunk-{gen}-7-0.npz", positions=40 + gen, seed=gen)
    (tmp_path / "data" / "chunk-3-7-0.npz").write_bytes(b"not a zip")
    chunks, warnings = list_chunks(tmp_path / "data")
    assert [c.generation for c in chunks] == [0, 1, 2]
    assert [c.positions for c in chunks] == [40, 41, 42]
    assert len(warnings) == 1 and "chunk-3-7-0.npz" in warnings[0]
    make_chunk(tmp_path / "data" / "chunk-4-7-0.npz", n=9, positions=30)
    assert [c.generation for c in list_chunks(tmp_path / "data")[0]] == [0, 1, 2, 4]
    chunks, warnings = list_chunks(tmp_path / "data", board_size=7)
    assert [c.generation for c in chunks] == [0, 1, 2]
    assert warnings[-1].endswith("left out chunks of other board sizes than 7: 1 of 9x9")
    picked = select_window(chunks, 50)  # newest 42 is not enough, 42 + 41 is
    assert [c.generation for c in picked] == [1, 2]
    assert select_window(chunks, 10_000) == chunks


def _spec(files, **kw) -> StreamSpec:
    base = dict(files=tuple(files), board_size=7, encoder="simple-v1", planes=PLANES, batch_size=8,
                shuffle_buffer=64, seed=5, world=1, workers=0, symmetries=False)
    base.update(kw)
    return StreamSpec(**base)


def test_shards_read_disjoint_pieces():
    files = [(f"f{i}", 10) for i in range(7)]
    spec = _spec(files, world=2, workers=2)
    seen = [p.path for s in range(4) for p in pass_pieces(spec, s, 0)]
    assert sorted(seen) == sorted(f for f, _ in files)
    # fewer files than shards: every shard strides over every file's rows
    spec = _spec(files[:2], world=2, workers=2)
    rows = {}
    for s in range(4):
        for p in pass_pieces(spec, s, 0):
            rows.setdefault(p.path, []).extend(range(p.offset, 10, p.stride))
    assert all(sorted(r) == list(range(10)) for r in rows.values())


def test_stream_skips_a_corrupt_chunk_with_a_warning(tmp_path):
    paths = []
    for i in range(3):
        p = tmp_path / f"chunk-0-1-{i}.npz"
        make_chunk(p, positions=24, seed=i)
        paths.append(p)
    # corrupt the middle one after its header was counted: keep the zip but damage the data
    raw = bytearray(paths[1].read_bytes())
    with zipfile.ZipFile(paths[1]) as z:
        info = z.getinfo("policy.npy")
    start = info.header_offset + 30 + len(info.filename) + 20
    raw[start:start + 40] = bytes(40)
    paths[1].write_bytes(bytes(raw))
    spec = _spec([(str(p), 24) for p in paths])
    stream = ChunkStream(spec).iterate(0, (0, 0, 0))
    items = [next(stream) for _ in range(12)]  # two good chunks: 48 rows = 6 batches per pass
    warnings = [w for it in items for w in it["warnings"]]
    assert len(warnings) == 1 and "chunk-0-1-1.npz" in warnings[0]
    assert all(it["planes"].shape == (8, PLANES, 7, 7) for it in items)
    assert [it["position"][0] for it in items] == [0] * 6 + [1] * 6


def test_augmented_batches_keep_targets_aligned_with_planes(tmp_path):
    """make_chunk's targets are functions of the planes; after a symmetry they must still be."""
    make_chunk(tmp_path / "chunk-0-1-0.npz", n=7, positions=64, seed=9, full_search_prob=1.0)
    files = [(str(tmp_path / "chunk-0-1-0.npz"), 64)]
    plain = ChunkStream(_spec(files, batch_size=64)).iterate(0, (0, 0, 0))
    augmented = ChunkStream(_spec(files, batch_size=64, symmetries=True)).iterate(0, (0, 0, 0))
    a, b = next(plain), next(augmented)
    planes = b["planes"].astype(np.int64)  # [B, C, 7, 7]
    own = planes[:, 0] - planes[:, 1]
    assert np.array_equal(b["ownership"].reshape(-1, 7, 7), own)
    support = b["policy"][:, :49].reshape(-1, 7, 7) > 0
    has_cells = planes[:, 2].reshape(64, -1).any(axis=1)
    assert np.array_equal(support[has_cells], planes[has_cells, 2] == 1)
    opp_rows = np.nonzero(b["opp_mask"] & (b["opp_policy"][:, 49] == 0))[0]
    cells = b["opp_policy"][opp_rows, :49].argmax(axis=1)
    assert (planes[opp_rows, 3].reshape(len(opp_rows), -1)[np.arange(len(opp_rows)), cells] == 1).all()
    # the same rows (same permutation), but most of them turned or flipped
    assert np.array_equal(a["planes"].sum(axis=(2, 3)), b["planes"].sum(axis=(2, 3)))
    moved = [not np.array_equal(a["planes"][i], b["planes"][i]) for i in range(64)]
    assert sum(moved) > 40  # 7 of 8 symmetries change a random position


def test_more_readers_than_positions_is_a_clear_error():
    spec = _spec([("chunk-0-1-0.npz", 2)], workers=4)
    with pytest.raises(ChunkError, match="window holds 2, too few for 4 readers"):
        next(ChunkStream(spec).iterate(3, (0, 0, 0)))
