#!/usr/bin/env python3
"""Runs bench_memops for real and reads its reports back.

Checks every CSV it is told about: the required columns, the row count, and for each row the
bytes recomputed here from the operator's own formula (docs/formulas.md, "Memory-bound
operators") — written out again independently of the C++ — then io = read + write,
mem_bw_gbps = io / time, copy_gbps = copied / time, pct_peak_bw = mem_bw / roof_gbps and
pct_of_copy = mem_bw / copy_rate_gbps, one copy rate for every row of a run but the link copies';
copy_same_bytes_gbps on exactly the CPU rows of device memory under 16 MiB moved (not the copy
itself, not a link copy), and pct_of_copy_same_bytes = mem_bw / copy_same_bytes_gbps. With
--checked every ok row must say check=passed.

Usage: check_memops_reports.py BENCH OUT_DIR --expect FILE:ROWS[:OK_ROWS] [--checked]
       [--exit-code N] [--ops-covered] -- ARGS...
"""
import csv
import sys

from report_check import close, count_problems, expected_files, exit_problem, check_parser, parse, report_verdict, run

REQUIRED = ("model op pass rows cols dtype backend provider device time_us samples rse read_bytes "
            "write_bytes io_bytes mem_bw_gbps copied_bytes copy_gbps pct_peak_bw roof_gbps roof copy_rate_gbps "
            "pct_of_copy copy_same_bytes_gbps pct_of_copy_same_bytes impl "
            "check max_abs_err tolerance status note").split()
SIZE = {"fp32": 4, "bf16": 2, "fp16": 2}
F32, ID = 4, 8
COPIES = {"copy", "h2d", "d2h", "h2d_pageable", "d2h_pageable", "peer", "peer_all"}
# The eager kernels by the elements they read and write per element (an in-place kernel reads and
# writes its updated operand): docs/formulas.md, "Memory-bound operators".
EAGER = {"mul": (2, 1), "scale": (1, 1), "sqrt": (1, 1), "fill": (0, 1), "scale_inplace": (1, 1),
         "axpy_inplace": (2, 1), "addcdiv_inplace": (3, 1)}
NON_COPY = ("add rmsnorm add_rmsnorm layernorm softmax swiglu gelu rope cross_entropy embedding adamw adamw_bf16 "
            "cast_to_bf16 cast_to_fp32 fp8_quantize silu").split() + list(EAGER)


def expected_bytes(r: dict) -> tuple:
    """(read, write) for a row, from its op, pass, shape and dtype."""
    op, fwd = r["op"], r["pass"] == "fwd"
    rows, cols, s = int(r["rows"]), int(r["cols"]), SIZE[r["dtype"]]
    n = rows * cols
    if op == "add":
        return 2 * n * s, n * s
    if op == "rmsnorm":
        return (n * s + cols * s, n * s + rows * F32) if fwd else (2 * n * s + cols * s + rows * F32, n * s + cols * s)
    if op == "add_rmsnorm":  # x, residual, w -> y, residual_out, rstd
        return 2 * n * s + cols * s, 2 * n * s + rows * F32
    if op == "layernorm":
        return (n * s + 2 * cols * s, n * s + 2 * rows * F32) if fwd else (2 * n * s + cols * s + 2 * rows * F32, n * s + 2 * cols * s)
    if op in EAGER:
        return EAGER[op][0] * n * s, EAGER[op][1] * n * s
    if op in ("softmax", "gelu", "silu"):
        return (n * s, n * s) if fwd else (2 * n * s, n * s)
    if op == "swiglu":
        return (2 * n * s, n * s) if fwd else (3 * n * s, 2 * n * s)
    if op == "rope":
        return n * s + rows * int(r["head_dim"]) * F32, n * s
    if op == "cross_entropy":
        return n * s + rows * ID, n * s + rows * F32
    if op == "embedding":
        return rows * ID + n * s, n * s if fwd else int(r["vocab"]) * cols * s
    if op == "adamw":
        return 16 * n, 12 * n
    if op == "adamw_bf16":
        return 14 * n, 14 * n
    if op == "cast_to_bf16":
        return 4 * n, 2 * n
    if op == "cast_to_fp32":
        return 2 * n, 4 * n
    if op == "fp8_quantize":
        return 2 * n + F32, n + F32
    if op in COPIES:
        copied = n * s * (int(r["devices"]) if op == "peer_all" else 1)
        return copied, copied
    raise ValueError(f"unknown op {op}")


