"""The weights file: safetensors tensors plus string metadata; no pickle.

Vocabulary
----------
header      safetensors' ``__metadata__``: a flat str -> str map. Ours holds
            ``format`` ("sayuri-async-weights"), ``format_version`` ("1"),
            ``config`` (NetConfig as JSON), ``encoder``, ``planes``,
            ``board_size_min``, ``board_size_max``, ``step``, ``name``,
            ``created`` and ``meta`` (the caller's whole meta dict as JSON).
tensors     the net's ``state_dict()`` in float32 (BatchNorm running stats
            and counters included), keys as torch names them.
meta        the dict the caller passes to ``save_weights`` and gets back from
            ``load_weights``: free JSON-able content (training step, name,
            run id, ...) merged with the header's standard keys.
WeightsError a file that cannot be read, is not ours, or does not match its
            own architecture; the message names the file and the mismatch.
checked before allocating
            a header is trusted with nothing: its ``config`` must lie within
            ``MAX_BLOCKS`` and ``MAX_WIDTH`` (``size_problem``), and its
            tensor table (names and shapes, from the header's JSON alone:
            ``tensor_table``) must be exactly the state of the network the
            config describes, which is built on torch's ``meta`` device (no
            memory: ``expected_shapes``), before the network is built for
            real or a tensor is read. A header claiming 10^6 channels or
            100,000 blocks is refused in one line, in milliseconds.

``docs/weights.md`` describes the format for other tools.
"""
from __future__ import annotations

import json
import os
import time
from typing import Any

import torch

from ..encoders import ENCODERS
from ..fileio import write_safetensors
from .board_sizes import check_board_size
from .model import Net, NetConfig
from ..usererror import UserError

FORMAT = "sayuri-async-weights"
FORMAT_VERSION = 1
MAX_BLOCKS = 256  # blocks of a network (Sayuri's largest have 40, KataGo's 60)
MAX_WIDTH = 4096  # channels of any layer (Sayuri's and KataGo's largest have 512)
MAX_HEADER_BYTES = 100 << 20  # safetensors' own limit on the header


class WeightsError(ValueError, UserError):
    """An unreadable, foreign, truncated or inconsistent weights file."""


def header_of(net: torch.nn.Module, meta: dict) -> dict[str, str]:
    """The header that ``save_weights`` writes for ``net`` (any module with
    a ``config`` of ``to_dict``, ``encoder``, ``input_planes``, board sizes
    and ``short_name``) and ``meta``."""
    cfg = net.config
    enc = ENCODERS.get(cfg.encoder)
    return {
        "format": FORMAT,
        "format_version": str(FORMAT_VERSION),
        "config": json.dumps(cfg.to_dict(), sort_keys=True),
        "encoder": cfg.encoder,
        "planes": str(enc.planes if enc else cfg.input_planes),
        "board_size_min": str(cfg.board_size_min),
        "board_size_max": str(cfg.board_size_max),
        "step": str(int(meta.get("step", 0))),
        "name": str(meta.get("name", cfg.short_name)),
        "created": str(meta.get("created", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))),
        "meta": json.dumps(meta, sort_keys=True, default=str),
    }


def save_weights(path: str | os.PathLike, net: Net, meta: dict[str, Any] | None = None) -> None:
    """Write ``net`` and ``meta`` to ``path`` atomically (temporary file in the
    same folder, then a rename: ``fileio.atomic_path``)."""
    meta = dict(meta or {})
    tensors = {k: v.detach().to("cpu", torch.float32).contiguous() for k, v in net.state_dict().items()}
    write_safetensors(path, tensors, header_of(net, meta))


