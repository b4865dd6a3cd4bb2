"""The device's curve in the live view: evals/s per batch size, as bars.

Vocabulary
----------
curve       the device's measured evals/s per bucket (``Status.device_rates``,
            ``{batch size: evals/s}``, the one curve the verdict reads): a
            row per bucket, a bar scaled to the best rate, the rate as a
            number.
now         the bucket the current ``batch_size`` is padded to (the smallest
            bucket that holds it, as the verdict reads it): its row is marked
            ``◀ now`` (``◀ now 24`` where the batch is not the bucket's
            size), in its own colour.
advised     the bucket a verdict's advice names (``advice["batch_size"]``):
            marked ``◀ advised``, in green.
rows        at most ``rows`` buckets are shown: consecutive ones from the
            "now" bucket upwards (the larger batches a raise would reach),
            reaching down to smaller ones where fewer lie above; the header
            says how many are left out.
``curve_lines(rates, batch_size, width, ...)`` gives the panel as rich
``Text`` lines (none when there are no rates: the random network measures
nothing).
"""
from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text

EIGHTHS = " ▏▎▍▌▋▊▉"  # partial cells: a narrow bar still tells 8 rates apart per cell
NOW_STYLE = "bold magenta"
ADVISED_STYLE = "bold green"
BAR_STYLE = "cyan"
TITLE = "device evals/s per batch"


def bucket_of(rates: Mapping[int, float], batch_size: int) -> int | None:
    """The bucket of ``rates`` a batch of ``batch_size`` is padded to (the
    smallest that holds it); None above the largest."""
    return next((b for b in sorted(rates) if b >= batch_size), None)


def fine_bar(frac: float, width: int) -> str:
    """A bar of ``width`` cells filled to ``frac`` in eighths of a cell,
    padded with ``·``."""
    frac = min(max(frac, 0.0), 1.0)
    eighths = int(frac * width * 8 + 0.5)
    full, part = divmod(eighths, 8)
    out = "█" * full + (EIGHTHS[part] if part and full < width else "")
    return out + "·" * (width - len(out))


def short_rate(x: float) -> str:
    """evals/s in at most 5 characters: 950, 9.5k, 95k, 950k, 9.5M."""
    if x >= 1e7:
        return f"{x / 1e6:.0f}M"
    if x >= 1e6:
        return f"{x / 1e6:.1f}M"
    if x >= 1e4:
        return f"{x / 1e3:.0f}k"
    if x >= 1e3:
        return f"{x / 1e3:.1f}k"
    return f"{x:.0f}"


def shown_buckets(buckets: list[int], now: int | None, rows: int) -> list[int]:
    """At most ``rows`` consecutive ``buckets`` (sorted), starting at ``now``
    (or as far below it as the rows above run out)."""
    if len(buckets) <= rows:
        return buckets
    start = buckets.index(now) if now in buckets else len(buckets) - rows
    start = min(start, len(buckets) - rows)
    return buckets[start:start + rows]


def curve_lines(rates: Mapping, batch_size: int, width: int, advised: int | None = None,
                rows: int = 8) -> list[Text]:
    """The curve panel in ``width`` columns: a title and one row per shown
    bucket; [] without a positive rate."""
    curve = {int(b): float(r) for b, r in rates.items() if float(r) > 0}
    if not curve:
        return []
    top = max(curve.values())
    batch_size = max(int(batch_size), 1)
    now = bucket_of(curve, batch_size)
    mark_at = bucket_of(curve, int(advised)) if advised else None
    if mark_at == now:
        mark_at = None
    buckets = sorted(curve)
    shown = shown_buckets(buckets, now, max(rows, 1))
    label_w = max(len(str(b)) for b in shown) + 1
    bar_w = max(min(width - label_w - 18, 20), 4)
    left_out = len(buckets) - len(shown)
    title = Text(TITLE, style="bold")
    if left_out:
        title.append(f" ({left_out} more)", style="dim")
    lines = [title]
    for b in shown:
        style = NOW_STYLE if b == now else ADVISED_STYLE if b == mark_at else ""
        t = Text(f"{b:>{label_w}} ", style=style)
        t.append(fine_bar(curve[b] / top, bar_w), style=style or BAR_STYLE)
        t.append(f" {short_rate(curve[b]):>5}", style=style)
        if b == now:
            t.append(" ◀ now" + (f" {batch_size}" if batch_size != b else ""), style=NOW_STYLE)
        elif b == mark_at:
            t.append(" ◀ advised", style=ADVISED_STYLE)
        lines.append(t)
    return lines
