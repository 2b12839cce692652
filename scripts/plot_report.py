#!/usr/bin/python3
"""Plots opbench CSV reports as PNGs, recognising which binary wrote each one from its columns:

  bench_gemm       roofline: TFLOPS against arithmetic intensity (log-log), with the device's peak
                   compute and memory-bandwidth lines (configs/hardware.json, or --peak-tflops/--peak-bw;
                   without either, the best TFLOPS the run measured and the roof of a bench_memops
                   report drawn with it), each point labelled with its GEMM and pass;
                   a colour per pass and dtype, dense GEMMs as dots, MoE expert rows (the impl column)
                   as a marker per implementation: grouped diamonds, loop triangles, padded squares
  bench_ccl        bus bandwidth against message size (log x), a panel per collective and in it one
                   line per dtype (root, reduction) and placement: a colour per series, its
                   out-of-place line solid with dots and its in-place line dashed with hollow
                   squares in a lighter shade. Reports of more than one
                   world size (scripts/run_script.sh's OUT/<op>_np<N>.csv) are overlaid instead:
                   one chart per collective, one line per world size and placement
  bench_attention  TFLOPS against sequence length, one line per head dim and pass
  bench_fsdp       communication time per training step, per unit and collective
  bench_fsdp plan  (--plan-csv-path) message bytes per training step, per unit, collective and phase
  bench_step       step.csv: a bar per configuration, its projected step time stacked by part (GEMM,
                   attention, memory-bound, exposed communication, pipeline bubble, optimizer);
                   step_operators.csv: a bar per configuration, its operators' time per step stacked
                   by family (GEMM, expert GEMMs, attention, memory-bound, communication, data-parallel
                   communication, optimizer); gemm_step.csv and attention_step.csv as bench_gemm's and
                   bench_attention's reports, memops_step.csv as bench_memops's
  bench_memops     a bar per case at its achieved bandwidth (GB/s) against the peak: --peak-bw, else
                   the report's own roof (roof_gbps: the CPU's best loop), else configs/hardware.json
  capture          a libopbench_capture.so table (capture-<host>-rank<r>.csv): the top 15 shapes by
                   total in-job time, a bar each (GEMMs blue, communication orange), with their
                   calls and p99
  capture replay   bench_gemm / bench_attention / bench_ccl --capture-path (or --trace-path)
                   reports (an in_job_us column): per shape, the job's average time beside the
                   time alone, with in_job_ratio

Every input is read and recognised before anything is drawn, so a bad input fails at once.
Prints the path of every PNG it writes. Exits 2 on bad input, or when this Python lacks matplotlib.

Usage: scripts/plot_report.py REPORT.csv... --out DIR
"""
import argparse
import csv
import json
import math
import os
import sys
from collections import defaultdict

# matplotlib is Debian's python3-matplotlib, which a virtual environment's or pyenv's python3 does
# not see: main() says so in one line rather than a traceback (--help works without it).
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError as e:
    plt, MATPLOTLIB_MISSING = None, e

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def require_matplotlib(who: str) -> None:
    """One line and exit 2 where this Python cannot import matplotlib (`who` names the caller)."""
    if plt is None:
        fail(f"{who} needs matplotlib, which {sys.executable} cannot import ({MATPLOTLIB_MISSING}): "
             "run it with /usr/bin/python3 (Debian's python3-matplotlib; scripts/setup.sh installs it)")


def num(text):
    try:
        v = float(text)
        return v if math.isfinite(v) else None
    except (TypeError, ValueError):
        return None


# Which binary wrote a report, from the columns its header must hold: the first entry whose columns
# the header has names it (a report whose run wrote no row is still recognised). Order matters
# where one kind's columns include another's: bench_fsdp's replay rows have every bench_ccl column.
KINDS = (
    ("capture", {"api", "timed_calls", "total_us"}),
    ("capture_replay", {"in_job_us"}),
    ("step", {"step_time_ms"}),
    ("step_operators", {"stage", "family", "operator", "total_ms"}),
    ("fsdp_plan", {"unit", "collective", "per_rank_count", "bytes", "calls_per_step"}),  # nothing measured
    ("fsdp", {"unit", "busbw_gbps"}),
    ("ccl", {"busbw_gbps"}),
    ("attention", {"seqlen_q"}),
    ("gemm", {"arith_intensity"}),
    ("memops", {"op", "rows", "cols", "mem_bw_gbps"}),
)


# The columns a kind's chart reads beyond those that name it, and of them the integers (int() of
# an empty or fractional cell would end the script in a traceback after earlier charts).
COLUMNS = {
    "ccl": ({"op", "dtype", "placement", "status", "world_size", "size_bytes"},
            {"world_size", "size_bytes"}),
    "attention": ({"batch_size", "num_head_q", "num_head_kv", "seqlen_kv", "head_dim_qk",
                   "head_dim_v", "pass", "dtype", "causal", "status", "tflops"},
                  {"batch_size", "num_head_q", "num_head_kv", "seqlen_q", "seqlen_kv",
                   "head_dim_qk", "head_dim_v"}),
}


