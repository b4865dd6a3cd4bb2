"""Sayuri training data (record version 2): records written here the way
Sayuri writes them read back into our chunk samples; conversion produces
chunks the trainer accepts; damaged files are reported."""
from __future__ import annotations

import gzip

import numpy as np
import pytest

from sayuri_async.sayuri.data import SayuriDataError, convert, iter_records, read_sayuri_chunk
from sayuri_async.encoders.sayuri_v3 import P_KOMI, P_NEG_KOMI, P_ONES, P_RULE
from sayuri_async.chunkfile import read_chunk


def hex_plane(bits: np.ndarray) -> str:
    nn = len(bits)
    s = "".join("%x" % (bits[i] | bits[i + 1] << 1 | bits[i + 2] << 2 | bits[i + 3] << 3)
                for i in range(0, nn - 3, 4))
    return s + (str(int(bits[-1])) if nn % 4 else "")


def record(n: int, planes: np.ndarray, black: bool, policy: np.ndarray, aux: np.ndarray, own: np.ndarray,
           result: int, komi: float = 7.5, rule: int = 0, q: float = 0.2, score: float = 3.5,
           version: int = 2) -> str:
    lines = [str(version), "0", str(n), str(komi), str(rule), "0.5"]
    lines += [hex_plane(p) for p in planes]
    lines += ["1" if black else "0", " ".join(f"{v:g}" for v in policy), " ".join(f"{v:g}" for v in aux),
              "".join({0: "0", 1: "1", -1: "3"}[int(v)] for v in own), str(result),
              f"{q} {q} {q} {q}", str(score), "1.5 1.5 1.5 1.5", "0.1 0.9", "0.3"]
    assert len(lines) == 53
    return "\n".join(lines) + "\n"


def game_records(rng: np.random.Generator) -> tuple[str, dict]:
    """Two consecutive 9x9 positions (black, then white after black E5) and a 7x7 one."""
    nn = 81
    black = (rng.random(nn) < 0.2).astype(np.uint8)
    white = ((rng.random(nn) < 0.2) & (black == 0)).astype(np.uint8)
    e5 = 4 * 9 + 4
    black[e5] = white[e5] = 0
    p1 = np.zeros((37, nn), np.uint8)
    p1[0], p1[1] = black, white
    p1[30] = rng.random(nn) < 0.1  # some feature plane
    after = black.copy()
    after[e5] = 1
    p2 = np.zeros((37, nn), np.uint8)
    p2[0], p2[1], p2[2] = white, after, 0
    p2[2, e5] = 1
    p2[3], p2[4] = white, black
    pol1 = np.zeros(nn + 1)
    pol1[e5], pol1[nn] = 0.75, 0.25
    aux1 = np.zeros(nn + 1)
    aux1[10] = 1.0
    own = rng.integers(-1, 2, nn)
    pol2 = np.zeros(nn + 1)
    pol2[nn] = 1.0
    text = record(9, p1, True, pol1, aux1, own, 1, q=0.5) + record(9, p2, False, pol2, np.zeros(nn + 1), -own, -1,
                                                                  score=-3.5)
    p3 = (rng.random((37, 49)) < 0.3).astype(np.uint8)
    pol3 = np.full(50, 1 / 50)
    text += record(7, p3, False, pol3, pol3, np.zeros(49), 0, komi=-2.0, rule=1, score=0.0)
    return text, {"p1": p1, "p2": p2, "p3": p3, "own": own, "pol1": pol1}


def test_records_read_back_into_samples(tmp_path):
    text, want = game_records(np.random.default_rng(0))
    path = tmp_path / "data.txt.gz"
    with gzip.open(path, "wt") as f:
        f.write(text)
    groups = read_sayuri_chunk(path)
    assert sorted(groups) == [7, 9]
    g9, g7 = groups[9], groups[7]
    assert g9["meta"]["encoder"] == "sayuri-v3" and g9["meta"]["planes"] == 43 and g9["meta"]["games"] == 1
    planes = np.unpackbits(g9["planes"], axis=-1, count=81)
    assert planes.shape == (2, 43, 81)
    np.testing.assert_array_equal(planes[0, :37], want["p1"])
    np.testing.assert_array_equal(planes[1, :37], want["p2"])
    assert planes[0, P_KOMI].sum() == 15 and planes[0, P_NEG_KOMI].sum() == 0  # black: +7.5
    assert planes[1, P_NEG_KOMI].sum() == 15 and planes[1, P_KOMI].sum() == 0  # white: -7.5
    assert planes[:, P_ONES].all() and not planes[:, P_RULE].any()
    np.testing.assert_allclose(g9["policy"][0], want["pol1"], atol=1e-3)
    assert list(g9["next_action"]) == [10, -1]
    assert list(g9["action"]) == [4 * 9 + 4, -1]  # read off the next record's last-move plane
    np.testing.assert_array_equal(g9["wdl"], [[1, 0, 0], [0, 0, 1]])
    np.testing.assert_allclose(g9["score"], [3.5, -3.5])
    np.testing.assert_array_equal(g9["ownership"][0], want["own"])
    np.testing.assert_array_equal(g9["ownership"][1], -want["own"])
    assert list(g9["to_move"]) == [1, 2] and list(g9["game"]) == [0, 0]
    np.testing.assert_allclose(g9["root_value"], [0.75, 0.6], rtol=1e-6)
    # the 7x7 record: white to move with black komi -2 -> +2 for white; territory rule
    p7 = np.unpackbits(g7["planes"], axis=-1, count=49)[0]
    np.testing.assert_array_equal(p7[:37], want["p3"])
    assert p7[P_KOMI].sum() == 4 and p7[P_RULE].all()
    np.testing.assert_array_equal(g7["wdl"], [[0, 1, 0]])
    assert g7["komi"][0] == -2.0


