"""Inline SVG charts for the report, written by hand: grouped horizontal bars (one group per model, one bar
per variant) with a value axis, value labels, failed points marked, optional tick markers (lower bounds).
No plotting library, no script: the page stays one self-contained file."""
from __future__ import annotations

import math
from html import escape

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac"]


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Round tick values from 0 covering `top`."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    n = int(math.ceil(top / step - 1e-9))
    return [round(i * step, 10) for i in range(n + 1)]


def _fmt(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:.3g}M"
    if v >= 1e4:
        return f"{v / 1e3:.3g}k"
    return f"{v:.4g}"


def grouped_bars(title: str, unit: str, categories: list[str], series: list[str],
                 values: dict[tuple[str, str], float], failed: dict[tuple[str, str], str] | None = None,
                 markers: dict[tuple[str, str], float] | None = None, marker_label: str = "") -> str:
    failed = failed or {}
    markers = markers or {}
    bar_h, gap, plot_w, right = 14, 10, 520, 90
    label_w = min(520, max(120, 16 + int(7.2 * max((len(c) for c in categories), default=10))))
    top_pad, legend_h = 34, 18 * ((len(series) + 2) // 3) + (18 if markers else 0)
    group_h = bar_h * len(series) + gap
    height = top_pad + group_h * len(categories) + 28 + legend_h
    width = label_w + plot_w + right
    vmax = max([v for v in values.values() if v is not None] + [v for v in markers.values() if v is not None] + [0])
    ticks = nice_ticks(vmax)
    scale = plot_w / ticks[-1] if ticks[-1] else 1.0
    axis_y = top_pad + group_h * len(categories)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
           f'<text x="4" y="16" class="chart-title">{escape(title)} ({escape(unit)})</text>']
    for t in ticks:
        x = label_w + t * scale
        out.append(f'<line x1="{x:.1f}" y1="{top_pad - 6}" x2="{x:.1f}" y2="{axis_y}" class="grid"/>')
        out.append(f'<text x="{x:.1f}" y="{axis_y + 14}" class="tick" text-anchor="middle">{_fmt(t)}</text>')
    for ci, cat in enumerate(categories):
        y0 = top_pad + ci * group_h
        out.append(f'<text x="{label_w - 6}" y="{y0 + bar_h * len(series) / 2 + 4:.1f}" class="cat" '
                   f'text-anchor="end">{escape(cat)}</text>')
        for si, name in enumerate(series):
            y = y0 + si * bar_h
            key = (cat, name)
            v = values.get(key)
            color = PALETTE[si % len(PALETTE)]
            if v is not None:
                w = max(v * scale, 1.0)
                out.append(f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h - 2}" fill="{color}" '
                           f'class="bar"><title>{escape(cat)} · {escape(name)}: {v:g} {escape(unit)}</title></rect>')
                out.append(f'<text x="{label_w + w + 4:.1f}" y="{y + bar_h - 4}" class="val">{_fmt(v)}</text>')
            elif key in failed:
                out.append(f'<text x="{label_w + 4}" y="{y + bar_h - 4}" class="fail">{escape(failed[key])}</text>')
            m = markers.get(key)
            if m is not None:
                x = label_w + m * scale
                out.append(f'<line x1="{x:.1f}" y1="{y - 1}" x2="{x:.1f}" y2="{y + bar_h - 1}" class="marker">'
                           f'<title>{escape(marker_label)}: {m:g} {escape(unit)}</title></line>')
    out.append(f'<line x1="{label_w}" y1="{top_pad - 6}" x2="{label_w}" y2="{axis_y}" class="axis"/>')
    ly = axis_y + 34
    for si, name in enumerate(series):
        x = 8 + (si % 3) * 260
        y = ly + (si // 3) * 18
        out.append(f'<rect x="{x}" y="{y - 10}" width="12" height="12" fill="{PALETTE[si % len(PALETTE)]}"/>'
                   f'<text x="{x + 17}" y="{y}" class="legend">{escape(name)}</text>')
    if markers:
        y = ly + ((len(series) + 2) // 3) * 18
        out.append(f'<line x1="14" y1="{y - 11}" x2="14" y2="{y + 1}" class="marker"/>'
                   f'<text x="25" y="{y}" class="legend">{escape(marker_label)}</text>')
    out.append("</svg>")
    return "\n".join(out)
