"""The report of scripts/bench-compare: best-of selection, ratios, verdicts, table, CSV, chart.

    python bench/report.py RUNS.jsonl OUT_DIR [--runs R]

RUNS.jsonl holds one JSON object per client run, as the client printed it plus `label` (the
client, e.g. `rust:host`) and `round`. Per (client, workload) the best run is kept:

- permission, read: the run with the lowest p50_us, and that same run's p99_us;
- flood: the highest updates_per_sec; the lowest peak_rss_kib / idle_rss_kib of all runs;
- spawn: the run with the lowest p50_ms, and that same run's p99_ms (and init_p50_ms, spawn start
  to initialize answered, where the client reports it).

Prints the table (client, workload, metric, value, ratio to its anchor, target, verdict), writes
OUT_DIR/results.csv (one row per client x workload x metric) and OUT_DIR/results.png (when
matplotlib imports; bench/requirements.txt). A missed target is reported, never an error.
"""

from __future__ import annotations

import csv
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

CLIENTS = ["rust:floor", "rust:tokio-floor", "rust:host", "rust:sdk", "node:host", "node:sdk", "python:host", "python:sdk"]
WORKLOADS = ["permission", "read", "flood", "spawn"]
HOSTS = ("rust:host", "node:host", "python:host")
FLOOD_ANCHOR = {"rust": "rust:floor", "node": "node:sdk", "python": "python:sdk"}

# Targets (issue 14). (client, workload, metric) -> (op, bound); ratios are value / anchor.
TARGETS: dict[tuple[str, str, str], tuple[str, float]] = {}
for _w in ("permission", "read"):
    TARGETS[("rust:host", _w, "p50_us")] = ("<=", 1.5)
    TARGETS[("node:host", _w, "p50_us")] = ("<=", 2.0)
    TARGETS[("python:host", _w, "p50_us")] = ("<=", 2.0)
    for _c in HOSTS:
        TARGETS[(_c, _w, "p99_us")] = ("<=", 3.0)
TARGETS[("rust:host", "flood", "updates_per_sec")] = (">=", 0.8)
TARGETS[("node:host", "flood", "updates_per_sec")] = (">=", 10.0)
TARGETS[("python:host", "flood", "updates_per_sec")] = (">=", 30.0)
for _c in HOSTS:
    TARGETS[(_c, "flood", "peak_rss_kib")] = ("<=", 1.5)
    TARGETS[(_c, "spawn", "p50_ms")] = ("<=", 1.2)

UNITS = {
    "p50_us": "us",
    "p99_us": "us",
    "updates_per_sec": "updates/s",
    "peak_rss_kib": "KiB",
    "idle_rss_kib": "KiB",
    "p50_ms": "ms",
    "p99_ms": "ms",
    "mean_ms": "ms",
    "init_p50_ms": "ms",
}


@dataclass
class Row:
    client: str
    workload: str
    metric: str
    value: float
    anchor: str = ""
    ratio: float | None = None
    target: str = ""
    verdict: str = ""
    note: str = ""
    extra: dict = field(default_factory=dict)


def load(path: Path) -> dict[tuple[str, str], list[dict]]:
    runs: dict[tuple[str, str], list[dict]] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            runs.setdefault((r["label"], r["workload"]), []).append(r)
    return runs


def best(runs: dict[tuple[str, str], list[dict]]) -> dict[tuple[str, str], dict]:
    out: dict[tuple[str, str], dict] = {}
    for (client, workload), rs in runs.items():
        if workload in ("permission", "read"):
            b = dict(min(rs, key=lambda r: r["p50_us"]))
        elif workload == "spawn":
            b = dict(min(rs, key=lambda r: r["p50_ms"]))
        else:
            b = dict(max(rs, key=lambda r: r["updates_per_sec"]))
            lean = min(rs, key=lambda r: r["peak_rss_kib"] / max(r["idle_rss_kib"], 1))
            b["peak_rss_kib"], b["idle_rss_kib"] = lean["peak_rss_kib"], lean["idle_rss_kib"]
        b["runs"] = len(rs)
        out[(client, workload)] = b
    return out


