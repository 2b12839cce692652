#!/usr/bin/env python3
"""Runs bench_gemm for real and reads its reports back.

Checks every CSV it is told about: the header holds the required columns, the row count is as
expected, numbers are plain, and each ok row's derived figures follow from its own m, n, k and
time (flops = 2·b·m·n·k, tflops = flops/time, io = read + write, mem_bw = io/time).

Usage: check_gemm_reports.py BENCH_GEMM OUT_DIR --expect FILE:ROWS[:OK_ROWS] ... -- ARGS...
"""
import argparse
import csv
import json
import math
import os
import shutil
import subprocess
import sys

REQUIRED = ("model gemm pass m n k batch transa transb dtype backend device time_us median_us min_us "
            "max_us stddev_us samples flops tflops read_bytes write_bytes io_bytes mem_bw_gbps "
            "arith_intensity pct_peak_flops algo status note").split()


def close(a: float, b: float, rel: float = 2e-6) -> bool:
    return math.isclose(a, b, rel_tol=rel)


def check_csv(path: str, rows_expected: int, ok_expected: int) -> list:
    problems = []
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
        f.seek(0)
        header = next(csv.reader(f))
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        problems.append(f"{path}: missing columns {missing}")
    if len(rows) != rows_expected:
        problems.append(f"{path}: {len(rows)} rows, expected {rows_expected}")
    ok_rows = [r for r in rows if r["status"] == "ok"]
    if len(ok_rows) != ok_expected:
        problems.append(f"{path}: {len(ok_rows)} ok rows, expected {ok_expected}: " +
                        "; ".join(f"{r['gemm']} {r['status']} {r['note']}" for r in rows if r["status"] != "ok"))
    for r in rows:
        if r["status"] not in ("ok", "skipped", "failed"):
            problems.append(f"{path}: bad status {r['status']!r}")
        if r["status"] != "ok" and not r["note"]:
            problems.append(f"{path}: a {r['status']} row without a note")
        if r["status"] == "failed" and r.get("check") == "failed" and "check failed" not in r["note"]:
            problems.append(f"{path}: a failed check whose note does not say so")
    for r in ok_rows:
        m, n, k, b = (int(r[c]) for c in ("m", "n", "k", "batch"))
        t = float(r["time_us"])
        flops = int(r["flops"])
        io = int(r["io_bytes"])
        where = f"{path}: {r['gemm']} {r['pass']} {m}x{n}x{k}"
        if flops != 2 * b * m * n * k:
            problems.append(f"{where}: flops {flops} != 2bmnk")
        if io != int(r["read_bytes"]) + int(r["write_bytes"]):
            problems.append(f"{where}: io_bytes != read + write")
        if not t > 0 or not float(r["tflops"]) > 0:
            problems.append(f"{where}: time or tflops not positive")
        if not close(float(r["tflops"]), flops / t / 1e6):
            problems.append(f"{where}: tflops {r['tflops']} != flops/time {flops / t / 1e6}")
        if not close(float(r["mem_bw_gbps"]), io / t / 1e3):
            problems.append(f"{where}: mem_bw_gbps {r['mem_bw_gbps']} != io/time")
        if not close(float(r["arith_intensity"]), flops / io):
            problems.append(f"{where}: arith_intensity != flops/io")
        if not float(r["min_us"]) <= float(r["median_us"]) <= float(r["max_us"]):
            problems.append(f"{where}: min <= median <= max does not hold")
        if int(r["samples"]) < 1:
            problems.append(f"{where}: no samples")
    jsonl = path[:-4] + ".jsonl"
    with open(jsonl) as f:
        lines = [json.loads(line) for line in f]
    if len(lines) != len(rows):
        problems.append(f"{jsonl}: {len(lines)} lines, expected {len(rows)}")
    for line in lines:
        if line["status"] != "ok":
            continue
        if len(line["samples_us"]) != line["metrics"]["samples"]:
            problems.append(f"{jsonl}: samples_us has {len(line['samples_us'])} values, samples says {line['metrics']['samples']}")
        # Harness cost: the timed share is exactly the samples' sum, and no part exceeds the case.
        h, m = line["harness"], line["measurement"]
        if not close(h["timed_s"], sum(line["samples_us"]) * 1e-6, 1e-9):
            problems.append(f"{jsonl}: harness timed_s {h['timed_s']} != sum of samples")
        parts = h["timed_s"] + h["between_samples_s"] + h["warmup_s"] + h["setup_and_check_s"]
        if not (h["timed_s"] <= h["case_s"] * (1 + 1e-9) and close(parts, h["case_s"], 1e-6)):
            problems.append(f"{jsonl}: harness parts {parts} do not add up to case_s {h['case_s']}")
        if len(m["warmup_us"]) != m["warmup_runs"] or m["warmup_skipped"] != (m["warmup_runs"] == 0):
            problems.append(f"{jsonl}: warm-up record inconsistent: {m}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("bench")
    parser.add_argument("out_dir")
    parser.add_argument("--expect", action="append", default=[], help="FILE:ROWS[:OK_ROWS]")
    parser.add_argument("--exit-code", type=int, default=0)
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    a = parser.parse_args(argv[:split])
    extra = argv[split + 1:]
    shutil.rmtree(a.out_dir, ignore_errors=True)
    cmd = [a.bench, "--report-dir-path", a.out_dir, "--quiet", "--min-time", "0.01", "--max-time", "0.3"] + extra
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    problems = []
    if proc.returncode != a.exit_code:
        problems.append(f"exit code {proc.returncode}, expected {a.exit_code}; stderr: {proc.stderr}")
    for spec in a.expect:
        name, *counts = spec.split(":")
        rows = int(counts[0])
        ok = int(counts[1]) if len(counts) > 1 else rows
        path = os.path.join(a.out_dir, name)
        if not os.path.exists(path):
            problems.append(f"{path} was not written")
            continue
        problems += check_csv(path, rows, ok)
    env_path = os.path.join(a.out_dir, "environment.json")
    if not os.path.exists(env_path):
        problems.append("environment.json was not written")
    else:
        with open(env_path) as f:
            env = json.load(f)
        for key in ("command_line", "git_revision", "start_time", "end_time", "cpu", "libraries"):
            if not env.get(key):
                problems.append(f"environment.json: {key} is empty")
    if "time_us" not in proc.stdout:
        problems.append("no table on stdout")
    if problems:
        print("command:", " ".join(cmd))
        print("\n".join(problems))
        return 1
    print(f"ok: {' '.join(a.expect)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
