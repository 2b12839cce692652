#!/usr/bin/env python3
"""Runs scripts/plot_report.py in this process and inspects the matplotlib figures it draws, not
just the PNG files: legend entries with their colour and line style, bar heights. Every figure is
captured as plot_report saves it (its save() is wrapped), then each check below is applied.

Usage:
  check_plot_figures.py PLOT_SCRIPT legend  OUT CCL.csv --entries N
      the collectives chart: N legend entries, one per (op, placement) of the report, every one
      with a colour of its own, out-of-place lines solid and in-place lines dashed
  check_plot_figures.py PLOT_SCRIPT scaling OUT REPORT.csv... --chart NAME:LINES... [--plan-bar UNIT:PART:MB]...
      run_script.sh output (and a bench_fsdp plan): exactly the charts named, the collectives ones
      with LINES legend entries each, no per-report collectives chart, and the plan's bar heights
  check_plot_figures.py PLOT_SCRIPT looks OUT DATA_DIR
      what readers took wrong (issue 44): a memops bar's text is its CSV's share of the roof; one
      colour per step part across both step charts, no zero part, the legend beside the bars; a
      CPU roofline's own roofs, point labels and plain ticks; attention's axis from 0
  check_plot_figures.py PLOT_SCRIPT fail-fast OUT GOOD.csv BAD.csv
      a bad input after a good one: exit 2 naming BAD.csv, and nothing drawn into OUT
  check_plot_figures.py PLOT_SCRIPT series OUT REPORT.csv --chart NAME --line "LABEL:POINTS"...
      exactly these lines on chart NAME, each with its legend LABEL (after its panel's title, on a
      chart of several panels: the collectives' operation) and POINTS points: no two shapes, roots
      or reductions merged into one line
  check_plot_figures.py PLOT_SCRIPT markers OUT GEMM.csv --series "LABEL:MARKER"...
      the GEMM roofline: exactly these point series, each in the legend under LABEL and drawn
      (and shown in the legend) with MARKER (matplotlib's code: o dot, D diamond, ^ triangle,
      s square, ...); series of one pass and dtype share a colour, other passes and dtypes differ
  check_plot_figures.py PLOT_SCRIPT stacks OUT REPORT.csv --chart NAME --stack "UNIT:PART:VALUE"... [--stderr TEXT]...
      a stacked bar chart (bench_step): exactly these non-zero segments, a bar by its label (lines
      joined by " | ") and a part by its legend entry, each VALUE high; plot_report's stderr is one
      line per --stderr, holding its TEXT
  check_plot_figures.py PLOT_SCRIPT bars OUT REPORT.csv --chart NAME --bar "LABEL:VALUE"... --peak VALUE:SOURCE|none [--peak-bw B]
      a horizontal bar chart (bench_memops): exactly these bars, VALUE long, and the peak line at
      VALUE whose legend names SOURCE (or no peak line); --peak-bw B is passed to plot_report
"""
import argparse
import contextlib
import importlib.util
import io
import os
import shutil
import subprocess
import sys

import numpy as np
from matplotlib.colors import to_hex
from matplotlib.markers import MarkerStyle

from report_check import verdict