def verdict(ratio: float | None, target: tuple[str, float] | None) -> str:
    if target is None:
        return ""
    if ratio is None:
        return "n/a"
    op, bound = target
    ok = ratio <= bound if op == "<=" else ratio >= bound
    return "met" if ok else "MISSED"


def target_text(target: tuple[str, float] | None) -> str:
    if target is None:
        return ""
    op, bound = target
    return f"{'≤' if op == '<=' else '≥'}{bound:g}x"


def rows(b: dict[tuple[str, str], dict]) -> list[Row]:
    out: list[Row] = []

    def add(client: str, workload: str, metric: str, anchor: str, anchor_value: float | None, note=""):
        r = b[(client, workload)]
        value = float(r[metric])
        ratio = value / anchor_value if anchor_value else None
        t = TARGETS.get((client, workload, metric))
        out.append(Row(client, workload, metric, value, anchor, ratio, target_text(t), verdict(ratio, t), note,
                       {"runs": r["runs"], "variant": r.get("variant", "")}))

    for workload in WORKLOADS:
        for client in CLIENTS:
            if (client, workload) not in b:
                continue
            floor = b.get(("rust:floor", workload))
            if workload in ("permission", "read"):
                for m in ("p50_us", "p99_us"):
                    add(client, workload, m, "rust:floor", floor and floor[m])
            elif workload == "spawn":
                for m in ("p50_ms", "p99_ms", "init_p50_ms"):
                    if m in b[(client, workload)]:
                        add(client, workload, m, "rust:floor", floor and floor.get(m))
            else:
                anchor = FLOOD_ANCHOR[client.split(":")[0]]
                a = b.get((anchor, workload))
                add(client, workload, "updates_per_sec", anchor, a and a["updates_per_sec"])
                idle = b[(client, workload)]["idle_rss_kib"]
                add(client, workload, "peak_rss_kib", "own idle RSS", idle,
                    note=f"idle {idle / 1024:.1f} MiB")
    return out


def fmt_value(r: Row) -> str:
    if r.metric == "updates_per_sec":
        return f"{r.value:,.0f} /s"
    if r.metric.endswith("_kib"):
        return f"{r.value / 1024:.1f} MiB"
    if r.metric.endswith("_us"):
        return f"{r.value:.1f} us"
    return f"{r.value:.2f} ms"


def print_table(rs: list[Row], missing: list[str]) -> None:
    head = ("client", "workload", "metric", "value", "ratio", "vs", "target", "verdict")
    lines = []
    for r in rs:
        ratio = "" if r.ratio is None else f"{r.ratio:.2f}x"
        vs = r.anchor if r.client != r.anchor else "(anchor)"
        variant = f" ({r.extra['variant']})" if r.extra.get("variant") else ""
        lines.append((r.client + variant, r.workload, r.metric, fmt_value(r), ratio, vs, r.target, r.verdict))
    widths = [max(len(x[i]) for x in [head, *lines]) for i in range(len(head))]
    right = {3, 4}
    def show(cols):
        print("  " + "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cols, widths))).rstrip())
    show(head)
    prev = None
    for cols in lines:
        if prev is not None and cols[1] != prev:
            print()
        prev = cols[1]
        show(cols)
    judged = [r for r in rs if r.verdict]
    met = sum(r.verdict == "met" for r in judged)
    missed = [r for r in judged if r.verdict == "MISSED"]
    print()
    print(f"targets: {met} met, {len(missed)} missed" + (f"; not run: {'; '.join(missing)}" if missing else ""))
    for r in missed:
        print(f"  missed: {r.client} {r.workload} {r.metric} {r.ratio:.2f}x (target {r.target} {r.anchor})")


def write_csv(rs: list[Row], path: Path) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["client", "workload", "metric", "value", "unit", "anchor", "ratio", "target", "verdict",
                    "runs", "variant", "note"])
        for r in rs:
            w.writerow([r.client, r.workload, r.metric, f"{r.value:.6g}", UNITS.get(r.metric, ""),
                        r.anchor, "" if r.ratio is None else f"{r.ratio:.4f}", r.target,
                        {"met": "met", "MISSED": "missed"}.get(r.verdict, r.verdict), r.extra["runs"],
                        r.extra["variant"], r.note])


