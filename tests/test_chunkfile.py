"""The chunk format's one home (``sayuri_async/chunkfile.py``): writing checks
and casts like reading, names and serials; reading itself is tested in
test_train_chunks.py, test_selfplay.py and test_input_limits.py."""
from __future__ import annotations

import numpy as np
import pytest

from sayuri_async.chunkfile import (FIELDS, REQUIRED, ChunkError, chunk_name, generation_of, make_meta, read_chunk,
                                    write_chunk, write_new_chunk)
from sayuri_async.fileio import NameTaken

N, C, M = 7, 25, 5


def arrays(m: int = M) -> dict[str, np.ndarray]:
    """Well-formed required arrays in wider dtypes than the format's."""
    out = {f.name: np.zeros(f.shape(m, N, C), dtype=np.float64 if f.kind == "f" else
                            np.int64 if f.kind == "i" else np.uint8 if f.kind == "u" else bool) for f in REQUIRED}
    out["next_action"][:] = -1
    out["wdl"][:, 1] = 1.0  # a jigo: a result row sums to 1
    out["to_move"][:] = 1
    return out


def test_write_casts_to_the_field_dtypes_and_reads_back(tmp_path):
    path = tmp_path / chunk_name(3, "t", 1)
    assert write_chunk(path, make_meta("simple-v1", C, N, 1, "test"), arrays()) == M
    got = read_chunk(path, N, "simple-v1", C)
    assert got["meta"]["games"] == 1 and got["ownership_mask"].all()  # optional, absent: all true
    for f in REQUIRED:
        assert got[f.name].dtype == np.dtype(f.dtype), f.name


@pytest.mark.parametrize("change, message", [
    (lambda a: a.update(extra=np.zeros(M)), "arrays \\['extra'\\] are not chunk fields"),
    (lambda a: a.pop("komi"), "no 'komi' array"),
    (lambda a: a.update(policy=np.zeros((M, N * N))), "'policy' has shape \\[5, 49\\], expected \\[5, 50\\]"),
    (lambda a: a.update(q_avg=np.zeros((M, 3))), "'q_avg' has shape"),
])
def test_write_refuses_what_a_reader_would_refuse(tmp_path, change, message):
    a = arrays()
    change(a)
    path = tmp_path / "c.npz"
    with pytest.raises(ChunkError, match=message):
        write_chunk(path, make_meta("simple-v1", C, N, 1, "test"), a)
    assert not list(tmp_path.iterdir())
    with pytest.raises(ChunkError, match="meta lacks"):
        write_chunk(path, {"format": "sayuri-async-chunk", "version": 1}, arrays())


def test_new_chunks_take_the_next_free_serial_and_names_give_the_generation(tmp_path):
    meta = make_meta("simple-v1", C, N, 1, "test")
    first, s1 = write_new_chunk(tmp_path, 12, "run-p0", 1, meta, arrays())
    second, s2 = write_new_chunk(tmp_path, 12, "run-p0", 1, meta, arrays(3))
    assert (first.name, s1, second.name, s2) == ("chunk-000012-run-p0-000001.npz", 1,
                                                 "chunk-000012-run-p0-000002.npz", 2)
    assert read_chunk(first)["action"].shape == (M,)  # not replaced
    assert [generation_of(p.name) for p in (first, second)] == [12, 12]
    assert generation_of("chunk-0-1-0.npz") == 0 and generation_of("notes.npz") == -1
    with pytest.raises(NameTaken):
        write_chunk(first, meta, arrays(), replace=False)
    assert set(FIELDS) >= {"opp_policy", "q_avg", "score_avg", "stddev", "policy_kld", "ownership_mask"}
