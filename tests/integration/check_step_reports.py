#!/usr/bin/env python3
"""Runs bench_step into DIR and recomputes its figures from what it wrote.

Usage: check_step_reports.py BENCH_STEP DIR [--rows N] [--exit-code C] [--missing TEXT]
                             [--device TEXT] -- ARGS...

For every configuration row of DIR/step.csv:
  - the operator rows of step_operators.csv: total_ms = count x time_us, and each time_us is the
    time_us of the report row its `source` names (file and line), unless interpolated; a captured
    GEMM's (time_from captured) is the in-job average of its shape in the capture files (their
    total_us over their timed calls), times the entries of a batched GEMM;
  - gemm_ms, attention_ms, memop_ms and optimizer_ms are the sums of their operators' total_ms,
    by the rows' `part`;
  - step_time_ms = gemm + attention + memop + exposed_comm + bubble + optimizer;
  - exposed_comm_ms = the tp/ep/pp collectives' total + dp_comm_ms - hidden_comm_ms;
  - bubble_ms = (pp - 1) / vpp x micro_batch_ms; tokens_per_s = tokens_per_step / step;
  - tflops_per_device = model_flops / step / world; mfu = tflops_per_device / peak_tflops;
  - model_flops = sum over the operators of count x model_flops, x tp x dp (pp 1 only: other
    stages' operators are not in the list).
--missing TEXT: the run must leave the step empty (status skipped), name TEXT in its note and mark
such operators `missing`. Exit 0 when everything holds, 1 with one line per problem.
"""
import argparse
import csv
import os
import sys

from report_check import read_csv as read
from report_check import run
from report_check import verdict


def num(v):
    return float(v) if v not in ("", None) else None


def close(a, b, rel=2e-6, abs_=1e-3):
    return a is not None and b is not None and abs(a - b) <= max(abs_, rel * max(abs(a), abs(b)))


def source_time(source, cache):
    """time_us of the report row `source` names ("FILE line N"), or None when interpolated."""
    if " line " not in source or source.startswith("interpolated"):
        return None
    path, line = source.rsplit(" line ", 1)
    if path not in cache:
        with open(path, newline="") as f:
            cache[path] = list(csv.reader(f))
    rows = cache[path]
    header, row = rows[0], rows[int(line) - 1]
    return float(row[header.index("time_us")])


def captured_time(source, cache):
    """The in-job average a captured GEMM's `source` names ("DIR: API MxNxK LAYOUT, in-job average
    of N calls[ x B entries]"), recomputed from DIR's capture files (every file's total_us over
    its timed calls); None for collectives."""
    folder, rest = source.split(": ", 1)
    words = rest.split(",")[0].split()
    if len(words) != 3 or words[1].count("x") != 2:
        return None
    api, dims, layout = words
    m, n, k = dims.split("x")
    entries = int(source.rsplit(" x ", 1)[1].split()[0]) if source.endswith(" entries") else 1
    total = calls = 0.0
    for name in sorted(os.listdir(folder)):
        if not (name.startswith("capture-") and name.endswith(".csv")):
            continue
        for r in cache.setdefault(os.path.join(folder, name), read(os.path.join(folder, name))):
            if (r["api"], r["m"], r["n"], r["k"], r["layout"]) == (api, m, n, k, layout) \
                    and r["batch"] == ("1" if entries > 1 else r["batch"]):
                total += float(r["total_us"])
                calls += int(r["timed_calls"])
    return total / calls * entries if calls else None


def parse_step_check(argv, add_options):
    """The step checks' command line, BENCH_STEP DIR [--rows N] [options] -- ARGS: the parsed
    options, and bench_step's own arguments after --."""
    split = argv.index("--")
    ap = argparse.ArgumentParser()
    ap.add_argument("bench_step")
    ap.add_argument("dir")
    ap.add_argument("--rows", type=int, default=1)
    add_options(ap)
    return ap.parse_args(argv[:split]), argv[split + 1:]