def check_rows(path, kind, columns, rows):
    """Exits 2 naming the file, row and column where a report cannot be drawn: a column its chart
    reads is missing, a row is short of fields, or an ok row's integer cell is not one."""
    needed, integers = COLUMNS.get(kind, (set(), set()))
    missing = sorted(needed - set(columns))
    if missing:
        fail(f"{path}: a {kind} report without its {missing[0]} column")
    for index, r in enumerate(rows, start=1):
        if None in r or any(v is None for v in r.values()):
            fail(f"{path} row {index}: not as many fields as the header (a truncated report?)")
        if r.get("status") != "ok":
            continue
        for c in sorted(integers):
            try:
                int(r[c])
            except ValueError:
                fail(f"{path} row {index}: {c}: '{r[c]}' is not an integer")


def kind_of(columns) -> str:
    return next((kind for kind, needed in KINDS if needed <= set(columns)), "")


def device_peaks(device: str, dtype: str):
    """(peak TFLOPS for dtype, peak GB/s) of the device from configs/hardware.json, or Nones."""
    path = os.path.join(HERE, "..", "configs", "hardware.json")
    if not os.path.exists(path):
        path = os.path.join(HERE, "..", "share", "opbench", "configs", "hardware.json")
    try:
        table = json.load(open(path))
    except (OSError, ValueError):
        return None, None
    for entry in table:
        if any(m.lower() in device.lower() for m in entry["match"]):
            return entry["peak_tflops"].get(dtype), entry.get("mem_bw_gbps")
    return None, None


# Marker of the MoE expert rows of each implementation (the `impl` column); dense rows are dots.
IMPL_MARKERS = {"grouped": "D", "loop": "^", "padded": "s"}
OTHER_IMPL_MARKERS = ["v", "P", "X", "*", "p", "h"]  # an implementation this script does not know yet