def test_convert_writes_chunks_the_trainer_reads(tmp_path, capsys):
    text, _ = game_records(np.random.default_rng(1))
    src = tmp_path / "a.txt"
    src.write_text(text)
    res = convert([str(src)], tmp_path / "data")
    written, warnings = res.written, res.warnings
    assert len(written) == 2 and not warnings and res.positions == 3
    for path in written:
        arrays = read_chunk(path, encoder="sayuri-v3", planes=43)
        assert arrays["meta"]["board_size"] in (7, 9)
    from sayuri_async.sayuri.cli import data_main

    assert data_main([str(src), "-o", str(tmp_path / "d2")]) == 0
    assert "2 chunk(s)" in capsys.readouterr().out


def test_damaged_data_is_reported(tmp_path):
    text, _ = game_records(np.random.default_rng(2))
    lines = text.splitlines(keepends=True)
    cases = {
        "v3.txt": ("3\n" + "".join(lines[1:]), "record 0: record version 3"),
        "trunc.txt": ("".join(lines[:70]), "record 1: truncated"),
        "hex.txt": ("".join(lines[:6]) + "zz" + lines[6][2:] + "".join(lines[7:]), "record 0: plane 0"),
        "policy.txt": ("".join(lines[:44]) + "0.5 0.5\n" + "".join(lines[45:]), "record 0: policy"),
    }
    for name, (body, message) in cases.items():
        path = tmp_path / name
        path.write_text(body)
        with pytest.raises(SayuriDataError, match=message):
            list(iter_records(path))
    res = convert([str(tmp_path / "v3.txt")], tmp_path / "out")
    assert not res.written and "record version 3" in res.warnings[0]


def test_import_goes_through_the_atomic_writer_and_keeps_earlier_imports(tmp_path, monkeypatch):
    import os

    from sayuri_async import fileio

    text, _ = game_records(np.random.default_rng(3))
    src = tmp_path / "a.txt"
    src.write_text(text)
    used = []
    real = fileio.atomic_path

    def spy(path, replace=True):
        used.append((os.path.basename(path), replace))
        return real(path, replace=replace)

    monkeypatch.setattr("sayuri_async.chunkfile.atomic_path", spy)
    old = os.umask(0o022)
    try:
        first = convert([str(src)], tmp_path / "data").written
        before = {p: open(p, "rb").read() for p in first}
        second = convert([str(src)], tmp_path / "data").written  # the same pid, maybe the same second
    finally:
        os.umask(old)
    assert {os.path.basename(p) for p in first + second} <= {name for name, _ in used}
    assert all(replace is False for _, replace in used)
    assert len(set(first + second)) == 4 and len(list((tmp_path / "data").iterdir())) == 4
    assert all(open(p, "rb").read() == data for p, data in before.items())
    assert all(os.stat(p).st_mode & 0o777 == 0o644 for p in first + second)


