"""What outside input can make us allocate is bounded, and going over a limit
is a clear error: GTP replies of other engines (``gtpclient``), chunk headers
and compressed sizes (``chunkfile.check_chunk_sizes``), SGF records
(``go.sgf``)."""
from __future__ import annotations

import io
import json
import sys
import tracemalloc
import zipfile

import numpy as np
import pytest

from sayuri_async.go import sgf
from sayuri_async.rating.gtpclient import MAX_LINE_BYTES, GtpFailure, GtpProcess
from sayuri_async.chunkfile import ChunkError, peek_chunk, read_chunk
from sayuri_async.train.dataset import list_chunks
from test_train_chunks import make_chunk

ENGINE = """
import os, sys
sys.stdin.readline()
os.write(1, b"= ")
{body}
import time
time.sleep(30)
"""


def engine(body: str) -> GtpProcess:
    return GtpProcess([sys.executable, "-c", ENGINE.format(body=body)], name="flood")


@pytest.mark.slow
def test_an_endless_line_from_an_engine_is_refused_with_bounded_memory():
    # 48 MiB without a newline (the old client held it all, and an endless one grew until the kernel killed it)
    proc = engine("for _ in range(768):\n    os.write(1, b'x' * 65536)\nos.write(1, b'\\n\\n')")
    tracemalloc.start()
    try:
        with pytest.raises(GtpFailure, match="over the limit"):
            proc.send("name", timeout=60)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        proc.proc.kill()
        proc.close(timeout=2)
    assert peak < 4 * MAX_LINE_BYTES, peak


@pytest.mark.slow
def test_an_endless_response_is_refused_and_lines_read_ahead_are_bounded():
    proc = engine("line = b'y' * 1023 + b'\\n'\nwhile True:\n    os.write(1, line)")
    try:
        with pytest.raises(GtpFailure, match="response over the limit"):
            proc.send("name", timeout=60)
        assert proc.lines.qsize() <= proc.lines.maxsize
    finally:
        proc.proc.kill()
        proc.close(timeout=2)


@pytest.mark.slow
def test_an_engine_that_ends_is_an_eof_not_a_broken_pipe():
    proc = GtpProcess([sys.executable, "-c", "pass"], name="gone")
    proc.proc.wait()
    with pytest.raises(EOFError, match="gone"):
        proc.send("name", timeout=10)
        proc.send("name", timeout=10)  # the second write meets a closed pipe
    proc.close(timeout=2)


def _npy(shape, dtype) -> bytes:
    b = io.BytesIO()
    np.lib.format.write_array_header_1_0(b, {"descr": np.dtype(dtype).str, "fortran_order": False, "shape": shape})
    return b.getvalue()


def test_a_header_claiming_a_trillion_positions_is_skipped_with_a_warning(tmp_path):
    data = tmp_path / "data"
    make_chunk(data / "chunk-1-7-0.npz", positions=40)
    meta = {"format": "sayuri-async-chunk", "version": 1, "board_size": 7, "planes": 25, "encoder": "simple-v1",
            "games": 1}
    liar = data / "chunk-2-7-0.npz"
    with zipfile.ZipFile(liar, "w") as z:
        z.writestr("action.npy", _npy((10**12,), np.int16) + b"\0" * 64)
        m = io.BytesIO()
        np.save(m, np.array(json.dumps(meta)))
        z.writestr("meta.npy", m.getvalue())
    with pytest.raises(ChunkError, match="claims 1,000,000,000,000 positions"):
        peek_chunk(liar)
    chunks, warnings = list_chunks(data, board_size=7)
    assert [c.positions for c in chunks] == [40]
    assert any("chunk-2-7-0.npz" in w and "claims" in w for w in warnings)


def test_a_zip_bomb_is_refused_before_it_is_decompressed(tmp_path):
    path = tmp_path / "chunk-1-7-0.npz"
    make_chunk(path, positions=10)
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("pad.npy", b"\0" * (32 << 20))  # 32 MiB of zeros: about 32 KB compressed
    assert path.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(ChunkError, match="bytes uncompressed for 10 positions"):
            read_chunk(path, 7)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, peak


def test_sgf_records_over_the_limits_are_refused():
    many_nodes = "(;GM[1]SZ[19]" + ";B[]" * (sgf.MAX_SGF_NODES + 1) + ")"
    with pytest.raises(sgf.SgfError, match="limit of 20,000 nodes"):
        sgf.load_sgf(many_nodes, source="big.sgf")
    long_game = "(;GM[1]SZ[19]" + "".join(f";{'BW'[i % 2]}[]" for i in range(sgf.MAX_SGF_MOVES + 1)) + ")"
    with pytest.raises(sgf.SgfError, match="over the limit of 2,500 moves"):
        sgf.load_sgf(long_game)
    with pytest.raises(sgf.SgfError, match="bytes for one record"):
        sgf.load_sgf("(;GM[1]SZ[19]C[" + "x" * sgf.MAX_SGF_BYTES + "])")
    game, _ = sgf.load_sgf("(;GM[1]SZ[9]" + ";B[]" * 400 + ")")  # a long but real record still loads
    assert len(game.moves) == 400


def test_loadsgf_reads_no_more_than_the_limit(tmp_path):
    p = tmp_path / "huge.sgf"
    with open(p, "wb") as f:
        f.write(b"(;GM[1]SZ[19]C[")
        f.seek(64 << 20)  # a sparse 64 MiB file
        f.write(b"])")
    with pytest.raises(sgf.SgfError, match=r"huge\.sgf: larger than the limit"):
        sgf.load_sgf_file(p)