def impl_markers(impls):
    """{impl: marker}: the known implementations' own, then one of the spare markers each."""
    spare = iter(OTHER_IMPL_MARKERS * (len(impls) // len(OTHER_IMPL_MARKERS) + 1))
    return {impl: IMPL_MARKERS.get(impl) or next(spare) for impl in sorted(impls)}


def plot_gemm(rows, title, out, args):
    fig, ax = plt.subplots(figsize=(9, 6))
    ok = [r for r in rows if r["status"] == "ok" and num(r["tflops"]) and num(r["arith_intensity"])]
    # A colour per pass and dtype (in sorted order, as the dense series always had); expert rows
    # (a non-empty `impl`, in reports that have the column) take their pass's colour and the
    # marker of their implementation, with the implementation in the legend.
    series = defaultdict(list)
    for r in ok:
        impl = r.get("impl") or ""
        setting = (r.get("ep") or "", r.get("routing") or "") if impl else ("", "")
        series[(r["dtype"], r["pass"] or "gemm", impl, setting)].append(r)
    colour_keys = sorted({(dtype, pass_) for dtype, pass_, _, _ in series})
    cycle = plt.rcParams["axes.prop_cycle"].by_key().get("color") or ["C0"]
    colours = {key: cycle[i % len(cycle)] for i, key in enumerate(colour_keys)}
    markers = impl_markers({impl for _, _, impl, _ in series if impl})
    settings = {setting for _, _, impl, setting in series if impl}
    for (dtype, pass_, impl, setting), rs in sorted(series.items()):
        label = f"{pass_} {dtype}"
        if impl:
            label += f" experts {impl}"
            if len(settings) > 1:  # expert rows of several --ep/--routing (a --resume'd report)
                label += f" (ep {setting[0]}, {setting[1]})"
        ax.scatter([num(r["arith_intensity"]) for r in rs], [num(r["tflops"]) for r in rs], s=28,
                   label=label, alpha=0.85, color=colours[(dtype, pass_)],
                   marker=markers[impl] if impl else None)
    xs = [num(r["arith_intensity"]) for r in ok]
    if xs:
        device, dtype = ok[0]["device"], ok[0]["dtype"]
        peak_tflops, peak_bw = device_peaks(device, dtype)
        compute_label = f"peak {args.peak_tflops or peak_tflops:g} TFLOPS" if (args.peak_tflops or peak_tflops) else ""
        peak_tflops = args.peak_tflops or peak_tflops
        memory_label = f"memory {args.peak_bw or peak_bw:g} GB/s" if (args.peak_bw or peak_bw) else ""
        peak_bw = args.peak_bw or peak_bw
        # Without a datasheet (a CPU): the roofs the run knows, said as such: the best TFLOPS it
        # measured, and the memory roof of a bench_memops report drawn with it (its best loop).
        if not peak_tflops:
            peak_tflops = max(num(r["tflops"]) for r in ok)
            compute_label = f"best measured {peak_tflops:.3g} TFLOPS (no peak known)"
        if not peak_bw and args.memops_roof:
            peak_bw, source = args.memops_roof
            memory_label = f"memory {peak_bw:.4g} GB/s (bench_memops' roof: {source})"
        lo, hi = min(xs) / 2, max(xs) * 2
        if peak_tflops and peak_bw:  # show the ridge point, where memory stops limiting
            ridge = peak_tflops * 1e3 / peak_bw
            lo, hi = min(lo, ridge / 8), max(hi, ridge * 8)
        ax.axhline(peak_tflops, color="black", linestyle="--", linewidth=1, label=compute_label)
        if peak_bw:
            grid = [lo * (hi / lo) ** (i / 50) for i in range(51)]
            roof = [min(x * peak_bw / 1e3, peak_tflops or float("inf")) for x in grid]
            ax.plot(grid, roof, color="grey", linewidth=1, label=memory_label)
        ax.set_xlim(lo, hi)
        if len(ok) <= 40:  # which GEMM each point is
            for r in ok:
                ax.annotate(f"{r['gemm']} {r['pass']}".strip(), (num(r["arith_intensity"]), num(r["tflops"])),
                            fontsize=6, xytext=(3, 3), textcoords="offset points", alpha=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_ticks(ax)
    return finish(fig, ax, out, f"GEMM roofline: {title}", "arithmetic intensity (FLOP / byte)", "TFLOPS",
                  grid={"which": "both"}, legend={"fontsize": 8})


def ccl_groups(rows, series_of):
    """Measured rows with a bus bandwidth, grouped by (series_of(row), placement), sorted by size."""
    groups = defaultdict(list)
    for r in rows:
        size = num(r["size_bytes"])
        if r["status"] == "ok" and num(r["busbw_gbps"]) is not None and size and size > 0:
            groups[(series_of(r), r["placement"])].append(r)
    for rs in groups.values():
        rs.sort(key=lambda r: int(r["size_bytes"]))
    return groups


def placement_styles(series):
    """(colour, line style, marker, marker face) for every (series, placement), all distinct in the
    legend: a hue per series, the out-of-place line dark, solid, with dots; the in-place line a
    lighter shade of the same hue, dashed, with hollow squares. tab20 holds ten such pairs; beyond
    ten series the colours come from one wide colour map, still one per line."""
    pairs = plt.get_cmap("tab20")
    spread = plt.get_cmap("gist_rainbow")
    styles = {}
    for i, s in enumerate(series):
        if len(series) <= 10:
            dark, light = pairs(2 * i), pairs(2 * i + 1)
        else:
            dark, light = spread((2 * i) / (2 * len(series))), spread((2 * i + 1) / (2 * len(series)))
        styles[(s, "out_of_place")] = (dark, "-", "o", dark)
        styles[(s, "in_place")] = (light, "--", "s", "none")
    return styles


def draw_ccl_lines(ax, groups, label):
    series = sorted({s for s, _ in groups})  # (op, dtype) or (world size, dtype): 2 ranks before 16
    styles = placement_styles(series)
    for (s, placement), rs in sorted(groups.items(), key=lambda g: (g[0][0], g[0][1] != "out_of_place")):
        colour, line, marker, face = styles.get((s, placement), styles[(s, "out_of_place")])
        ax.plot([int(r["size_bytes"]) for r in rs], [num(r["busbw_gbps"]) for r in rs], color=colour,
                linestyle=line, marker=marker, markersize=4, markerfacecolor=face, label=label(s, placement))
    ax.set_xscale("log", base=2)
    label_ticks(ax, sorted({int(r["size_bytes"]) for rs in groups.values() for r in rs}), human_size)
    ax.set_xlabel("message size (nccl-tests semantics: max(send, recv) bytes per rank)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.grid(True, which="both", alpha=0.3)
    # Long legend handles, so that the dashes of the in-place lines show there too.
    ax.legend(fontsize=7, ncol=2, handlelength=4)


def plot_ccl(rows, title, out, args):
    # A panel per collective, so that no line hides another (fourteen series on one axis did),
    # and in it one series per dtype, root and reduction (and placement): rows of different roots
    # or reductions are different measurements, never one line. A root or reduction is named in
    # the legend only where the report holds that op with more than one of it.
    roots, redops = defaultdict(set), defaultdict(set)
    for r in rows:
        roots[r["op"]].add(r.get("root", ""))
        redops[r["op"]].add(r.get("redop", ""))
    groups = ccl_groups(rows, lambda r: (r["op"], r["dtype"], r.get("root", ""), r.get("redop", "")))
    ops = sorted({s[0] for s, _ in groups}) or sorted({r["op"] for r in rows})
    cols = 1 if len(ops) == 1 else 2
    rows_of_panels = math.ceil(len(ops) / cols)
    fig, axes = plt.subplots(rows_of_panels, cols, figsize=(8 * cols, 5 * rows_of_panels), squeeze=False)

    def label(s, placement):
        op, dtype, root, redop = s
        parts = [dtype]
        if len(roots[op]) > 1:
            parts.append(f"root {root}")
        if len(redops[op]) > 1:
            parts.append(redop)
        return " ".join(parts + [placement])
    for i, op in enumerate(ops):
        ax = axes[i // cols][i % cols]
        draw_ccl_lines(ax, {k: v for k, v in groups.items() if k[0][0] == op}, label)
        ax.set_title(op)
    for i in range(len(ops), rows_of_panels * cols):
        axes[i // cols][i % cols].set_visible(False)
    world = rows[0].get("world_size", "?")
    fig.suptitle(f"Collectives, {world} ranks, {rows[0].get('backend', '')}: {title}")
    return save(fig, out)


def plot_ccl_scaling(op, rows, out):
    """One collective at several world sizes: a line per world size (and dtype) and placement."""
    fig, ax = plt.subplots(figsize=(9, 6))
    groups = ccl_groups(rows, lambda r: (int(r["world_size"]), r["dtype"]))
    draw_ccl_lines(ax, groups, lambda s, placement: f"{s[0]} ranks {s[1]} {placement}")
    backends = ", ".join(sorted({r.get("backend", "") for r in rows}))
    worlds = ", ".join(str(w) for w in sorted({int(r["world_size"]) for r in rows}))
    ax.set_title(f"{op} bus bandwidth at {worlds} ranks ({backends})")
    return save(fig, out)


def plot_attention(rows, title, out, args):
    fig, ax = plt.subplots(figsize=(9, 6))
    # One series per shape: everything but the sequence length (the x axis), so two shapes that
    # share a length are two lines, never one point. Skv enters as its offset from Sq (a shape
    # with Skv = Sq stays one line over several lengths). A row measured twice is averaged.
    groups = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r["status"] == "ok" and num(r["tflops"]):
            key = (r.get("model", ""), int(r["batch_size"]), int(r["num_head_q"]), int(r["num_head_kv"]),
                   int(r["seqlen_kv"]) - int(r["seqlen_q"]), int(r["head_dim_qk"]), int(r["head_dim_v"]),
                   r["pass"], r["dtype"], r["causal"], r.get("backend", ""))
            groups[key][int(r["seqlen_q"])].append(num(r["tflops"]))
    backends = {k[-1] for k in groups}
    for key, by_seq in sorted(groups.items()):
        model, batch, hq, hkv, kv_offset, dqk, dv, pass_, dtype, causal, backend = key
        seqs = sorted(by_seq)
        head = f"d{dqk}" if dqk == dv else f"d{dqk}/{dv}"
        mask = "causal" if causal == "true" else "full"
        heads = f"h{hq}" if hq == hkv else f"h{hq}/{hkv}"
        kv = "" if kv_offset == 0 else f" Skv=Sq{kv_offset:+d}"
        name = f"{model} b{batch} {heads} {head}{kv} {pass_} {dtype} {mask}"
        if len(backends) > 1:
            name += f" {backend}"
        ax.plot(seqs, [sum(by_seq[s]) / len(by_seq[s]) for s in seqs], marker="o", label=name.strip())
    ax.set_xscale("log", base=2)
    label_ticks(ax, sorted({s for by_seq in groups.values() for s in by_seq}), str)
    ax.set_ylim(bottom=0)  # from zero: a small difference must not look large
    return finish(fig, ax, out, f"Attention: {title}", "sequence length", "TFLOPS (FlashAttention-3 convention)",
                  grid={"which": "both"}, legend={"fontsize": 8})


# One colour per part of a step, the same in every chart that stacks them (step.csv's and
# step_operators.csv's): communication is red wherever it shows, the optimizer purple.
PART_COLOURS = {"GEMM": "tab:blue", "MoE expert GEMMs": "tab:cyan", "attention": "tab:orange",
                "memory-bound": "tab:green", "exposed communication": "tab:red",
                "communication (tp, ep, pp)": "tab:red",
                "data-parallel communication (before overlap)": "lightcoral",
                "pipeline bubble": "tab:gray", "optimizer": "tab:purple", "host (framework)": "tab:brown"}


def stacked_bars(ax, units, parts, per_unit):
    """One bar per unit, stacked by part (collective and phase), per_unit[unit][part] high. A part
    that is zero in every bar is not drawn, nor listed in the legend; a part of a step keeps its
    colour of PART_COLOURS."""
    bottom = [0.0] * len(units)
    for part in parts:
        values = [per_unit[u].get(part, 0.0) for u in units]
        if not any(values):
            continue
        ax.bar(units, values, bottom=bottom, label=part,
               **({"color": PART_COLOURS[part]} if part in PART_COLOURS else {}))
        bottom = [b + v for b, v in zip(bottom, values)]


def varying(rows, columns):
    """The columns among these that hold more than one value in the rows: those a label must name."""
    return [c for c in columns if len({r.get(c, "") for r in rows}) > 1]


def memory_roof(rows, args):
    """(GB/s, where it came from) of the bandwidth roof: --peak-bw, else the report's own
    (roof_gbps: on the CPU the best of the run's loops), else the device's in configs/hardware.json;
    (None, "") when none is known."""
    if args.peak_bw:
        return args.peak_bw, "--peak-bw"
    own = next((r for r in rows if num(r.get("roof_gbps"))), None)
    if own:
        return num(own["roof_gbps"]), own.get("roof") or "roof_gbps"
    _, peak = device_peaks(rows[0].get("device", ""), "") if rows else (None, None)
    return (peak, "configs/hardware.json") if peak else (None, "")


def plot_memops(rows, title, out, args):
    """bench_memops: a bar per measured case, its achieved bandwidth against the roof, a colour per
    pass; the model and provider are named only where the report holds several."""
    ok = [r for r in rows if r["status"] == "ok" and num(r["mem_bw_gbps"]) is not None]
    gbps = [num(r["mem_bw_gbps"]) for r in ok]
    named = varying(ok, ("model", "provider"))
    fig, ax = plt.subplots(figsize=(10, 0.35 * len(ok) + 2))
    for pass_ in dict.fromkeys(r["pass"] for r in ok):  # a colour per pass, in the report's order
        ys = [i for i, r in enumerate(ok) if r["pass"] == pass_]
        ax.barh(ys, [gbps[i] for i in ys], label=pass_)
    ax.set_yticks(range(len(ok)))
    ax.set_yticklabels([" ".join([f"{r['op']} {r['pass']} {r['rows']}x{r['cols']} {r['dtype']}"]
                                 + [r.get(c, "") for c in named]) for r in ok], fontsize=8)
    ax.invert_yaxis()  # the report's first row on top
    peak, source = memory_roof(ok, args)
    if peak:
        ax.axvline(peak, color="black", linestyle="--", linewidth=1, label=f"peak {peak:.4g} GB/s ({source})")
    for i, (r, v) in enumerate(zip(ok, gbps)):
        # the report's own share of the roof (pct_peak_bw: capped at 100% with a note, empty for
        # a copy over a link) where it has one, so that the chart and the CSV never disagree
        pct = num(r.get("pct_peak_bw")) if "pct_peak_bw" in r else (100 * v / peak if peak else None)
        ax.text(v, i, f" {v:.4g}" + (f" ({pct:.0f}%)" if pct is not None else ""), va="center", fontsize=7)
    return finish(fig, ax, out, f"Memory-bound operators against the peak: {title}",
                  "achieved bandwidth (GB/s: io_bytes / time)" + ("" if peak else "; no peak known: give --peak-bw"),
                  grid={"axis": "x"}, legend={"fontsize": 8})


def plot_fsdp(rows, title, out, args):
    fig, ax = plt.subplots(figsize=(9, 6))
    per_unit = defaultdict(lambda: defaultdict(float))
    for r in rows:
        t, calls = num(r["time_us"]), num(r["calls_per_step"])
        if r["status"] == "ok" and t is not None and calls:
            per_unit[r["unit"]][f"{r['op']} {r['phase']}"] += t * calls / 1e3
    stacked_bars(ax, sorted(per_unit), sorted({p for u in per_unit.values() for p in u}), per_unit)
    return finish(fig, ax, out, f"FSDP communication per unit: {title}",
                  ylabel="communication per training step (ms, calls x measured time)", grid={"axis": "y"},
                  legend={"fontsize": 8})


STEP_PARTS = (("GEMM", "gemm_ms"), ("attention", "attention_ms"), ("memory-bound", "memop_ms"),
              ("exposed communication", "exposed_comm_ms"), ("pipeline bubble", "bubble_ms"),
              ("optimizer", "optimizer_ms"), ("host (framework)", "host_ms"))
# A configuration's columns beyond those every bar label shows (world_size and global_batch follow
# from those): a label names them only where the report's configurations differ in them.
STEP_CONFIG_NAMED = ("cp", "vpp", "ep", "etp", "moe_dispatcher", "sp", "sharding", "seqlen", "dtype", "overlap")


def config_label(r, named):
    """A bench_step configuration as a bar's label: model, parallelism, micro-batches and
    recomputation, then the columns of `named`."""
    label = (f"{r['model']}\ntp {r['tp']} pp {r['pp']} dp {r['dp']}\nmb {r['micro_batch']} x {r['micro_batches']}, "
             f"{r['recompute']}")
    return label + ("\n" + ", ".join(f"{c} {r[c]}" for c in named) if named else "")


def plot_step(rows, title, out, args):
    """bench_step: a bar per configuration, its projected step stacked by part."""
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(rows) + 3), 6))
    per_config, labels = {}, []
    named = varying(rows, STEP_CONFIG_NAMED)
    for r in rows:
        if r["status"] != "ok" or num(r["step_time_ms"]) is None:
            print(f"plot_report.py: {title}: {r['model']} tp {r['tp']} pp {r['pp']} dp {r['dp']}: no step time "
                  f"({r['note']}), not drawn", file=sys.stderr)
            continue
        label = config_label(r, named)
        mfu = num(r["mfu"])
        label += f"\nMFU {100 * mfu:.1f}%" if mfu is not None else ""
        labels.append(label)
        per_config[label] = {name: num(r.get(column, "")) or 0.0 for name, column in STEP_PARTS}
    fig.set_figwidth(fig.get_figwidth() + 3)
    stacked_bars(ax, labels, [name for name, _ in STEP_PARTS], per_config)
    # the legend beside the bars, never over them
    return finish(fig, ax, out, f"Training step breakdown: {title}",
                  ylabel="projected step time (ms) on the busiest rank", grid={"axis": "y"},
                  legend={"fontsize": 8, "loc": "upper left", "bbox_to_anchor": (1.01, 1)})


# Where an operator row of step_operators.csv counts, by its family and phase (None: any), as
# bench_step composes the step (step/step_compose.cpp), in the order the parts are stacked. A rule
# that names phases is tried before one that does not; a family no rule names is a part of its own.
OPERATOR_PARTS = (
    ("GEMM", "gemm", None),
    ("MoE expert GEMMs", "experts", None),
    ("attention", "attention", None),
    ("memory-bound", "memop", None),
    ("communication (tp, ep, pp)", "collective", None),
    ("data-parallel communication (before overlap)", "collective", {"grad_sync", "param_gather"}),
    ("optimizer", None, {"optimizer"}),
)


def operator_part(r):
    rules = sorted(OPERATOR_PARTS, key=lambda rule: rule[2] is None)  # stable: the table's order otherwise
    return next((part for part, family, phases in rules
                 if family in (None, r["family"]) and (phases is None or r["phase"] in phases)), r["family"])


def step_operator_sums(rows, title):
    """{bar label: {part: ms}} of a step_operators.csv, a bar per configuration. Operators without a
    time are not counted: the bar's label and a line on stderr say how many there are."""
    named = varying(rows, STEP_CONFIG_NAMED)
    sums, missing, counts = defaultdict(lambda: defaultdict(float)), defaultdict(list), defaultdict(int)
    for r in rows:
        label, total = config_label(r, named), num(r["total_ms"])
        counts[label] += 1
        if r["status"] == "ok" and total is not None:
            sums[label][operator_part(r)] += total
        else:
            missing[label].append(r["operator"])
    shown = {label: label + (f"\nno time for {len(missing[label])} of {n} operators" if label in missing else "")
             for label, n in counts.items()}
    for label, operators in missing.items():
        print(f"plot_report.py: {title}: {shown[label].replace(chr(10), ' ')} ({', '.join(operators)}): not counted",
              file=sys.stderr)
    return {shown[label]: sums[label] for label in counts}


def plot_step_operators(rows, title, out, args):
    """bench_step's step_operators.csv: a bar per configuration, its operators' time per step on the
    busiest rank (count x time) stacked by family."""
    per_bar = step_operator_sums(rows, title)
    rank = {part: i for i, (part, _, _) in enumerate(OPERATOR_PARTS)}  # the stacking order; other families last
    parts = sorted({p for sums in per_bar.values() for p in sums}, key=lambda p: (rank.get(p, len(rank)), p))
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(per_bar) + 3) + 3, 6))
    stacked_bars(ax, list(per_bar), parts, per_bar)
    # the legend beside the bars, never over them
    return finish(fig, ax, out, f"Step time by operator family: {title}\n"
                  "(data-parallel communication before overlap; no pipeline bubble)",
                  ylabel="operator time per step on the busiest rank (ms, count x time_us)", grid={"axis": "y"},
                  legend={"fontsize": 8, "loc": "upper left", "bbox_to_anchor": (1.01, 1)}, title_size=10)


