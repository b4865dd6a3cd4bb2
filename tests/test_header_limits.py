"""A weights header is checked before anything is allocated: a safetensors
header's ``config`` must lie within the size limits and its tensor table
(names and shapes, from the header's JSON alone) must be the state of the
network the config describes; a Sayuri file's info and stack must lie within
the limits and describe exactly its struct. A header edited to claim
100,000 blocks or 10^6 channels is refused in one line while the process's
peak memory stays where the imports left it (the old loader grew past
2.9 GB, or asked torch for 36 TB)."""
from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sayuri_async import cli
from sayuri_async.net import shipped
from sayuri_async.net.weights import MAX_BLOCKS, MAX_WIDTH, WeightsError, load_weights
from sayuri_async.sayuri.model import BlockSpec, SayuriConfig
from sayuri_async.sayuri.weights import (SayuriWeightsError, build_net, import_sayuri, layers_for, read_sayuri,
                                         save_imported, struct_of, write_sayuri)

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = shipped.SHIPPED[9]
SAYURI = SayuriConfig(version=5, channels=8, blocks=[BlockSpec("residual", 0, 4), BlockSpec("bottleneck", 4, 0),
                                                     BlockSpec("nested-bottleneck", 4, 2)],
                      policy_channels=4, value_channels=4)


def edit_header(src: Path, dst: Path, edit) -> Path:
    """``src`` with its header's metadata changed by ``edit(metadata)``; the
    tensors' bytes as they were."""
    data = src.read_bytes()
    n = int.from_bytes(data[:8], "little")
    doc = json.loads(data[8:8 + n])
    edit(doc["__metadata__"])
    head = json.dumps(doc).encode()
    head += b" " * (-len(head) % 8)
    dst.write_bytes(len(head).to_bytes(8, "little") + head + data[8 + n:])
    return dst


def edit_config(src: Path, dst: Path, **changes) -> Path:
    def edit(md: dict) -> None:
        cfg = json.loads(md["config"])
        cfg.update(changes)
        md["config"] = json.dumps(cfg)
    return edit_header(src, dst, edit)