def load(script):
    spec = importlib.util.spec_from_file_location("plot_report", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_plots(script, out, reports, extra=()):
    """Runs plot_report's main() on the reports (and its flags `extra`); returns (exit code, stderr,
    {png name: Figure})."""
    module = load(script)
    figures = {}
    save = module.save

    def capture(fig, path):
        result = save(fig, path)  # draws the figure (tick labels exist after that), then closes it
        figures[os.path.basename(path)] = fig
        return result

    module.save = capture
    shutil.rmtree(out, ignore_errors=True)
    sys.argv = [script, *reports, "--out", out, *extra]
    stderr = io.StringIO()
    code = 0
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = module.main()
        except SystemExit as e:
            code = e.code
    return code, stderr.getvalue(), figures


def legend_entries(fig):
    """[(label, colour as #rrggbb, line style, panel)] of every panel's legend (the collectives
    chart has a panel per operation; the others one)."""
    entries = []
    for panel, ax in enumerate(a for a in fig.axes if a.get_visible()):
        legend = ax.get_legend()
        if legend is None:
            continue
        handles = getattr(legend, "legend_handles", None) or legend.legendHandles  # renamed in matplotlib 3.7
        entries += [(text.get_text(), to_hex(h.get_color()), h.get_linestyle(), panel)
                    for text, h in zip(legend.get_texts(), handles)]
    return entries


def line_problems(name, entries, count):
    problems = []
    if len(entries) != count:
        problems.append(f"{name}: {len(entries)} legend entries, expected {count}: {[e[0] for e in entries]}")
    for panel in {p for *_, p in entries}:  # every line of a panel in a colour of its own
        colours = [colour for _, colour, _, p in entries if p == panel]
        if len(set(colours)) != len(colours):
            problems.append(f"{name}: legend entries of panel {panel} share colours: {entries}")
    for label, colour, style, _ in entries:
        want = "--" if label.endswith(" in_place") else "-" if label.endswith(" out_of_place") else None
        if want is None:
            problems.append(f"{name}: legend entry {label!r} does not name its placement")
        elif style != want:
            problems.append(f"{name}: {label!r} drawn {style!r}, expected {want!r}")
    return problems


def check_legend(args):
    code, stderr, figures = run_plots(args.script, args.out, [args.report])
    if code != 0:
        return [f"plot_report exit {code}: {stderr}"]
    name = os.path.splitext(os.path.basename(args.report))[0] + "_ccl.png"
    if name not in figures:
        return [f"no {name} among {sorted(figures)}"]
    entries = legend_entries(figures[name])
    for label, colour, style, panel in entries:
        print(f"{panel} {label:40} {colour} {style}")
    return line_problems(name, entries, args.entries)


def check_scaling(args):
    code, stderr, figures = run_plots(args.script, args.out, args.reports)
    if code != 0:
        return [f"plot_report exit {code}: {stderr}"]
    expected = dict(spec.rsplit(":", 1) for spec in args.chart)
    problems = []
    if set(figures) != set(expected):
        problems.append(f"charts {sorted(figures)}, expected {sorted(expected)}")
    for name, lines in expected.items():
        if name.endswith("_ccl.png") and name in figures:
            entries = legend_entries(figures[name])
            print(name, [label for label, *_ in entries])
            problems += line_problems(name, entries, int(lines))
    for spec in args.plan_bar:
        unit, part, megabytes = spec.split(":")
        plan = next((f for n, f in figures.items() if n.endswith("_fsdp_plan.png")), None)
        if plan is None:
            problems.append("no plan chart (*_fsdp_plan.png)")
            break
        segments = stacked_segments(plan.axes[0])
        if (unit, part) not in segments:
            problems.append(f"plan chart: no bar {unit}/{part} (segments {sorted(segments)})")
            continue
        height = segments[(unit, part)]
        print(f"plan: {unit} {part}: {height:.6f} MB")
        if abs(height - float(megabytes)) > 1e-6:
            problems.append(f"plan chart: {unit} {part} is {height} MB, expected {megabytes}")
    return problems


def stacked_segments(ax):
    """{(bar, part): height} of a stacked bar chart (plot_report's stacked_bars): a bar by its tick
    label, its lines joined by " | "; a part by its legend label."""
    units = [t.get_text().replace("\n", " | ") for t in ax.get_xticklabels()]
    return {(unit, c.get_label()): patch.get_height() for c in ax.containers for unit, patch in zip(units, c.patches)}


def check_stacks(args):
    """Exactly the segments named (UNIT:PART:VALUE) are drawn, at their heights; every other
    segment is 0."""
    code, stderr, figures = run_plots(args.script, args.out, [args.report])
    if code != 0:
        return [f"plot_report exit {code}: {stderr}"]
    if args.chart not in figures:
        return [f"no {args.chart} among {sorted(figures)}"]
    drawn = {key: height for key, height in stacked_segments(figures[args.chart].axes[0]).items() if height}
    for (unit, part), height in sorted(drawn.items()):
        print(f"{unit} : {part} : {height:.6g}")
    expected = {(unit, part): float(value) for unit, part, value in (spec.rsplit(":", 2) for spec in args.stack)}
    problems = [f"{args.chart}: {unit} / {part} is {drawn.get((unit, part))}, expected {value}"
                for (unit, part), value in sorted(expected.items()) if abs(drawn.get((unit, part), 0) - value) > 1e-9]
    problems += [f"{args.chart}: unexpected segment {unit} / {part} = {height}"
                 for (unit, part), height in sorted(drawn.items()) if (unit, part) not in expected]
    lines = [line for line in stderr.splitlines() if line.strip()]
    if len(lines) != len(args.stderr) or any(text not in line for text, line in zip(args.stderr, lines)):
        problems.append(f"stderr {lines}, expected {len(args.stderr)} lines holding {args.stderr}")
    return problems


def check_bars(args):
    """A horizontal bar chart (bench_memops): exactly the bars named (LABEL:VALUE), by their tick
    labels, and the peak line at VALUE with its source in the legend, or no peak line."""
    extra = ["--peak-bw", args.peak_bw] if args.peak_bw else []
    code, stderr, figures = run_plots(args.script, args.out, [args.report], extra)
    if code != 0:
        return [f"plot_report exit {code}: {stderr}"]
    if args.chart not in figures:
        return [f"no {args.chart} among {sorted(figures)}"]
    ax = figures[args.chart].axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    bars = {labels[round(p.get_y() + p.get_height() / 2)]: p.get_width() for c in ax.containers for p in c.patches}
    for label, width in bars.items():
        print(f"{label:40} {width:g}")
    expected = {label: float(value) for label, value in (spec.rsplit(":", 1) for spec in args.bar)}
    problems = [] if bars == expected else [f"{args.chart}: bars {bars}, expected {expected}"]
    peaks = [(line.get_xdata()[0], line.get_label()) for line in ax.get_lines() if line.get_label().startswith("peak ")]
    print("peak lines:", peaks)
    if args.peak == "none":
        return problems + ([f"{args.chart}: a peak line {peaks}, expected none"] if peaks else [])
    value, source = args.peak.split(":", 1)
    if len(peaks) != 1 or peaks[0][0] != float(value) or not peaks[0][1].endswith(f"({source})"):
        problems.append(f"{args.chart}: peak lines {peaks}, expected one at {value} GB/s from {source}")
    return problems


MARKERS = ["o", "D", "^", "s", "v", "<", ">", "P", "X", "*", "p", "h", "H", "d", "8", "+", "x", "."]


def marker_of(collection):
    """The marker code a scatter collection was drawn with: scatter keeps the marker's path
    (transformed to unit size), which is compared with each marker's own."""
    paths = collection.get_paths()
    if not paths:
        return None
    vertices = paths[0].vertices
    for code in MARKERS:
        style = MarkerStyle(code)
        candidate = style.get_path().transformed(style.get_transform()).vertices
        if candidate.shape == vertices.shape and np.allclose(candidate, vertices):
            return code
    return "?"


def check_markers(args):
    code, stderr, figures = run_plots(args.script, args.out, [args.report])
    if code != 0:
        return [f"plot_report exit {code}: {stderr}"]
    name = os.path.splitext(os.path.basename(args.report))[0] + "_gemm.png"
    if name not in figures:
        return [f"no {name} among {sorted(figures)}"]
    expected = dict(spec.rsplit(":", 1) for spec in args.series)
    ax = figures[name].axes[0]
    drawn = {c.get_label(): (marker_of(c), to_hex(c.get_facecolor()[0])) for c in ax.collections}
    legend = ax.get_legend()
    handles = getattr(legend, "legend_handles", None) or legend.legendHandles  # renamed in matplotlib 3.7
    shown = {t.get_text(): h for t, h in zip(legend.get_texts(), handles)}
    problems = []
    if set(drawn) != set(expected):
        problems.append(f"series {sorted(drawn)}, expected {sorted(expected)}")
    for label, marker in sorted(expected.items()):
        if label not in drawn:
            continue
        got, colour = drawn[label]
        print(f"{label:32} {got} {colour}")
        if got != marker:
            problems.append(f"{label!r} drawn with marker {got!r}, expected {marker!r}")
        if label not in shown:
            problems.append(f"{label!r} is not in the legend ({sorted(shown)})")
        elif marker_of(shown[label]) != marker:
            problems.append(f"{label!r} shown in the legend with marker {marker_of(shown[label])!r}, expected {marker!r}")
    # The first two words of a label are the pass and the dtype: one colour each.
    colours = {}
    for label, (_, colour) in drawn.items():
        colours.setdefault(" ".join(label.split()[:2]), set()).add(colour)
    for key, cs in sorted(colours.items()):
        if len(cs) != 1:
            problems.append(f"the series of {key!r} have {len(cs)} colours: {sorted(cs)}")
    firsts = [min(cs) for cs in colours.values()]
    if len(set(firsts)) != len(firsts):
        problems.append(f"different passes or dtypes share a colour: {colours}")
    return problems


def check_series(args):
    code, stderr, figures = run_plots(args.script, args.out, [args.report])
    if code != 0:
        return [f"plot_report exit {code}: {stderr}"]
    if args.chart not in figures:
        return [f"no {args.chart} among {sorted(figures)}"]
    # a panel's title (the collectives chart's operation) leads its lines' labels
    panels = [ax for ax in figures[args.chart].axes if ax.get_visible()]
    drawn = {(f"{ax.get_title()} " if len(panels) > 1 else "") + line.get_label(): len(line.get_xdata())
             for ax in panels for line in ax.get_lines() if not line.get_label().startswith("_")}
    for label, points in sorted(drawn.items()):
        print(f"{label:50} {points} points")
    expected = {label: int(points) for label, points in (spec.rsplit(":", 1) for spec in args.line)}
    return [] if drawn == expected else [f"{args.chart}: lines {drawn}, expected {expected}"]


def check_looks(args):
    """What a reader took wrong in the charts (issue 44 item 3), on the fixtures of DATA:
    a bench_memops bar shows the report's own share of the roof (the capped 100%, not 125%); the
    step's two stacked charts give a part one colour in both, list no part that is zero, and keep
    the legend beside the bars; a CPU GEMM roofline without peaks has the run's own roofs (the best
    measured TFLOPS, the roof of the bench_memops report drawn with it), a label on every point and
    plain tick labels; the attention chart's throughput axis starts at 0."""
    data = args.data
    reports = [os.path.join(data, n) for n in ("plot_memops_sweep.csv", "step_small.csv",
                                              "plot_step_operators.csv", "gemm_moe_experts.csv",
                                              "plot_attention_shapes.csv")]
    code, stderr, figures = run_plots(args.script, args.out, reports)
    if code != 0:
        return [f"plot_report exit {code}: {stderr}"]
    problems = []
    # a chart that was not drawn is a problem, never a check skipped
    for name in ("plot_memops_sweep_memops.png", "gemm_moe_experts_gemm.png",
                 "plot_attention_shapes_attention.png"):
        if name not in figures:
            problems.append(f"no {name} among {sorted(figures)}")
    memops = figures.get("plot_memops_sweep_memops.png")
    texts = [t.get_text().strip() for t in memops.axes[0].texts] if memops else []
    print("memops bar texts:", texts)
    if "50 (100%)" not in texts or any("125%" in t for t in texts):
        problems.append(f"memops: the capped row's text is not '50 (100%)', as its CSV says: {texts}")
    colours = {}
    for name in ("step_small_step.png", "plot_step_operators_step_operators.png"):
        fig = figures.get(name)
        if fig is None:
            problems.append(f"no {name} among {sorted(figures)}")
            continue
        ax = fig.axes[0]
        legend = ax.get_legend()
        labels = [t.get_text() for t in legend.get_texts()]
        for c in ax.containers:
            colours.setdefault(c.get_label(), set()).add(to_hex(c.patches[0].get_facecolor()))
            if not any(p.get_height() for p in c.patches):
                problems.append(f"{name}: part {c.get_label()} is zero in every bar but drawn")
        fig.canvas.draw()
        box, frame = legend.get_window_extent(), ax.get_window_extent()
        if box.x0 < frame.x1:
            problems.append(f"{name}: the legend overlaps the bars (x0 {box.x0:.0f} < {frame.x1:.0f})")
        print(name, "parts:", labels)
    print("colours by part:", {k: sorted(v) for k, v in colours.items()})
    problems += [f"part {part} has colours {sorted(c)} across the charts" for part, c in colours.items() if len(c) > 1]
    if colours.get("optimizer") and colours.get("exposed communication") and \
            colours["optimizer"] & colours["exposed communication"]:
        problems.append("the optimizer shares the communication colour")
    gemm = figures.get("gemm_moe_experts_gemm.png")
    if gemm:
        ax = gemm.axes[0]
        lines = [line.get_label() for line in ax.get_lines()]
        print("roofline lines:", lines)
        if not any(label.startswith("best measured") for label in lines):
            problems.append(f"roofline: no compute roof without a peak: {lines}")
        if not any("bench_memops' roof" in label for label in lines):
            problems.append(f"roofline: no memory roof from the bench_memops report: {lines}")
        points = sum(len(c.get_offsets()) for c in ax.collections)
        if len(ax.texts) != points:
            problems.append(f"roofline: {len(ax.texts)} point labels for {points} points")
        ticks = [t.get_text() for t in ax.get_yticklabels() + ax.get_xticklabels()]
        if any("times" in t or "^" in t for t in ticks):
            problems.append(f"roofline: tick labels in powers of ten: {ticks}")
    attention = figures.get("plot_attention_shapes_attention.png")
    if attention and attention.axes[0].get_ylim()[0] != 0:
        problems.append(f"attention: the throughput axis starts at {attention.axes[0].get_ylim()[0]}")
    return problems


def check_fail_fast(args):
    shutil.rmtree(args.out, ignore_errors=True)
    proc = subprocess.run([sys.executable, args.script, args.good, args.bad, "--out", args.out],
                          capture_output=True, text=True, timeout=120)
    problems = []
    if proc.returncode != 2:
        problems.append(f"exit {proc.returncode}, expected 2")
    if f"error: {args.bad}: not an opbench report" not in proc.stderr:
        problems.append(f"stderr does not name {args.bad}: {proc.stderr!r}")
    drawn = [f for f in os.listdir(args.out) if not f.startswith(".")] if os.path.isdir(args.out) else []
    if drawn or proc.stdout.strip():
        problems.append(f"drew {drawn or proc.stdout.split()} before refusing the bad input")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("script")
    sub = parser.add_subparsers(dest="check", required=True)
    legend = sub.add_parser("legend")
    legend.add_argument("out")
    legend.add_argument("report")
    legend.add_argument("--entries", type=int, required=True)
    scaling = sub.add_parser("scaling")
    scaling.add_argument("out")
    scaling.add_argument("reports", nargs="+")
    scaling.add_argument("--chart", action="append", required=True, help="NAME:LINES, LINES ignored for non-ccl")
    scaling.add_argument("--plan-bar", action="append", default=[], help="UNIT:PART:MB")
    fail_fast = sub.add_parser("fail-fast")
    fail_fast.add_argument("out")
    fail_fast.add_argument("good")
    fail_fast.add_argument("bad")
    series = sub.add_parser("series")
    series.add_argument("out")
    series.add_argument("report")
    series.add_argument("--chart", required=True)
    series.add_argument("--line", action="append", required=True, help="LABEL:POINTS")
    markers = sub.add_parser("markers")
    markers.add_argument("out")
    markers.add_argument("report")
    markers.add_argument("--series", action="append", required=True, help="LABEL:MARKER")
    stacks = sub.add_parser("stacks")
    stacks.add_argument("out")
    stacks.add_argument("report")
    stacks.add_argument("--chart", required=True)
    stacks.add_argument("--stack", action="append", required=True, help="UNIT:PART:VALUE")
    stacks.add_argument("--stderr", action="append", default=[], help="a line of plot_report's stderr holds TEXT")
    looks = sub.add_parser("looks")
    looks.add_argument("out")
    looks.add_argument("data", help="tests/data")
    bars = sub.add_parser("bars")
    bars.add_argument("out")
    bars.add_argument("report")
    bars.add_argument("--chart", required=True)
    bars.add_argument("--bar", action="append", required=True, help="LABEL:VALUE")
    bars.add_argument("--peak", required=True, help="VALUE:SOURCE, or none")
    bars.add_argument("--peak-bw", help="passed to plot_report")
    args = parser.parse_args()
    problems = {"legend": check_legend, "scaling": check_scaling, "fail-fast": check_fail_fast, "series": check_series,
                "markers": check_markers, "stacks": check_stacks, "bars": check_bars,
                "looks": check_looks}[args.check](args)
    return verdict(problems, None, "ok")


if __name__ == "__main__":
    sys.exit(main())