def check_csv(path: str, rows_expected: int, ok_expected: int, checked: bool) -> list:
    problems = []
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
        f.seek(0)
        header = next(csv.reader(f))
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        problems.append(f"{path}: missing columns {missing}")
        return problems
    problems += count_problems(path, rows, rows_expected, ok_expected, lambda r: f"{r['op']} {r['pass']}")
    copy_rates = set()
    for i, r in enumerate(rows):
        where = f"{path} row {i + 2} ({r['op']} {r['pass']} {r['rows']}x{r['cols']} {r['dtype']})"
        read, write = expected_bytes(r)
        if (int(r["read_bytes"]), int(r["write_bytes"])) != (read, write):
            problems.append(f"{where}: read/write {r['read_bytes']}/{r['write_bytes']}, recomputed {read}/{write}")
        if int(r["io_bytes"]) != read + write:
            problems.append(f"{where}: io_bytes {r['io_bytes']} != read + write")
        link = r["op"] in COPIES and r["op"] != "copy"
        if link and (r["copy_rate_gbps"] or r["pct_of_copy"]):
            problems.append(f"{where}: a copy over a link has copy_rate_gbps/pct_of_copy")
        if not link and not (r["copy_rate_gbps"] and float(r["copy_rate_gbps"]) > 0):
            problems.append(f"{where}: no copy rate (copy_rate_gbps {r['copy_rate_gbps']!r})")
        elif not link:
            copy_rates.add(r["copy_rate_gbps"])
        same = r["copy_same_bytes_gbps"]
        wants_same = (not link and r["op"] != "copy" and r["backend"] == "cpu"
                      and read + write < 1 << 24 and r["time_us"] != "")
        if wants_same and not (same and float(same) > 0):
            problems.append(f"{where}: {read + write} bytes moved and no copy_same_bytes_gbps")
        if not wants_same and r["backend"] == "cpu" and (same or r["pct_of_copy_same_bytes"]):
            problems.append(f"{where}: copy_same_bytes_gbps {same!r} where none is measured")
        if r["status"] != "ok":
            continue
        t = float(r["time_us"])
        if same:
            want = 100 * (read + write) / t / 1e3 / float(same)
            if not close(float(r["pct_of_copy_same_bytes"] or "nan"), want, 1e-3):
                problems.append(f"{where}: pct_of_copy_same_bytes {r['pct_of_copy_same_bytes']} "
                                f"!= 100 mem_bw / copy of the same bytes {want}")
        if not link and r["copy_rate_gbps"]:
            want = 100 * (read + write) / t / 1e3 / float(r["copy_rate_gbps"])
            if not close(float(r["pct_of_copy"] or "nan"), want, 1e-3):
                problems.append(f"{where}: pct_of_copy {r['pct_of_copy']} != 100 mem_bw / copy rate {want}")
        if not close(float(r["mem_bw_gbps"]), (read + write) / t / 1e3, 1e-4):
            problems.append(f"{where}: mem_bw_gbps {r['mem_bw_gbps']} != io / time {(read + write) / t / 1e3}")
        if r["op"] in COPIES:
            if not close(float(r["copy_gbps"]), int(r["copied_bytes"]) / t / 1e3, 1e-4):
                problems.append(f"{where}: copy_gbps {r['copy_gbps']} != copied / time")
        elif r["copied_bytes"] or r["copy_gbps"]:
            problems.append(f"{where}: copied_bytes/copy_gbps set on an operator that copies nothing")
        if r["roof_gbps"]:
            want = 100 * float(r["mem_bw_gbps"]) / float(r["roof_gbps"])
            # Above a measured roof the row is at 100% and its note gives both figures.
            if r["roof"].startswith("best loop: ") and want > 100:
                want = 100.0
                if "above the measured roof" not in r["note"]:
                    problems.append(f"{where}: above the measured roof without a note saying so")
            if not close(float(r["pct_peak_bw"]), want, 1e-4):
                problems.append(f"{where}: pct_peak_bw {r['pct_peak_bw']} != 100 mem_bw / roof {want}")
            if not 0 <= float(r["pct_peak_bw"]) <= 100:
                problems.append(f"{where}: pct_peak_bw {r['pct_peak_bw']} outside 0-100")
        if checked and r["check"] != "passed":
            problems.append(f"{where}: check is {r['check']!r}, expected passed")
        if checked and r["op"] not in COPIES and not (float(r["max_abs_err"]) <= float(r["tolerance"])):
            problems.append(f"{where}: max_abs_err {r['max_abs_err']} above tolerance {r['tolerance']}")
    if len(copy_rates) > 1:
        problems.append(f"{path}: {len(copy_rates)} copy rates in one run: {sorted(copy_rates)}")
    return problems


def main() -> int:
    parser = check_parser(expect=True, exit_code=True)
    parser.add_argument("--checked", action="store_true", help="every ok row passed --check")
    parser.add_argument("--ops-covered", action="store_true",
                        help="every operator other than the copies has an ok row, fwd and bwd where it has one")
    a, extra = parse(parser)
    cmd = [a.bench, "--report-dir-path", a.out_dir, "--quiet", "--min-time", "0.01", "--max-time", "0.2"] + extra
    proc = run(cmd, a.out_dir, timeout=900)
    problems = exit_problem(proc, a.exit_code)
    seen = set()
    for path, rows, ok in expected_files(a.out_dir, a.expect, problems):
        problems += check_csv(path, rows, ok, a.checked)
        with open(path, newline="") as f:
            seen |= {(r["op"], r["pass"]) for r in csv.DictReader(f) if r["status"] == "ok"}
    if a.ops_covered:
        backward = {"rmsnorm", "layernorm", "softmax", "swiglu", "gelu", "rope", "embedding", "silu"}
        for op in NON_COPY:
            for p in ("fwd", "bwd") if op in backward else ("fwd",):
                if (op, p) not in seen:
                    problems.append(f"no ok row for {op} {p}")
    return report_verdict(proc, problems, cmd, a.expect)


if __name__ == "__main__":
    sys.exit(main())