def plot_fsdp_plan(rows, title, out, args):
    """The plan's message bytes per training step (bytes x calls_per_step), stacked per unit."""
    fig, ax = plt.subplots(figsize=(9, 6))
    per_unit = defaultdict(lambda: defaultdict(float))
    for r in rows:
        size, calls = num(r["bytes"]), num(r["calls_per_step"])
        if size is not None and calls is not None:
            per_unit[r["unit"]][f"{r['collective']} {r['phase']}"] += size * calls / 1e6
    # the plan's order: layers, then the root
    stacked_bars(ax, list(per_unit), list(dict.fromkeys(p for u in per_unit.values() for p in u)), per_unit)
    first = rows[0]
    return finish(fig, ax, out, f"FSDP{first.get('fsdp_version', '')} plan of {first.get('model', '?')} at world "
                  f"size {first.get('world_size', '?')}: {title}",
                  ylabel="message bytes per training step (MB: bytes x calls_per_step)", grid={"axis": "y"},
                  legend={"fontsize": 8})


def plain_log_ticks(ax):
    """A log axis's ticks as numbers people read ("0.16", "20"), not "1.6x10^-1"."""
    from matplotlib.ticker import FuncFormatter
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(plain)
        axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def human_size(n: int) -> str:
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g}{unit}"
    return str(n)