def main() -> int:
    def options(ap):
        ap.add_argument("--exit-code", type=int, default=0)
        ap.add_argument("--missing")
        ap.add_argument("--device")
    a, args = parse_step_check(sys.argv[1:], options)
    proc = run([a.bench_step, "--report-dir-path", a.dir, *args], a.dir, timeout=1200)
    sys.stdout.write(proc.stdout[-3000:])
    problems = []
    if proc.returncode != a.exit_code:
        problems.append(f"exit {proc.returncode}, expected {a.exit_code}: {proc.stderr.strip()[-500:]}")
    steps = read(os.path.join(a.dir, "step.csv"))
    ops = read(os.path.join(a.dir, "step_operators.csv"))
    if len(steps) != a.rows:
        problems.append(f"step.csv: {len(steps)} rows, expected {a.rows}")
    cache = {}
    for i, s in enumerate(steps):
        key = ("tp", "pp", "dp", "recompute", "kernels", "micro_batch", "seqlen", "micro_batches")
        mine = [o for o in ops if all(o[k] == s[k] for k in key)]
        where = f"step.csv row {i + 1} ({s['model']} tp {s['tp']} pp {s['pp']} dp {s['dp']} {s['recompute']})"
        if not mine:
            problems.append(f"{where}: no operator rows")
            continue
        if a.missing:
            if s["status"] != "skipped" or s["step_time_ms"] or a.missing not in s["note"]:
                problems.append(f"{where}: expected an empty step naming '{a.missing}', got "
                                f"{s['status']} {s['step_time_ms']!r} {s['note']!r}")
            if not any(o["status"] == "missing" and a.missing in o["operator"] for o in mine):
                problems.append(f"{where}: no operator row `missing` named '{a.missing}'")
            continue
        if a.device and a.device not in s["device"]:
            problems.append(f"{where}: device {s['device']!r}, expected {a.device!r}")
        sums = {"gemm": 0.0, "attention": 0.0, "memop": 0.0, "optimizer": 0.0, "critical_comm": 0.0}
        model_flops, untimed = 0, False
        for o in mine:
            t, total = num(o["time_us"]), num(o["total_ms"])
            if o["status"] != "ok" or t is None:
                problems.append(f"{where}: operator {o['operator']} has no time")
                untimed = True
                continue
            if not close(total, int(o["count"]) * t / 1e3):
                problems.append(f"{where}: {o['operator']}: total_ms {total} != count x time_us")
            if o["time_from"] == "captured":
                reported = captured_time(o["source"], cache)
                if o["family"] == "gemm" and not close(reported, t, rel=1e-4):
                    problems.append(f"{where}: {o['operator']}: captured time_us {t} != {reported} "
                                    f"from {o['source']}")
            else:
                reported = source_time(o["source"], cache)
                if o["source"] and not o["source"].startswith("interpolated") and not close(reported, t):
                    problems.append(f"{where}: {o['operator']}: time_us {t} != {reported} at {o['source']}")
            model_flops += int(o["count"]) * int(o["model_flops"])
            if o["part"] in sums:
                sums[o["part"]] += total
        if untimed:  # the step's figures are left empty: nothing more to recompute
            continue
        f = {k: num(s[k]) for k in s if k not in ("model", "sp", "sharding", "recompute", "dtype", "times_from",
                                                  "device", "status", "note", "kernels",
                                                  "attention_kernels", "optimizer_impl", "optimizer_dtype", "fits")}
        for part, column in (("gemm", "gemm_ms"), ("attention", "attention_ms"), ("memop", "memop_ms"),
                             ("optimizer", "optimizer_ms")):
            if not close(sums[part], f[column], rel=1e-5):
                problems.append(f"{where}: {column} {f[column]} != the operators' {sums[part]}")
        exposed = sums["critical_comm"] + f["dp_comm_ms"] - f["hidden_comm_ms"]
        if not close(exposed, f["exposed_comm_ms"], rel=1e-5):
            problems.append(f"{where}: exposed_comm_ms {f['exposed_comm_ms']} != {exposed}")
        parts = sum(f[c] for c in ("gemm_ms", "attention_ms", "memop_ms", "exposed_comm_ms", "bubble_ms",
                                   "optimizer_ms") + (("host_ms",) if "host_ms" in f else ()))
        step = f["step_time_ms"]
        if "host_forward_ms" in f:  # the host part by phase adds up to it
            phases = f["host_forward_ms"] + f["host_backward_ms"] + f["host_optimizer_ms"]
            if not close(phases, f["host_ms"], rel=1e-5) or min(
                    f["host_forward_ms"], f["host_backward_ms"], f["host_optimizer_ms"]) < 0:
                problems.append(f"{where}: host_ms {f['host_ms']} != its phases' {phases}")
        if not close(parts, step, rel=1e-5):
            problems.append(f"{where}: step_time_ms {step} != the sum of its parts {parts}")
        if not close(f["bubble_ms"], (f["pp"] - 1) / f["vpp"] * f["micro_batch_ms"], rel=1e-5):
            problems.append(f"{where}: bubble_ms {f['bubble_ms']}")
        if not close(f["tokens_per_s"], f["tokens_per_step"] / (step / 1e3), rel=1e-5):
            problems.append(f"{where}: tokens_per_s {f['tokens_per_s']}")
        if f["pp"] == 1 and not close(model_flops * f["tp"] * f["dp"], f["model_flops"], rel=1e-6):
            problems.append(f"{where}: model_flops {f['model_flops']} != {model_flops} x tp x dp")
        if not close(f["tflops_per_device"], f["model_flops"] / (step / 1e3) / f["world_size"] / 1e12, rel=1e-5):
            problems.append(f"{where}: tflops_per_device {f['tflops_per_device']}")
        if f["peak_tflops"] and not close(f["mfu"], f["tflops_per_device"] / f["peak_tflops"], rel=1e-5):
            problems.append(f"{where}: mfu {f['mfu']}")
    return verdict(problems, None, f"{len(steps)} configurations, {len(ops)} operator rows checked: ok")


if __name__ == "__main__":
    sys.exit(main())