@pytest.fixture(scope="module")
def bad(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("headers")
    ours = {
        "blocks-100000": edit_config(SHIPPED, d / "b.safetensors", blocks=100_000),
        "channels-1e6": edit_config(SHIPPED, d / "c.safetensors", channels=1_000_000),
        "blocks-200": edit_config(SHIPPED, d / "b200.safetensors", blocks=200),  # within the limit, not the tensors
    }
    text = d / "net.txt"
    write_sayuri(text, SAYURI, layers_for(SAYURI, np.random.default_rng(0)))
    body = text.read_text()
    (d / "wide.txt").write_text(body.replace("ResidualChannels 8", "ResidualChannels 1000000"))
    (d / "wider.txt").write_text(body.replace("ResidualChannels 8", f"ResidualChannels {MAX_WIDTH}"))
    save_imported(d / "imported.safetensors", build_net(read_sayuri(text)), {"name": "x"})

    def wide_blocks(md: dict) -> None:
        cfg = json.loads(md["config"])
        cfg["channels"] = 1_000_000
        md["config"] = json.dumps(cfg)

    def many_blocks(md: dict) -> None:
        cfg = json.loads(md["config"])
        cfg["blocks"] = cfg["blocks"] * 40  # 120 blocks: within the limit, not the tensors
        md["config"] = json.dumps(cfg)

    sayuri = {
        "sayuri-text-channels-1e6": d / "wide.txt",
        "sayuri-text-channels-4096": d / "wider.txt",
        "imported-channels-1e6": edit_header(d / "imported.safetensors", d / "iw.safetensors", wide_blocks),
        "imported-120-blocks": edit_header(d / "imported.safetensors", d / "ib.safetensors", many_blocks),
    }
    return {**ours, **sayuri, "good-text": text, "good-imported": d / "imported.safetensors"}


MEASURE = """
import json, resource, sys
from sayuri_async.net.weights import WeightsError
from sayuri_async.sayuri.weights import load_any_weights
import torch
kb = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
base = kb()
out = {}
for name, path in json.loads(sys.argv[1]).items():
    try:
        load_any_weights(path)
        out[name] = ["loaded", kb() - base]
    except WeightsError as e:
        out[name] = [str(e), kb() - base]
print(json.dumps(out))
"""


@pytest.mark.slow
def test_oversized_headers_are_refused_before_any_allocation(bad):
    cases = {k: str(v) for k, v in bad.items() if not k.startswith("good")}
    r = subprocess.run([sys.executable, "-c", MEASURE, json.dumps(cases)], capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    for name, (message, grown_kb) in got.items():
        assert message != "loaded", name
        assert grown_kb < 64 * 1024, f"{name}: peak memory grew {grown_kb / 1024:.0f} MB while refusing it"
    assert f"blocks, over the limit of {MAX_BLOCKS}" in got["blocks-100000"][0]
    assert f"channels 1000000, over the limit of {MAX_WIDTH}" in got["channels-1e6"][0]
    assert "tensors do not match" in got["blocks-200"][0]
    assert "channels 1000000, over the limit" in got["sayuri-text-channels-1e6"][0]
    assert "layer 0 is Convolution (43, 8, 3), expected Convolution (43, 4096, 3)" in \
        got["sayuri-text-channels-4096"][0]
    assert "channels 1000000, over the limit" in got["imported-channels-1e6"][0]
    assert "tensors do not match" in got["imported-120-blocks"][0]


def test_the_files_before_the_edits_load(bad):
    net, _ = load_weights(SHIPPED)  # the unedited file loads, whichever network is shipped
    assert 1 <= net.config.blocks < 200 and 1 <= net.config.channels < 1_000_000
    assert len(import_sayuri(bad["good-text"])[0].config.blocks) == 3
    from sayuri_async.sayuri.weights import load_any_weights

    assert len(load_any_weights(bad["good-imported"])[0].config.blocks) == 3


def test_a_shape_edited_in_the_header_table_is_refused_before_the_tensors_are_read(tmp_path):
    data = SHIPPED.read_bytes()
    n = int.from_bytes(data[:8], "little")
    doc = json.loads(data[8:8 + n])
    name = next(k for k in doc if k != "__metadata__" and len(doc[k]["shape"]) == 4)
    doc[name]["shape"] = [doc[name]["shape"][0] * 2] + doc[name]["shape"][1:]
    head = json.dumps(doc).encode()
    head += b" " * (-len(head) % 8)
    path = tmp_path / "shape.safetensors"
    path.write_bytes(len(head).to_bytes(8, "little") + head + data[8 + n:])
    with pytest.raises(WeightsError, match=f"tensor {name} has shape"):
        load_weights(path)


def test_the_struct_of_a_config_is_what_the_writer_writes():
    for cfg in (SAYURI, SayuriConfig(version=3, channels=6, blocks=[BlockSpec("residual")] * 2, policy_channels=3,
                                     value_channels=3)):
        assert struct_of(cfg) == [(x.kind, x.dims) for x in layers_for(cfg, np.random.default_rng(1))]


@pytest.mark.parametrize("case,words", [("blocks-100000", ["blocks", "limit"]),
                                        ("sayuri-text-channels-1e6", ["channels 1000000", "limit"])])
def test_gtp_and_import_refuse_them_in_one_line(bad, case, words, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    commands = [f"gtp --weights {bad[case]}"]
    if case.startswith("sayuri"):
        commands.append(f"import-weights {bad[case]} -o {bad[case].parent / 'out.safetensors'}")
    for command in commands:
        status = cli.main(shlex.split(command))
        err = capsys.readouterr().err
        lines = [x for x in err.splitlines() if x.strip() and not x.startswith("compiling ")]
        assert status == 2 and len(lines) == 1 and "Traceback" not in err, err
        assert lines[0].startswith(f"sayuri-async {command.split()[0]}: ")
        assert all(w in lines[0] for w in words), lines[0]


def test_a_sayuri_file_whose_struct_disagrees_with_its_stack_is_refused(tmp_path):
    text = tmp_path / "net.txt"
    write_sayuri(text, SAYURI, layers_for(SAYURI, np.random.default_rng(0)))
    body = text.read_text().replace("ResidualBlocks 3", "ResidualBlocks 2")
    body = body.replace("NestedBottleneckBlock-SE\n", "", 1)  # the stack lists two blocks, the struct holds three
    text.write_text(body)
    with pytest.raises(SayuriWeightsError, match=r"layer 18 is Convolution \(4, 4, 3\), expected "
                                                 r"FullyConnect \(12, 4\) \(the info and stack describe 2b8c\)"):
        import_sayuri(text)
