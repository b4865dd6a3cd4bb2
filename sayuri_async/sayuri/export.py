"""``sayuri-async export``: a Sayuri network back into Sayuri's weights file.

Vocabulary
----------
export        a ``SayuriNet`` (an import, or a trained network the trainer
              exported) written as Sayuri's text file or its ``float32bin``
              form, in the header, stack, struct and parameter order that
              ``weights.py`` reads and ``docs/sayuri.md`` describes.
layers        ``layers_of(net)``: the struct lines with their tensors, in
              file order. Every norm is folded into its convolution first
              (``SayuriNet.fold_batchnorm``), so each ``Convolution`` carries
              the whole affine map and its ``BatchNorm`` line is the neutral
              one (mean 0, standard deviation 1): Sayuri's loader computes
              ``w / 1`` and ``(b - 0) / 1``, the trained function exactly.
check         after writing, the file is read back by our loader and run on
              an empty 9x9 and 19x19 board next to the network it came from;
              the largest output difference is printed (and must be under
              ``CHECK_TOLERANCE``).

Exit codes: 0 written, 2 bad input (the message names the file), 1 the check
failed (the file is left in place for a look).
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import torch

from ..encoders import get_encoder
from ..encoders.sayuri_v3 import NAME
from ..go.board import new_board
from ..net.weights import WeightsError
from ..usererror import ArgumentParser, RunFailure, UserError, answered, input_file, output_file
from .model import SayuriNet
from .weights import Layer, import_sayuri, load_any_weights, write_sayuri

CHECK_TOLERANCE = 1e-4
FORMATS = ("text", "bin")


def layers_of(net: SayuriNet) -> list[Layer]:
    """The struct lines and tensors of ``net`` in Sayuri's file order."""
    folded = net.fold_batchnorm()
    out: list[Layer] = []

    def conv(mod: torch.nn.Conv2d, bn: bool = True) -> None:
        w = mod.weight.detach().float().cpu().numpy()
        cout, cin, k, _ = w.shape
        out.append(Layer("Convolution", (cin, cout, k), [w.ravel(), mod.bias.detach().float().cpu().numpy()]))
        if bn:
            out.append(Layer("BatchNorm", (cout,), [np.zeros(cout, np.float32), np.ones(cout, np.float32)]))

    def fc(mod: torch.nn.Linear) -> None:
        w = mod.weight.detach().float().cpu().numpy()
        nout, nin = w.shape
        out.append(Layer("FullyConnect", (nin, nout), [w.ravel(), mod.bias.detach().float().cpu().numpy()]))

    conv(folded.input_conv.conv)
    for blk in folded.blocks:
        for cn in blk.convs:
            conv(cn.conv)
        if blk.se is not None:
            fc(blk.se.squeeze)
            fc(blk.se.excite)
    conv(folded.policy_conv.conv)
    fc(folded.policy_inter)
    conv(folded.policy_out, bn=False)
    fc(folded.policy_pass)
    conv(folded.value_conv.conv)
    fc(folded.value_inter)
    conv(folded.ownership_conv, bn=False)
    fc(folded.value_misc)
    for layer in out:
        for t in layer.tensors:
            if not np.isfinite(t).all():
                raise ValueError(f"the network holds NaN or infinity ({layer.kind} {layer.dims})")
    return out


def export_sayuri(net: SayuriNet, path: str | os.PathLike, binary: bool = False) -> None:
    """Write ``net`` as a Sayuri weights file (atomic)."""
    write_sayuri(path, net.config, layers_of(net), binary=binary)


@torch.no_grad()
def max_difference(a: SayuriNet, b: SayuriNet, sizes: tuple[int, ...] = (9, 19)) -> float:
    """Largest output difference of two nets on empty boards (black to move)."""
    worst = 0.0
    for n in sizes:
        x = torch.from_numpy(get_encoder(NAME)(new_board(n))).float()[None]
        oa, ob = a.eval()(x), b.eval()(x)
        for key in ("policy_all", "misc", "ownership"):
            worst = max(worst, float((oa[key] - ob[key]).abs().max()))
    return worst


class ExportMismatch(RunFailure):
    """The written file does not read back as the network (exit status 1)."""


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="sayuri-async export",
                       description="Write a Sayuri network (an import or a trained export) as a Sayuri weights file.")
    p.add_argument("weights", help="a Sayuri network: our import or the trainer's export (.safetensors), "
                                   "or a Sayuri weights file")
    p.add_argument("-o", "--out", required=True, help="the Sayuri weights file to write (e.g. net.bin.txt)")
    p.add_argument("--format", choices=FORMATS, default="text",
                   help="text (FloatType float32) or bin (FloatType float32bin); default text")
    p.add_argument("--no-check", action="store_true", help="skip reading the written file back")
    return p


@answered("export")
def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    input_file(args.weights, "", "weights file")
    output_file(args.out, "-o", "net.bin.txt", inputs=[args.weights])
    try:
        net, _ = load_any_weights(args.weights)
    except WeightsError as e:
        raise UserError(str(e)) from None
    if not isinstance(net, SayuriNet):
        raise UserError(f"{args.weights}: not a Sayuri network ({net.config.short_name} of our own "
                        "architecture; Sayuri's format holds only Sayuri's)")
    try:
        export_sayuri(net, args.out, binary=args.format == "bin")
    except ValueError as e:
        raise UserError(f"{args.weights}: {e}") from None
    cfg = net.config
    print(f"wrote {args.out}: Sayuri weights version {cfg.version}, {cfg.short_name}, {args.format}")
    if args.no_check:
        return 0
    back, _ = import_sayuri(args.out)
    diff = max_difference(net, back)
    print(f"read back: largest output difference {diff:.2e} on empty 9x9 and 19x19 boards")
    if not diff < CHECK_TOLERANCE:
        raise ExportMismatch(f"{args.out}: read back differs by {diff:.2e} (over {CHECK_TOLERANCE:g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
