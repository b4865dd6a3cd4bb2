"""How well a network judges and predicts a set of training chunks: the value
quality the RL loop records for every generation, and ``tools/value_check.py``
prints for any networks and chunks.

Vocabulary
----------
outcome z        the chunk's value target as one number: win - loss of the
                 side to move (``wdl[0] - wdl[2]``).
value_mse        mean of ``(v - z)^2``, v the network's win - loss.
baseline_mse     mean of ``z^2``: what a network answering 0 (no judgement)
                 everywhere scores. value_mse above it: the value head's
                 confidence does more harm than good on these positions.
value_corr       correlation of v and z; sign_agree: share of positions
                 (z not 0) where v names the same winner.
policy_ce        cross-entropy of the network's policy against the chunks'
                 policy targets (full-search positions only);
target_entropy   their entropy; policy_kl = policy_ce - target_entropy, how
                 far training would pull the policy.
top1_played      share of positions whose played move is the policy's
                 first choice.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..chunkfile import ChunkError, generation_glob, read_chunk


def load_positions(data: Path, generation: int | None, max_positions: int) -> tuple[dict[str, np.ndarray], int]:
    """The newest chunks' planes (unpacked), targets and played moves, up to
    ``max_positions`` rows; and the number of chunks read."""
    pattern = generation_glob(generation) if generation is not None else "*.npz"
    paths = sorted(data.rglob(pattern), key=lambda p: (p.stat().st_mtime, p.name), reverse=True)
    parts: list[dict[str, np.ndarray]] = []
    have = chunks = 0
    for path in paths:
        if have >= max_positions:
            break
        try:
            a = read_chunk(path)
        except ChunkError:
            continue
        n = int(a["meta"]["board_size"])
        m = len(a["wdl"])
        parts.append({"planes": np.unpackbits(a["planes"], axis=-1, count=n * n).reshape(m, -1, n, n),
                      "z": (a["wdl"][:, 0] - a["wdl"][:, 2]).astype(np.float64),
                      "policy": a["policy"].astype(np.float64), "full": a["full_search"].astype(bool),
                      "action": a["action"].astype(np.int64)})
        have += m
        chunks += 1
    if not parts:
        raise ChunkError(f"{data}: no readable chunk" + (f" of generation {generation}" if generation is not None
                                                         else ""))
    out = {k: np.concatenate([p[k] for p in parts])[:max_positions] for k in parts[0]}
    return out, chunks


def net_figures(weights: str, pos: dict[str, np.ndarray], batch: int = 256) -> dict[str, float]:
    """The figures of the vocabulary for one network on ``pos``."""
    from ..backend_factory import make_backend

    be = make_backend(weights, max_batch=batch)
    values, policies = [], []
    for i in range(0, len(pos["z"]), batch):
        out = be.run(np.ascontiguousarray(pos["planes"][i:i + batch]))
        values.append(np.asarray(out.value, dtype=np.float64))
        policies.append(np.asarray(out.policy, dtype=np.float64))
    be.close()
    v, p, z = np.concatenate(values), np.concatenate(policies), pos["z"]
    decided = z != 0
    full = pos["full"] & (pos["policy"].sum(axis=1) > 0)
    target = pos["policy"][full]
    target = target / target.sum(axis=1, keepdims=True)
    ce = float(-(target * np.log(p[full] + 1e-9)).sum(axis=1).mean()) if full.any() else float("nan")
    ent = float(-(target * np.log(target + 1e-12)).sum(axis=1).mean()) if full.any() else float("nan")
    corr = float(np.corrcoef(v, z)[0, 1]) if v.std() > 0 and z.std() > 0 else float("nan")
    return {"value_mse": round(float(((v - z) ** 2).mean()), 4), "baseline_mse": round(float((z ** 2).mean()), 4),
            "value_corr": round(corr, 4),
            "sign_agree": round(float((np.sign(v[decided]) == np.sign(z[decided])).mean()), 4) if decided.any()
            else float("nan"),
            "policy_ce": round(ce, 4), "target_entropy": round(ent, 4), "policy_kl": round(ce - ent, 4),
            "top1_played": round(float((p.argmax(axis=1) == pos["action"]).mean()), 4)}
