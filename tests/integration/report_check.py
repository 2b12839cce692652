"""What the integration checks of every binary's reports share (check_gemm_reports.py,
check_memops_reports.py, check_attention_reports.py, check_ccl_reports.py, check_fsdp_reports.py,
check_step_reports.py): their command line (the check's own options, then `--` and the binary's
arguments), running the binary, reading a CSV, the FILE:ROWS[:OK_ROWS] expectations, the
environment.json every run writes, and the verdict. Each family's check keeps only what it
recomputes from its own formulas."""
import argparse
import csv
import math
import os
import shutil
import subprocess
import sys


def check_parser(expect=False, exit_code=False):
    """The options every check starts with: the binary and the folder its reports go to; with
    expect, --expect FILE:ROWS[:OK_ROWS] (repeatable); with exit_code, --exit-code N."""
    parser = argparse.ArgumentParser()
    parser.add_argument("bench")
    parser.add_argument("out_dir")
    if expect:
        parser.add_argument("--expect", action="append", default=[], help="FILE:ROWS[:OK_ROWS]")
    if exit_code:
        parser.add_argument("--exit-code", type=int, default=0)
    return parser


def parse(parser, argv=None):
    """The check's options (before `--`) and the binary's own arguments (after it)."""
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    return parser.parse_args(argv[:split]), argv[split + 1:]


def run(cmd, out_dir, timeout=600):
    """Runs cmd after removing out_dir (each check starts from an empty folder)."""
    shutil.rmtree(out_dir, ignore_errors=True)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def exit_problem(proc, expected=0, tail=3000):
    """[] when the run exited as expected, else the one problem with its output's tail."""
    if proc.returncode == expected:
        return []
    return [f"exit code {proc.returncode}, expected {expected}\nstdout: {proc.stdout[-tail:]}\n"
            f"stderr: {proc.stderr[-tail:]}"]


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def close(a, b, rel=2e-6):
    return math.isclose(a, b, rel_tol=rel)


def expected_files(out_dir, specs, problems):
    """(path, rows, ok_rows) of each FILE:ROWS[:OK_ROWS] spec whose file the run wrote; a missing
    file is a problem."""
    for spec in specs:
        name, *counts = spec.split(":")
        rows = int(counts[0])
        ok = int(counts[1]) if len(counts) > 1 else rows
        path = os.path.join(out_dir, name)
        if not os.path.exists(path):
            problems.append(f"{path} was not written")
            continue
        yield path, rows, ok


def count_problems(path, rows, expected_rows, expected_ok, what):
    """The row count and the ok-row count against the expectation; `what(row)` names a row that
    is not ok."""
    problems = []
    if len(rows) != expected_rows:
        problems.append(f"{path}: {len(rows)} rows, expected {expected_rows}")
    ok = sum(r["status"] == "ok" for r in rows)
    if ok != expected_ok:
        problems.append(f"{path}: {ok} ok rows, expected {expected_ok}: "
                        + "; ".join(f"{what(r)}: {r['status']} {r['note']}" for r in rows if r["status"] != "ok"))
    return problems


def environment_problems(out_dir):
    path = os.path.join(out_dir, "environment.json")
    return [] if os.path.exists(path) else ["environment.json was not written"]


def report_verdict(proc, problems, cmd, expected_files):
    """The ending of a check of a binary's reports: it printed its table, then the verdict."""
    if "time_us" not in proc.stdout:
        problems.append("no table on stdout")
    return verdict(problems, cmd, f"ok: {' '.join(expected_files)}")


def verdict(problems, cmd, ok_line):
    """Prints each problem as a FAIL: line and their count (after the command, when there is
    one), or the ok line; the check's exit code. Every integration check ends with it."""
    if problems:
        if cmd:
            print("command:", " ".join(cmd))
        for p in problems:
            print("FAIL:", p)
        print(f"{len(problems)} problem{'s' if len(problems) > 1 else ''}")
        return 1
    print(ok_line)
    return 0