def size_label(cell) -> str:
    """A bytes cell of a label as people write it; a cell that is not an integer as it is (a
    label is no figure: a row is not refused for it, as check_rows refuses a chart's axis)."""
    try:
        return human_size(int(cell))
    except (TypeError, ValueError):
        return str(cell or "?")


def label_ticks(ax, values, text):
    """Ticks at the measured points (at most 12 of them), labelled as people write them."""
    if not values:
        return
    step = max(1, len(values) // 12)
    shown = values[::step]
    ax.set_xticks(shown)
    ax.set_xticklabels([text(v) for v in shown], rotation=45 if len(shown) > 6 else 0)
    ax.minorticks_off()


MANIFEST = ".opbench-manifest"  # the list of files opbench wrote in a folder (docs/outputs.md)


def claim(path, binary="plot_report.py", flag="--out"):
    """A PNG is written only where no file is, or over one an opbench run wrote (its folder's
    manifest lists it); then it is listed as `binary`'s. Anything else is left as it is, and the
    run refused (naming `flag`, the one that chose the path)."""
    folder, name = os.path.dirname(os.path.abspath(path)), os.path.basename(path)
    if not os.path.isdir(folder):
        fail(f"{flag} {path}: no such folder {folder}")
    manifest = os.path.join(folder, MANIFEST)
    listed = set()
    if os.path.exists(manifest):
        for line in open(manifest):
            try:
                listed.add(json.loads(line)["file"])
            except (ValueError, KeyError, TypeError):
                pass  # an unreadable line only makes a file look foreign: the safe side
    if name in listed:
        return
    if os.path.lexists(path):
        fail(f"{path}: exists and no opbench run wrote it (it is not in {manifest}): left "
             f"unchanged; name another {flag}")
    with open(manifest, "a") as f:
        f.write(json.dumps({"file": name, "binary": binary}) + "\n")


def finish(fig, ax, out, title, xlabel=None, ylabel=None, grid=None, legend=None, title_size=None):
    """A chart's ending: its labels and title, the grid (grid: ax.grid's which/axis), the legend
    (legend: ax.legend's arguments), saved to out."""
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.set_title(title, **({"fontsize": title_size} if title_size else {}))
    if grid is not None:
        ax.grid(True, alpha=0.3, **grid)
    if legend is not None:
        ax.legend(**legend)
    return save(fig, out)


def save(fig, path):
    fig.tight_layout()
    claim(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def capture_shape(r):
    if r["kind"] == "gemm":
        dims = f'{r["m"]}x{r["n"]}x{r["k"]}'
        return (f'b{r["batch"]} ' if r["batch"] not in ("", "1") else "") + f'{dims} {r["layout"]}'
    return f'{size_label(r["bytes"] or 0)} on {r["comm_size"]}'


def plot_capture(rows, title, out, args):
    from capture_summary import job_time_us  # this folder's; the calls sampled out counted too
    top = sorted(rows, key=lambda r: -job_time_us(r))[:15][::-1]
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(top) + 1.5))
    totals = [job_time_us(r) / 1e3 for r in top]
    colours = ["tab:blue" if r["kind"] == "gemm" else "tab:orange" for r in top]
    ax.barh(range(len(top)), totals, color=colours)
    ax.set_yticks(range(len(top)))
    ax.set_yticklabels([f'{r["api"]} {r["dtype"]} {capture_shape(r)}' for r in top], fontsize=8)
    for i, r in enumerate(top):
        p99 = num(r["p99_us"])
        ax.text(totals[i], i, f' {r["calls"]} calls' + (f", p99 {p99:.0f} us" if p99 else ""),
                va="center", fontsize=7)
    ax.set_xlabel("total time in the job (ms)")
    ax.set_title(f"{title}: top shapes by in-job time (GEMM blue, communication orange)")
    return save(fig, out)


