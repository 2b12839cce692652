#!/usr/bin/python3
"""Plots opbench CSV reports as PNGs, recognising which binary wrote each one from its columns:

  bench_gemm       roofline: TFLOPS against arithmetic intensity (log-log), with the device's peak
                   compute and memory-bandwidth lines (configs/hardware.json, or --peak-tflops/--peak-bw)
  bench_ccl        bus bandwidth against message size, one line per collective and placement (log x)
  bench_attention  TFLOPS against sequence length, one line per head dim and pass
  bench_fsdp       communication time per training step, per unit and collective

Usage: scripts/plot_report.py REPORT.csv... --out DIR
"""
import argparse
import csv
import json
import math
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def num(text):
    try:
        v = float(text)
        return v if math.isfinite(v) else None
    except (TypeError, ValueError):
        return None


def kind_of(columns) -> str:
    if "unit" in columns and "busbw_gbps" in columns:
        return "fsdp"
    if "busbw_gbps" in columns:
        return "ccl"
    if "seqlen_q" in columns:
        return "attention"
    if "arith_intensity" in columns:
        return "gemm"
    return ""


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


def plot_gemm(rows, title, out, args):
    fig, ax = plt.subplots(figsize=(9, 6))
    ok = [r for r in rows if r["status"] == "ok" and num(r["tflops"]) and num(r["arith_intensity"])]
    groups = defaultdict(list)
    for r in ok:
        groups[(r["dtype"], r["pass"] or "gemm")].append(r)
    for (dtype, pass_), rs in sorted(groups.items()):
        ax.scatter([num(r["arith_intensity"]) for r in rs], [num(r["tflops"]) for r in rs], s=28,
                   label=f"{pass_} {dtype}", alpha=0.85)
    xs = [num(r["arith_intensity"]) for r in ok]
    if xs:
        device, dtype = ok[0]["device"], ok[0]["dtype"]
        peak_tflops, peak_bw = device_peaks(device, dtype)
        peak_tflops = args.peak_tflops or peak_tflops
        peak_bw = args.peak_bw or peak_bw
        lo, hi = min(xs) / 2, max(xs) * 2
        if peak_tflops and peak_bw:  # show the ridge point, where memory stops limiting
            ridge = peak_tflops * 1e3 / peak_bw
            lo, hi = min(lo, ridge / 8), max(hi, ridge * 8)
        if peak_tflops:
            ax.axhline(peak_tflops, color="black", linestyle="--", linewidth=1, label=f"peak {peak_tflops:g} TFLOPS")
        if peak_bw:
            grid = [lo * (hi / lo) ** (i / 50) for i in range(51)]
            roof = [min(x * peak_bw / 1e3, peak_tflops or float("inf")) for x in grid]
            ax.plot(grid, roof, color="grey", linewidth=1, label=f"memory {peak_bw:g} GB/s")
        ax.set_xlim(lo, hi)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("TFLOPS")
    ax.set_title(f"GEMM roofline: {title}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, out)


def plot_ccl(rows, title, out, args):
    fig, ax = plt.subplots(figsize=(9, 6))
    groups = defaultdict(list)
    for r in rows:
        if r["status"] == "ok" and num(r["busbw_gbps"]) is not None and int(r["size_bytes"]) > 0:
            groups[(r["op"], r["dtype"], r["placement"])].append(r)
    # One colour per op and dtype; the line style says the placement.
    series = sorted({(op, dtype) for op, dtype, _ in groups})
    colours = {s: plt.get_cmap("tab10" if len(series) <= 10 else "tab20")(i) for i, s in enumerate(series)}
    for (op, dtype, placement), rs in sorted(groups.items()):
        rs.sort(key=lambda r: int(r["size_bytes"]))
        ax.plot([int(r["size_bytes"]) for r in rs], [num(r["busbw_gbps"]) for r in rs], marker="o", markersize=3,
                color=colours[(op, dtype)], linestyle="-" if placement == "out_of_place" else "--",
                label=f"{op} {dtype} {placement}")
    ax.set_xscale("log", base=2)
    label_ticks(ax, sorted({int(r["size_bytes"]) for rs in groups.values() for r in rs}), human_size)
    ax.set_xlabel("message size (nccl-tests semantics: max(send, recv) bytes per rank)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    world = rows[0].get("world_size", "?")
    ax.set_title(f"Collectives, {world} ranks, {rows[0].get('backend', '')}: {title}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return save(fig, out)


def plot_attention(rows, title, out, args):
    fig, ax = plt.subplots(figsize=(9, 6))
    groups = defaultdict(list)
    for r in rows:
        if r["status"] == "ok" and num(r["tflops"]):
            groups[(int(r["head_dim_qk"]), int(r["head_dim_v"]), r["pass"], r["dtype"], r["causal"])].append(r)
    for (dqk, dv, pass_, dtype, causal), rs in sorted(groups.items()):
        by_seq = defaultdict(list)
        for r in rs:
            by_seq[int(r["seqlen_q"])].append(num(r["tflops"]))
        seqs = sorted(by_seq)
        head = f"d{dqk}" if dqk == dv else f"d{dqk}/{dv}"
        mask = "causal" if causal == "true" else "full"
        ax.plot(seqs, [max(by_seq[s]) for s in seqs], marker="o", label=f"{head} {pass_} {dtype} {mask}")
    ax.set_xscale("log", base=2)
    label_ticks(ax, sorted({int(r["seqlen_q"]) for rs in groups.values() for r in rs}), str)
    ax.set_xlabel("sequence length")
    ax.set_ylabel("TFLOPS (FlashAttention-3 convention)")
    ax.set_title(f"Attention: {title}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, out)


def plot_fsdp(rows, title, out, args):
    fig, ax = plt.subplots(figsize=(9, 6))
    per_unit = defaultdict(lambda: defaultdict(float))
    for r in rows:
        t, calls = num(r["time_us"]), num(r["calls_per_step"])
        if r["status"] == "ok" and t is not None and calls:
            per_unit[r["unit"]][f"{r['op']} {r['phase']}"] += t * calls / 1e3
    units = sorted(per_unit)
    parts = sorted({p for u in per_unit.values() for p in u})
    bottom = [0.0] * len(units)
    for part in parts:
        values = [per_unit[u].get(part, 0.0) for u in units]
        ax.bar(units, values, bottom=bottom, label=part)
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_ylabel("communication per training step (ms, calls x measured time)")
    ax.set_title(f"FSDP communication per unit: {title}")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    return save(fig, out)


def human_size(n: int) -> str:
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g}{unit}"
    return str(n)


def label_ticks(ax, values, text):
    """Ticks at the measured points (at most 12 of them), labelled as people write them."""
    if not values:
        return
    step = max(1, len(values) // 12)
    shown = values[::step]
    ax.set_xticks(shown)
    ax.set_xticklabels([text(v) for v in shown], rotation=45 if len(shown) > 6 else 0)
    ax.minorticks_off()


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


PLOTS = {"gemm": plot_gemm, "ccl": plot_ccl, "attention": plot_attention, "fsdp": plot_fsdp}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+")
    parser.add_argument("--out", required=True, help="directory for the PNGs")
    parser.add_argument("--peak-tflops", type=float, help="roofline: peak compute")
    parser.add_argument("--peak-bw", type=float, help="roofline: peak memory bandwidth (GB/s)")
    args = parser.parse_args()
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        fail(f"--out {args.out}: {e.strerror}")
    written = set()
    for path in args.reports:
        try:
            rows = list(csv.DictReader(open(path, newline="")))
        except FileNotFoundError:
            fail(f"{path}: no such file")
        except (OSError, UnicodeDecodeError, csv.Error) as e:
            fail(f"{path}: cannot be read as CSV ({e})")
        kind = kind_of(rows[0].keys()) if rows else ""
        if not kind:
            fail(f"{path}: not an opbench report (bench_gemm, bench_ccl, bench_attention or bench_fsdp)")
        stem = os.path.splitext(os.path.basename(path))[0]
        name = f"{stem}_{kind}.png"
        if name in written:  # two reports with one name (all.csv from two runs): add the folder
            name = f"{os.path.basename(os.path.dirname(os.path.abspath(path)))}_{name}"
        written.add(name)
        png = PLOTS[kind](rows, stem, os.path.join(args.out, name), args)
        print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