def _header_doc(path: str) -> dict:
    """The safetensors header's JSON (cheap: reads the first bytes of the file)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(8)
            if len(raw) != 8:
                raise WeightsError(f"{path}: too short for a safetensors file ({len(raw)} bytes)")
            hlen = int.from_bytes(raw, "little")
            if hlen > MAX_HEADER_BYTES:
                raise WeightsError(f"{path}: header length {hlen} is not plausible (not a safetensors file?)")
            head = f.read(hlen)
        if len(head) != hlen:
            raise WeightsError(f"{path}: truncated header ({len(head)} of {hlen} bytes)")
        doc = json.loads(head)
    except OSError as e:
        raise WeightsError(f"{path}: cannot read: {e}") from e
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise WeightsError(f"{path}: header is not JSON ({e}); not a safetensors file") from e
    except RecursionError:
        raise WeightsError(f"{path}: header is nested too deeply; not a safetensors file") from None
    if not isinstance(doc, dict):
        raise WeightsError(f"{path}: header is not a JSON object; not a safetensors file")
    return doc


def read_header(path: str | os.PathLike) -> dict[str, str]:
    """The header metadata alone (cheap: reads the first bytes of the file)."""
    path = str(path)
    md = _header_doc(path).get("__metadata__")
    if not isinstance(md, dict):
        raise WeightsError(f"{path}: no safetensors metadata; not a {FORMAT} file")
    return md


def check_whole(path: str | os.PathLike) -> None:
    """WeightsError unless ``path`` is as long as its header says: its
    tensors' bytes all there (cheap: the header and the file's size only;
    a file cut short by a full disk or a copy that stopped fails here)."""
    path = str(path)
    doc = _header_doc(path)
    ends = []
    for name, entry in doc.items():
        offsets = entry.get("data_offsets") if isinstance(entry, dict) and name != "__metadata__" else [0, 0]
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(x, int) for x in offsets)):
            raise WeightsError(f"{path}: tensor {name!r} has no data offsets in the header; not a safetensors file")
        ends.append(offsets[1])
    try:
        with open(path, "rb") as f:
            hlen = int.from_bytes(f.read(8), "little")
            size = os.fstat(f.fileno()).st_size
    except OSError as e:
        raise WeightsError(f"{path}: cannot read: {e.strerror or e}") from None
    need = 8 + hlen + max(ends, default=0)
    if size < need:
        raise WeightsError(f"{path}: truncated ({size} of {need} bytes)")


def refuse_board_sizes(path: str | os.PathLike, sizes: list[int], option: str) -> None:
    """``board_sizes.check_board_size`` (a ``BoardSizeError``) for each of
    ``sizes`` against the board sizes the header of ``path`` declares
    (cheap: the header alone). A file without our header (Sayuri's own
    format, which declares none) passes: loading it says what else is
    wrong."""
    try:
        md = read_header(path)
        lo, hi = int(md["board_size_min"]), int(md["board_size_max"])
    except (WeightsError, KeyError, TypeError, ValueError):
        return
    for size in sizes:
        check_board_size(str(path), lo, hi, size, option)


def tensor_table(path: str | os.PathLike) -> dict[str, tuple[int, ...]]:
    """Every tensor's name and shape, from the header's JSON alone."""
    path = str(path)
    out = {}
    for name, entry in _header_doc(path).items():
        if name == "__metadata__":
            continue
        shape = entry.get("shape") if isinstance(entry, dict) else None
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise WeightsError(f"{path}: tensor {name!r} has no shape in the header; not a safetensors file")
        out[name] = tuple(shape)
    return out


def size_problem(widths: dict[str, int], blocks: int) -> str | None:
    """Why a network of ``blocks`` blocks and these layer ``widths`` (name
    to channels) is too large to build, or None."""
    if isinstance(blocks, bool) or not isinstance(blocks, int) or not 0 <= blocks <= MAX_BLOCKS:
        return f"{blocks} blocks, over the limit of {MAX_BLOCKS}"
    for name, width in widths.items():
        if isinstance(width, bool) or not isinstance(width, int):
            return f"{name} {width!r}, not a whole number"
        if width > MAX_WIDTH:
            return f"{name} {width}, over the limit of {MAX_WIDTH}"
    return None


def net_size_problem(cfg: NetConfig) -> str | None:
    """``size_problem`` of one of our networks' configs."""
    widths = {k: getattr(cfg, k) for k in ("channels", "input_planes", "policy_channels", "value_channels",
                                            "value_hidden", "bottleneck_channels")}
    if not 0 <= cfg.nested_blocks <= 16:
        return f"nested_blocks {cfg.nested_blocks}, over the limit of 16"
    return size_problem(widths, cfg.blocks)


def expected_shapes(build) -> dict[str, tuple[int, ...]]:
    """The state's names and shapes of the module ``build()`` makes, built
    on torch's meta device: no memory for its tensors."""
    with torch.device("meta"):
        module = build()
    return {k: tuple(v.shape) for k, v in module.state_dict().items()}


def check_tensor_table(path: str, table: dict[str, tuple[int, ...]], want: dict[str, tuple[int, ...]],
                       what: str, optional: set[str] = frozenset(), rename=None) -> None:
    """WeightsError unless the header's ``table`` holds exactly the tensors
    ``want`` (``optional`` ones may be absent; ``rename`` maps an older
    file's names to today's), each of its shape."""
    got = {(rename(k) if rename else k): v for k, v in table.items()}
    missing = sorted(set(want) - set(got) - set(optional))
    extra = sorted(set(got) - set(want))
    if missing or extra:
        raise WeightsError(f"{path}: tensors do not match {what}: "
                           f"missing {missing[:5]}{'...' if len(missing) > 5 else ''}, "
                           f"unexpected {extra[:5]}{'...' if len(extra) > 5 else ''}")
    for k, shape in got.items():
        if shape != want[k]:
            raise WeightsError(f"{path}: tensor {k} has shape {shape}, the config needs {want[k]}")


