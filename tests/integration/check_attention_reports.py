#!/usr/bin/env python3
"""Runs bench_attention for real and reads its CSV back: the row count, every ok row's FLOPs from
its own dims (FlashAttention-3 convention), tflops = flops / time, and the check's error under its
tolerance.

Usage: check_attention_reports.py BENCH OUT_DIR --rows N -- ARGS...
"""
import os
import sys

from report_check import close, environment_problems, exit_problem, check_parser, parse, read_csv, run, verdict

REQUIRED = ("model batch_size seqlen_q seqlen_kv num_head_q num_head_kv head_dim_qk head_dim_v causal dtype pass "
            "backend provider time_us median_us min_us max_us stddev_us samples flops tflops io_bytes mem_bw_gbps "
            "pct_peak_flops max_abs_err status note").split()


def fwd_flops(r) -> int:
    b, sq, skv, hq = (int(r[c]) for c in ("batch_size", "seqlen_q", "seqlen_kv", "num_head_q"))
    d = int(r["head_dim_qk"]) + int(r["head_dim_v"])
    two_savg = (max(0, skv - sq) + skv) if r["causal"] == "true" else 2 * skv
    return b * hq * sq * two_savg * d


def main() -> int:
    parser = check_parser()
    parser.add_argument("--rows", type=int, required=True)
    a, extra = parse(parser)
    path = os.path.join(a.out_dir, "att.csv")
    cmd = [a.bench, "--report-csv-path", path, "--quiet", "--min-time", "0.01", "--max-time", "0.5"] + extra
    proc = run(cmd, a.out_dir)
    problems = exit_problem(proc)
    rows = read_csv(path) if os.path.exists(path) else []
    if rows and [c for c in REQUIRED if c not in rows[0]]:
        problems.append(f"missing columns {[c for c in REQUIRED if c not in rows[0]]}")
    if len(rows) != a.rows:
        problems.append(f"{len(rows)} rows, expected {a.rows}")
    for r in rows:
        where = f"{r['model']} s{r['seqlen_q']} {r['pass']}"
        if r["status"] != "ok":
            problems.append(f"{where}: {r['status']} {r['note']}")
            continue
        expected = fwd_flops(r) if r["pass"] == "fwd" else (5 * fwd_flops(r) + 1) // 2
        if int(r["flops"]) != expected:
            problems.append(f"{where}: flops {r['flops']} != {expected}")
        if not close(float(r["tflops"]), int(r["flops"]) / float(r["time_us"]) / 1e6):
            problems.append(f"{where}: tflops != flops / time")
        if r["max_abs_err"] and not float(r["max_abs_err"]) <= float(r["check_tolerance"]):
            problems.append(f"{where}: error {r['max_abs_err']} above tolerance {r['check_tolerance']}")
    problems += environment_problems(a.out_dir)
    return verdict(problems, cmd, f"ok: {len(rows)} rows")


if __name__ == "__main__":
    sys.exit(main())
