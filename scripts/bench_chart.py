#!/usr/bin/env python3
"""Renders bench.json (scripts/bench.py) as an SVG chart of heartbeat lateness and CPU cost
against scale, and a Markdown table (median [min-max] of the runs) next to it as table.md.
Standard library only."""

import json
import os
import sys

W, H, PAD = 860, 360, 60
PANEL_W = (W - 3 * PAD) / 2


def fmt(s, digits=2, scale=1.0):
    if not s:
        return "n/a"
    m, lo, hi = (s[k] * scale for k in ("median", "min", "max"))
    return f"{m:.{digits}f} [{lo:.{digits}f}–{hi:.{digits}f}]"


def panel(x0, title, unit, series, scales, target=None):
    """series: [(label, colour, [spread per scale])]; log y axis."""
    vals = [v for _, _, sp in series for s in sp if s for v in (s["min"], s["max"]) if v > 0]
    if target:
        vals.append(target)
    lo = 10 ** __import__("math").floor(__import__("math").log10(min(vals)))
    hi = 10 ** __import__("math").ceil(__import__("math").log10(max(vals)))
    import math

    def y(v):
        v = max(v, lo)
        return PAD + (H - 2 * PAD) * (1 - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)))

    def x(i):
        return x0 + PANEL_W * (i + 0.5) / len(scales)

    out = [f'<text x="{x0 + PANEL_W / 2}" y="{PAD - 25}" text-anchor="middle" font-weight="bold">{title}</text>',
           f'<rect x="{x0}" y="{PAD}" width="{PANEL_W}" height="{H - 2 * PAD}" fill="none" stroke="#999"/>']
    d = lo
    while d <= hi * 1.0001:
        out.append(f'<line x1="{x0}" x2="{x0 + PANEL_W}" y1="{y(d):.1f}" y2="{y(d):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{x0 - 5}" y="{y(d) + 4:.1f}" text-anchor="end" font-size="11">{d:g}</text>')
        d *= 10
    out.append(f'<text x="{x0 - 45}" y="{H / 2}" transform="rotate(-90 {x0 - 45} {H / 2})" text-anchor="middle" font-size="12">{unit}</text>')
    for i, s in enumerate(scales):
        out.append(f'<text x="{x(i):.1f}" y="{H - PAD + 18}" text-anchor="middle" font-size="12">{s:,}+{s:,}</text>')
    if target:
        out.append(f'<line x1="{x0}" x2="{x0 + PANEL_W}" y1="{y(target):.1f}" y2="{y(target):.1f}" stroke="#c00" stroke-dasharray="6 4"/>')
        out.append(f'<text x="{x0 + PANEL_W - 4}" y="{y(target) - 4:.1f}" text-anchor="end" font-size="11" fill="#c00">target {target:g}</text>')
    for k, (label, colour, sp) in enumerate(series):
        pts = []
        for i, s in enumerate(sp):
            if not s:
                continue
            xi = x(i) + (k - (len(series) - 1) / 2) * 8
            out.append(f'<line x1="{xi:.1f}" x2="{xi:.1f}" y1="{y(s["min"]):.1f}" y2="{y(s["max"]):.1f}" stroke="{colour}" stroke-width="2"/>')
            out.append(f'<circle cx="{xi:.1f}" cy="{y(s["median"]):.1f}" r="4" fill="{colour}"/>')
            pts.append(f"{xi:.1f},{y(s['median']):.1f}")
        out.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="{colour}"/>')
        out.append(f'<circle cx="{x0 + 12}" cy="{PAD + 14 + 16 * k}" r="4" fill="{colour}"/>')
        out.append(f'<text x="{x0 + 20}" y="{PAD + 18 + 16 * k}" font-size="11">{label}</text>')
    return out


def main():
    src, svg_path = sys.argv[1], sys.argv[2]
    doc = json.load(open(src))
    summ = doc["summary"]
    scales = [int(s) for s in summ]
    col = lambda k: [summ[str(s)][k] for s in scales]  # noqa: E731
    body = panel(PAD, "Heartbeat lateness (arrival − scheduled send)", "ms", [
        ("p50", "#1f77b4", col("hb_lateness_p50_ms")),
        ("p99", "#ff7f0e", col("hb_lateness_p99_ms")),
        ("max", "#7f7f7f", col("hb_lateness_max_ms")),
    ], scales, target=5)
    body += panel(2 * PAD + PANEL_W, "CPU per 1,000 flow-heartbeats", "CPU-seconds (user+sys)", [
        ("client", "#2ca02c", col("client_cpu_per_1k_hb")),
        ("probe", "#d62728", col("probe_cpu_per_1k_hb")),
    ], scales, target=0.012)
    note = (f'drainwatch {doc["git_commit"]} · {doc["date"]} · {doc["machine"]["cpus"]} CPUs · '
            f'dot = median, bar = min–max of {len(doc["runs"]) // max(1, len(scales))} runs per scale · '
            'targets: lateness p99 5 ms, client 0.012 (probe 0.015)')
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H + 20}" font-family="sans-serif">',
           '<rect width="100%" height="100%" fill="white"/>', *body,
           f'<text x="{W / 2}" y="{H + 10}" text-anchor="middle" font-size="11" fill="#555">{note}</text>', "</svg>"]
    with open(svg_path, "w") as f:
        f.write("\n".join(svg) + "\n")

    rows = [
        ("establish all flows (s)", "establish_s", 2, 1),
        ("hb lateness p50 (ms)", "hb_lateness_p50_ms", 2, 1),
        ("hb lateness p99 (ms)", "hb_lateness_p99_ms", 2, 1),
        ("hb lateness max (ms)", "hb_lateness_max_ms", 1, 1),
        ("UDP answered within interval (%)", "udp_answered_within_interval", 3, 100),
        ("UDP rtt p99 (ms)", "udp_rtt_p99_ms", 2, 1),
        ("client CPU-s / 1k flow-hb", "client_cpu_per_1k_hb", 4, 1),
        ("probe CPU-s / 1k flow-hb", "probe_cpu_per_1k_hb", 4, 1),
        ("client peak RSS MB / 1k flows", "client_rss_mb_per_1k_flows", 2, 1),
        ("probe peak RSS MB / 1k flows", "probe_rss_mb_per_1k_flows", 2, 1),
    ]
    close_rows = [
        ("single close p50 (ms)", "single_p50_ms", 3),
        ("single close p99 (ms)", "single_p99_ms", 3),
        ("burst p50 (ms)", "burst_p50_ms", 1),
        ("burst p99 (ms)", "burst_p99_ms", 1),
        ("burst absorbed (ms)", "burst_absorbed_ms", 1),
        ("probe's own close spread (ms)", "burst_probe_close_spread_ms", 1),
    ]
    head = "| metric | " + " | ".join(f"{s:,}+{s:,}" for s in scales) + " |"
    lines = [head, "|---|" + "---|" * len(scales)]
    for label, k, dg, sc in rows:
        lines.append(f"| {label} | " + " | ".join(fmt(summ[str(s)][k], dg, sc) for s in scales) + " |")
    for close in ("rst", "fin"):
        for label, k, dg in close_rows:
            lines.append(f"| {close.upper()} {label} | " + " | ".join(fmt(summ[str(s)][close][k], dg) for s in scales) + " |")
    table = os.path.join(os.path.dirname(svg_path), "table.md")
    with open(table, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {svg_path} and {table}")


if __name__ == "__main__":
    main()
