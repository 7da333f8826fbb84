"""The pass-rate chart: an inline SVG drawn on the server (no script, no fetched library)."""

from __future__ import annotations

from html import escape
from typing import Any

WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 640, 200, 44, 28, 10


def pass_rate_svg(buckets: list[dict[str, Any]], title: str) -> str:
    """A bar per bucket (`start` label, `pass_rate`, `count`): green up to the pass rate, red
    above it, so a bucket where nothing passed still shows."""
    if not buckets:
        return '<p class="muted">No result yet.</p>'
    plot_w, plot_h = WIDTH - LEFT - 8, HEIGHT - BOTTOM - TOP
    slot = plot_w / len(buckets)
    bar = max(min(slot * 0.8, 48.0), 1.0)
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]
    for pct in (0, 50, 100):
        y = TOP + plot_h * (1 - pct / 100)
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - 8}" y1="{y:.1f}" y2="{y:.1f}" stroke="#d0d7de"/>'
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end" '
            f'fill="#57606a">{pct}%</text>'
        )
    every = max(1, len(buckets) // 8)  # at most ~8 axis labels
    for i, b in enumerate(buckets):
        rate = b.get("pass_rate") or 0.0
        h = plot_h * rate
        x = LEFT + slot * i + (slot - bar) / 2
        label = f"{b['start']}: {rate * 100:.1f}% of {b['count']} passed"
        parts.append(
            f'<g><title>{escape(label)}</title>'
            f'<rect x="{x:.1f}" y="{TOP:.1f}" width="{bar:.1f}" height="{plot_h - h:.1f}" '
            f'fill="#f4c7c3"/>'
            f'<rect x="{x:.1f}" y="{TOP + plot_h - h:.1f}" width="{bar:.1f}" height="{h:.1f}" '
            f'fill="#1a7f37"/></g>'
        )
        if i % every == 0:
            parts.append(
                f'<text x="{x + bar / 2:.1f}" y="{HEIGHT - 10}" font-size="11" '
                f'text-anchor="middle" fill="#57606a">{escape(str(b["start"])[:16])}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)