def _config_from_header(path: str, md: dict[str, str]) -> NetConfig:
    if md.get("format") != FORMAT:
        raise WeightsError(f"{path}: format is {md.get('format')!r}, expected {FORMAT!r}")
    try:
        version = int(md.get("format_version", ""))
    except ValueError:
        raise WeightsError(f"{path}: format_version {md.get('format_version')!r} is not an integer") from None
    if version > FORMAT_VERSION:
        raise WeightsError(f"{path}: format_version {version} is newer than this program reads ({FORMAT_VERSION})")
    try:
        cfg = NetConfig.from_dict(json.loads(md["config"]))
    except KeyError:
        raise WeightsError(f"{path}: header has no 'config'") from None
    except (ValueError, TypeError) as e:
        raise WeightsError(f"{path}: config does not describe a net: {e}") from e
    too_large = net_size_problem(cfg)
    if too_large:
        raise WeightsError(f"{path}: the header's config describes a network of {too_large}")
    if md.get("encoder", cfg.encoder) != cfg.encoder:
        raise WeightsError(f"{path}: header encoder {md.get('encoder')!r} differs from config encoder {cfg.encoder!r}")
    enc = ENCODERS.get(cfg.encoder)
    if enc is None:
        raise WeightsError(f"{path}: encoder {cfg.encoder!r} is unknown here (known: {sorted(ENCODERS)})")
    if enc.planes != cfg.input_planes:
        raise WeightsError(f"{path}: encoder {cfg.encoder} has {enc.planes} planes but the net takes {cfg.input_planes}")
    if "planes" in md and md["planes"] != str(enc.planes):
        raise WeightsError(f"{path}: header planes {md['planes']} differ from encoder {cfg.encoder}'s {enc.planes}")
    for key in ("board_size_min", "board_size_max"):
        if key in md and md[key] != str(getattr(cfg, key)):
            raise WeightsError(f"{path}: header {key} {md[key]} differs from config's {getattr(cfg, key)}")
    return cfg


def read_tensors(path: str, expected: dict[str, torch.Tensor], what: str, optional: set[str] = frozenset(),
                 rename=None) -> dict[str, torch.Tensor]:
    """The tensors of the safetensors file ``path`` for a module whose state
    is ``expected``, each of its shape and dtype (``rename`` maps an older
    file's names to today's). Either every tensor is there or every one but
    the ``optional`` ones; a WeightsError names the file and the mismatch
    (``what``: the network the config describes), a tensor of another shape,
    and one holding NaN or infinity."""
    from safetensors import safe_open

    try:
        with safe_open(path, framework="pt", device="cpu") as f:
            got = {(rename(k) if rename else k): f.get_tensor(k) for k in f.keys()}
    except Exception as e:  # safetensors raises its own error types for bad files
        raise WeightsError(f"{path}: cannot read tensors: {e}") from e
    missing = set(expected) - set(got)
    extra = sorted(set(got) - set(expected))
    if (missing and missing != set(optional)) or extra:
        shown = sorted(missing - set(optional)) or sorted(missing)
        raise WeightsError(f"{path}: tensors do not match {what}: "
                           f"missing {shown[:5]}{'...' if len(shown) > 5 else ''}, "
                           f"unexpected {extra[:5]}{'...' if len(extra) > 5 else ''}")
    for k, t in got.items():
        want = expected[k]
        if tuple(t.shape) != tuple(want.shape):
            raise WeightsError(f"{path}: tensor {k} has shape {tuple(t.shape)}, the config needs {tuple(want.shape)}")
        if t.is_floating_point() and not torch.isfinite(t).all():
            raise WeightsError(f"{path}: tensor {k} holds NaN or infinity")
        got[k] = t.to(want.dtype)
    return got


def read_meta(path: str, md: dict[str, str]) -> dict[str, Any]:
    """The caller's meta dict stored in the header ``md`` (JSON)."""
    try:
        meta = json.loads(md.get("meta", "{}") or "{}")
    except (ValueError, RecursionError) as e:
        raise WeightsError(f"{path}: meta is not JSON: {e}") from e
    if not isinstance(meta, dict):
        raise WeightsError(f"{path}: meta is not a JSON object")
    return meta


def load_weights(path: str | os.PathLike, device: str = "cpu") -> tuple[Net, dict[str, Any]]:
    """``(net in eval mode, meta)``; raises WeightsError naming the file and
    the mismatch for anything wrong."""
    path = str(path)
    md = read_header(path)
    cfg = _config_from_header(path, md)
    check_tensor_table(path, tensor_table(path), expected_shapes(lambda: Net(cfg)),
                       f"a {cfg.short_name} {cfg.block_kind} net")
    net = Net(cfg)
    net.load_state_dict(read_tensors(path, net.state_dict(), f"a {cfg.short_name} {cfg.block_kind} net"))
    net.eval().to(device)
    meta = read_meta(path, md)
    try:
        step = int(md.get("step", "0") or 0)
    except ValueError:
        raise WeightsError(f"{path}: step {md.get('step')!r} is not an integer") from None
    meta.update(
        name=md.get("name", cfg.short_name),
        step=step,
        encoder=cfg.encoder,
        board_size_min=cfg.board_size_min,
        board_size_max=cfg.board_size_max,
        config=cfg.to_dict(),
        created=md.get("created", ""),
    )
    return net, meta