def chart(b: dict[tuple[str, str], dict], rs: list[Row], path: Path, title: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib import ticker
        from matplotlib.patches import Patch
    except ImportError as e:
        print(f"report: no chart ({e}); scripts/bench-compare installs bench/requirements.txt", file=sys.stderr)
        return False

    color = {"floor": "#7f7f7f", "tokio-floor": "#bcbcbc", "host": "#1f77b4", "sdk": "#ff7f0e"}
    fig, axes = plt.subplots(2, 3, figsize=(17, 10))
    fig.suptitle(title, fontsize=13)

    def clients_of(workload):
        return [c for c in CLIENTS if (c, workload) in b]

    def lab(c):
        return c.replace(":", "\n")

    def num(v):
        return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"

    def plain_ticks(ax):
        if ax.get_yscale() == "log":
            ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: num(v)))
            ax.yaxis.set_minor_formatter(ticker.FuncFormatter(lambda v, _: num(v) if str(v)[0] in "25" else ""))
            ax.tick_params(axis="y", which="minor", labelsize=7)

    def grouped(ax, workload, m50, m99, unit, name):
        cs = clients_of(workload)
        if not cs:
            ax.set_axis_off()
            ax.set_title(f"{name}: not run")
            return
        x = range(len(cs))
        w = 0.38
        v50 = [b[(c, workload)][m50] for c in cs]
        v99 = [b[(c, workload)][m99] for c in cs]
        colors = [color[c.split(":")[1]] for c in cs]
        bars50 = ax.bar([i - w / 2 for i in x], v50, w, color=colors)
        bars99 = ax.bar([i + w / 2 for i in x], v99, w, color=colors, alpha=0.45, hatch="//")
        for bars in (bars50, bars99):
            for bar in bars:
                h = bar.get_height()
                ax.annotate(num(h), (bar.get_x() + bar.get_width() / 2, h), ha="center", va="bottom",
                            fontsize=7, xytext=(0, 1), textcoords="offset points")
        handles = [Patch(facecolor="#bbbbbb", label="p50"), Patch(facecolor="#dddddd", hatch="//", label="p99")]
        floor = b.get(("rust:floor", workload))
        if floor:
            handles.append(ax.axhline(floor[m50], color="black", ls="--", lw=0.8,
                                      label=f"floor p50 {num(floor[m50])} {unit}"))
            handles.append(ax.axhline(floor[m99], color="black", ls=":", lw=0.8,
                                      label=f"floor p99 {num(floor[m99])} {unit}"))
        spread = max(v50 + v99) / max(min(v50 + v99), 1e-9)
        if spread > 8:
            ax.set_yscale("log")
            ax.set_ylabel(f"{unit} (log scale)")
        else:
            ax.set_ylim(0, max(v50 + v99) * 1.2)
            ax.set_ylabel(unit)
        plain_ticks(ax)
        ax.set_xticks(list(x), [lab(c) for c in cs], fontsize=8)
        ax.set_title(name)
        ax.legend(handles=handles, fontsize=7, loc="upper left")
        ax.margins(y=0.15)

    n = lambda w: next((r["n"] for (c, ww), r in b.items() if ww == w and "n" in r), "?")  # noqa: E731
    grouped(axes[0][0], "permission", "p50_us", "p99_us", "us",
            f"permission round trip, agent-side ({n('permission')} in one turn)")
    grouped(axes[0][1], "read", "p50_us", "p99_us", "us",
            f"fs/read_text_file round trip, agent-side ({n('read')} in one turn)")
    grouped(axes[0][2], "spawn", "p50_ms", "p99_ms", "ms", "spawn → initialize → session/new answered")

    ax = axes[1][0]
    cs = clients_of("flood")
    if cs:
        vals = [b[(c, "flood")]["updates_per_sec"] for c in cs]
        bars = ax.bar(range(len(cs)), vals, color=[color[c.split(":")[1]] for c in cs])
        for bar, v in zip(bars, vals):
            ax.annotate(f"{v / 1000:,.0f}k", (bar.get_x() + bar.get_width() / 2, v), ha="center", va="bottom",
                        fontsize=8, xytext=(0, 1), textcoords="offset points")
        ax.set_yscale("log")
        ax.set_xticks(range(len(cs)), [lab(c) for c in cs], fontsize=8)
        ax.set_ylabel("updates/s (log scale)")
        plain_ticks(ax)
        flood_n = b[(cs[0], "flood")].get("updates", "?")
        ax.set_title(f"flood: {flood_n:,} session/update lines, updates/s (higher is better)")
        ax.margins(y=0.15)
    else:
        ax.set_axis_off()

    ax = axes[1][1]
    if cs:
        ratios = [b[(c, "flood")]["peak_rss_kib"] / max(b[(c, "flood")]["idle_rss_kib"], 1) for c in cs]
        bars = ax.bar(range(len(cs)), ratios, color=[color[c.split(":")[1]] for c in cs])
        for bar, c in zip(bars, cs):
            r = b[(c, "flood")]
            ax.annotate(f"{r['peak_rss_kib'] / 1024:.1f}/{r['idle_rss_kib'] / 1024:.1f} MiB",
                        (bar.get_x() + bar.get_width() / 2, max(bar.get_height(), 1.5)), ha="center",
                        va="bottom", fontsize=7, xytext=(0, 2), textcoords="offset points")
        ax.axhline(1.5, color="red", ls="--", lw=0.8, label="target for the faces: ≤ 1.5x")
        ax.set_xticks(range(len(cs)), [lab(c) for c in cs], fontsize=8)
        ax.set_ylabel("peak RSS / idle RSS")
        ax.set_title("flood: peak RSS over the process's idle RSS (peak/idle MiB)")
        ax.legend(fontsize=7, loc="upper left")
        ax.margins(y=0.15)
    else:
        ax.set_axis_off()

    ax = axes[1][2]
    ax.set_axis_off()
    ax.set_title("targets (ratio = value / anchor)")
    judged = [r for r in rs if r.verdict]
    y = 0.97
    for r in judged:
        ok = r.verdict == "met"
        ratio = "n/a" if r.ratio is None else f"{r.ratio:.2f}x"
        ax.text(0.0, y, f"{r.client:<12} {r.workload:<10} {r.metric:<15} {ratio:>8}  {r.target:<6} {r.verdict}",
                family="monospace", fontsize=7.5, color="#2ca02c" if ok else "#d62728", transform=ax.transAxes,
                va="top")
        y -= 0.95 / max(len(judged), 24)
    ax.legend(handles=[Patch(facecolor=color["floor"], label="floor (bare line loop, the anchor)"),
                       Patch(facecolor=color["tokio-floor"], label="the floor on tokio (the runtime's share; no target)"),
                       Patch(facecolor=color["host"], label="acp-host (Rust core / Node / Python face)"),
                       Patch(facecolor=color["sdk"], label="official ACP SDK of that language")],
              loc="lower left", fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main() -> int:
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    runs_path, out = Path(args[0]), Path(args[1])
    title = args[2] if len(args) > 2 else "acp-host side-by-side benchmark"
    b = best(load(runs_path))
    rs = rows(b)
    absent: dict[str, set[str]] = {}
    for c, w, _m in TARGETS:
        if (c, w) not in b:
            absent.setdefault(c, set()).add(w)
    missing = [f"{c} ({', '.join(w for w in WORKLOADS if w in ws)})" for c, ws in sorted(absent.items())]
    print_table(rs, missing)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(rs, out / "results.csv")
    print(f"\nCSV: {out / 'results.csv'}")
    if chart(b, rs, out / "results.png", title):
        print(f"chart: {out / 'results.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