def plot_capture_replay(rows, title, out, args):
    rows = [r for r in rows if num(r.get("in_job_us")) is not None]
    labels, in_job, alone, ratios = [], [], [], []
    for r in rows:
        if "gemm" in r and "m" in r:
            shape = f'{r["gemm"]} {r["dtype"]} {r["m"]}x{r["n"]}x{r["k"]} {r["transa"]}{r["transb"]}'
        elif "num_head_q" in r:  # bench_attention
            shape = (f'b{r["batch_size"]} s{r["seqlen_q"]}/{r["seqlen_kv"]} h{r["num_head_q"]}/'
                     f'{r["num_head_kv"]} d{r["head_dim_qk"]} {r["pass"]} {r["dtype"]}')
        else:
            shape = f'{r.get("label", "")} {r.get("op", "")} {size_label(r.get("size_bytes"))} {r.get("placement", "")}'
        labels.append(shape)
        in_job.append(num(r["in_job_us"]))
        alone.append(num(r.get("time_us")) or 0.0)
        ratios.append(num(r.get("in_job_ratio")))
    fig, ax = plt.subplots(figsize=(10, 0.5 * max(len(rows), 1) + 1.5))
    y = list(range(len(rows)))
    ax.barh([v + 0.2 for v in y], in_job, height=0.4, color="tab:red", label="in the job (captured)")
    ax.barh([v - 0.2 for v in y], alone, height=0.4, color="tab:green", label="alone (this run)")
    for i, ratio in enumerate(ratios):
        # no ratio: a skipped or failed row, or one run in another dtype than the job's
        # (bench_attention, whose note says "no in_job_ratio")
        why = ("  no ratio: another dtype" if "no in_job_ratio" in (rows[i].get("note") or "")
               else f'  {rows[i].get("status") or "skipped"}')
        ax.text(max(in_job[i], alone[i]), i, f"  x{ratio:.2f}" if ratio else why,
                va="center", fontsize=8)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("time per call (us, log)")
    ax.set_title(f"{title}: in-job vs alone (in_job_ratio)")
    ax.legend(fontsize=8)
    return save(fig, out)