def test_soft_targets_and_averages_are_kept_whole(tmp_path):
    text, want = game_records(np.random.default_rng(4))
    lines = text.splitlines(keepends=True)
    aux = np.zeros(82)
    aux[[3, 10, 81]] = [0.5, 0.3, 0.2]  # a soft auxiliary policy for the first record
    lines[45] = " ".join(f"{v:g}" for v in aux) + "\n"
    lines[48] = "0.5 0.25 -0.125 0.0625\n"
    lines[50] = "1.5 2.5 -3.5 4.5\n"
    lines[51] = "0.1 0.9\n"
    lines[52] = "0.3\n"
    path = tmp_path / "d.txt"
    path.write_text("".join(lines))
    g9 = read_sayuri_chunk(path)[9]
    np.testing.assert_allclose(g9["opp_policy"][0], aux, atol=1e-3)  # not a one-hot at its argmax
    assert g9["next_action"][0] == 3
    np.testing.assert_allclose(g9["q_avg"][0], [0.5, 0.25, -0.125, 0.0625])
    np.testing.assert_allclose(g9["score_avg"][0], [1.5, 2.5, -3.5, 4.5])
    np.testing.assert_allclose(g9["stddev"][0], [0.1, 0.9], rtol=1e-6)
    np.testing.assert_allclose(g9["policy_kld"][0], 0.3, rtol=1e-6)
    np.testing.assert_allclose(g9["root_value"][0], 0.75)
    # the trainer reads the soft target and the averages from the chunk
    written = convert([str(path)], tmp_path / "data").written
    arrays = read_chunk(next(p for p in written if read_chunk(p)["meta"]["board_size"] == 9))
    from sayuri_async.train.dataset import training_arrays

    block = training_arrays(arrays, slice(None))
    np.testing.assert_allclose(block["opp_policy"][0], aux, atol=1e-3)
    np.testing.assert_allclose(block["q_avg"][0], [0.5, 0.25, -0.125, 0.0625])


def test_convert_streams_in_bounded_chunks(tmp_path):
    """One position per chunk: every chunk holds one sample, and a record's
    action still comes from the next record, in the next chunk."""
    text, _ = game_records(np.random.default_rng(5))
    src = tmp_path / "a.txt.gz"
    with gzip.open(src, "wt") as f:
        f.write(text * 3)
    res = convert([str(src)], tmp_path / "data", chunk_positions=1)
    assert res.positions == 9 and len(res.written) == 9 and not res.warnings
    rows = [read_chunk(p) for p in res.written]
    assert all(len(r["action"]) == 1 for r in rows)
    nines = [r for r in rows if r["meta"]["board_size"] == 9]
    assert [int(r["action"][0]) for r in nines] == [40, -1] * 3
    with pytest.raises(ValueError, match="chunk_positions"):
        convert([str(src)], tmp_path / "x", chunk_positions=0)


def test_a_damaged_file_keeps_the_records_before_the_damage(tmp_path):
    text, _ = game_records(np.random.default_rng(6))
    lines = text.splitlines(keepends=True)
    body = "".join(lines[:53 * 2]) + "".join(lines[53 * 2:53 * 2 + 44]) + "0.5 0.5\n" + "".join(lines[53 * 2 + 45:])
    path = tmp_path / "bad.txt"
    path.write_text(body)
    res = convert([str(path)], tmp_path / "data")
    assert res.positions == 2 and "record 2: policy" in res.warnings[0] and "2 records before it kept" in res.warnings[0]


def test_cli_chunk_positions(tmp_path, capsys):
    from sayuri_async.sayuri.cli import data_main

    text, _ = game_records(np.random.default_rng(7))
    src = tmp_path / "a.txt"
    src.write_text(text)
    assert data_main([str(src), "-o", str(tmp_path / "d"), "--chunk-positions", "0"]) == 2
    assert "--chunk-positions: must be at least 1, not 0" in capsys.readouterr().err
    assert data_main([str(src), "-o", str(tmp_path / "d"), "--chunk-positions", "1"]) == 0
    assert "wrote 3 chunk(s), 3 positions from 1 file(s)" in capsys.readouterr().out


@pytest.mark.slow
def test_parallel_parsing_gives_the_same_chunks(tmp_path, monkeypatch):
    from sayuri_async.sayuri import data

    monkeypatch.setattr(data, "PARSE_BATCH", 2)  # several batches in flight
    text, _ = game_records(np.random.default_rng(8))
    good = tmp_path / "good.txt"
    good.write_text(text * 4)
    lines = text.splitlines(keepends=True)
    bad = tmp_path / "bad.txt"  # record 3 (of 0-6) is damaged
    bad.write_text(text + "".join(lines[:44]) + "0.5 0.5\n" + "".join(lines[45:]) + text)
    trunc = tmp_path / "trunc.txt"
    trunc.write_text(text * 2 + "".join(lines[:20]))
    files = [str(good), str(bad), str(trunc)]
    one = convert(files, tmp_path / "one", chunk_positions=5)
    two = convert(files, tmp_path / "two", chunk_positions=5, jobs=2)
    strip = lambda w: w.replace(str(tmp_path), "")  # noqa: E731
    assert [strip(w) for w in one.warnings] == [strip(w) for w in two.warnings] and len(one.warnings) == 2
    assert "record 3: policy" in one.warnings[0] and "record 6: truncated" in one.warnings[1]
    assert one.positions == two.positions == 12 + 3 + 6
    assert len(one.written) == len(two.written)
    for a, b in zip(one.written, two.written):
        x, y = read_chunk(a), read_chunk(b)
        assert x["meta"]["board_size"] == y["meta"]["board_size"]
        for key in x:
            if key != "meta":
                np.testing.assert_array_equal(x[key], y[key], err_msg=key)