PLOTS = {"capture": plot_capture, "capture_replay": plot_capture_replay, "gemm": plot_gemm, "ccl": plot_ccl, "attention": plot_attention, "fsdp": plot_fsdp,
         "fsdp_plan": plot_fsdp_plan, "step": plot_step, "step_operators": plot_step_operators,
         "memops": plot_memops}


def read_report(path: str):
    """(rows, kind) of one input; exits 2 when it cannot be read or no opbench binary wrote it."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            columns = reader.fieldnames or []
    except FileNotFoundError:
        fail(f"{path}: no such file")
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        fail(f"{path}: cannot be read as CSV ({e})")
    kind = kind_of(columns)  # from the header: a report whose run wrote no row is still one
    if not kind:
        fail(f"{path}: not an opbench report (bench_gemm, bench_ccl, bench_attention, bench_fsdp, bench_memops, bench_step or a capture)")
    check_rows(path, kind, columns, rows)
    return rows, kind


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+")
    parser.add_argument("--out", required=True, help="directory for the PNGs")
    parser.add_argument("--peak-tflops", type=float, help="roofline: peak compute")
    parser.add_argument("--peak-bw", type=float, help="roofline and bench_memops: peak memory bandwidth (GB/s)")
    args = parser.parse_args()
    require_matplotlib("plot_report.py")
    # Read and recognise every input first: a bad one fails before any chart is drawn.
    reports = [(path, *read_report(path)) for path in args.reports]
    # a bench_memops report's own roof (roof_gbps, the CPU's best loop) is the memory roof of a
    # GEMM roofline drawn with it where no datasheet is known
    args.memops_roof = next(((num(r["roof_gbps"]), r.get("roof") or "roof_gbps")
                             for _, rows, kind in reports if kind == "memops"
                             for r in rows if num(r.get("roof_gbps"))), None)
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        fail(f"--out {args.out}: {e.strerror}")

    # Collectives reports of more than one world size (a run_script.sh sweep) are overlaid: one
    # chart per collective with a line per world size, instead of one chart per report.
    ccl_rows = [r for _, rows, kind in reports if kind == "ccl" for r in rows]
    scaling = len({r["world_size"] for r in ccl_rows}) > 1
    written = set()
    for path, rows, kind in reports:
        if not rows:  # e.g. a run_script.sh run that failed before its first row
            print(f"plot_report.py: {path}: no rows, nothing to draw", file=sys.stderr)
            continue
        if kind == "ccl" and scaling:
            continue
        stem = os.path.splitext(os.path.basename(path))[0]
        name = f"{stem}_{kind}.png"
        if name in written:  # two reports with one name (all.csv from two runs): add the folder
            name = f"{os.path.basename(os.path.dirname(os.path.abspath(path)))}_{name}"
        base, n = name, 2
        while name in written:  # and where that repeats too, a number: no chart over another
            name = f"{base[:-len('.png')]}_{n}.png"
            n += 1
        written.add(name)
        print(PLOTS[kind](rows, stem, os.path.join(args.out, name), args))
    if scaling:
        by_op = defaultdict(list)
        for r in ccl_rows:
            by_op[r["op"]].append(r)
        for op, rows in by_op.items():
            print(plot_ccl_scaling(op, rows, os.path.join(args.out, f"{op}_scaling_ccl.png")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
