#!/usr/bin/env python3
"""Runs a job that must end by itself, failed: a non-zero exit within --within seconds, with
every --stderr text on stderr (the rank, host and case that went wrong). A job still running at
twice the limit is killed and fails the test.

With --failed-row CSV TEXT, the report CSV must end with a row of status `failed` whose note
holds TEXT: an aborted run leaves its last case and the reason. With --ok-rows CSV N, the CSV
must hold N rows, every one `ok`: a job ended after its last case keeps every row it finished.

Usage: check_job_ends.py --within SECONDS [--stderr TEXT]... [--failed-row CSV TEXT]
                         [--ok-rows CSV N] -- COMMAND...
"""
import argparse
import csv
import os
import subprocess
import sys
import time


def main() -> int:
    argv = sys.argv[1:]
    split = argv.index("--")
    parser = argparse.ArgumentParser()
    parser.add_argument("--within", type=float, required=True)
    parser.add_argument("--stderr", action="append", default=[])
    parser.add_argument("--failed-row", nargs=2, metavar=("CSV", "TEXT"))
    parser.add_argument("--ok-rows", nargs=2, metavar=("CSV", "N"))
    a = parser.parse_args(argv[:split])
    start = time.monotonic()
    try:
        proc = subprocess.run(argv[split + 1:], capture_output=True, text=True, timeout=2 * a.within)
    except subprocess.TimeoutExpired:
        print(f"FAIL: still running after {2 * a.within:.0f} s: a hang")
        return 1
    took = time.monotonic() - start
    problems = []
    if proc.returncode == 0:
        problems.append("exit code 0, expected a failure")
    if took > a.within:
        problems.append(f"took {took:.1f} s, more than {a.within} s")
    for text in a.stderr:
        if text not in proc.stderr:
            problems.append(f"stderr lacks {text!r}")
    if a.failed_row:
        path, text = a.failed_row
        rows = list(csv.DictReader(open(path, newline=""))) if os.path.exists(path) else []
        if not rows or rows[-1]["status"] != "failed" or text not in rows[-1]["note"]:
            problems.append(f"{path}: the last row is not the aborted case, failed, with {text!r}: "
                            f"{rows[-1] if rows else 'no rows'}")
    if a.ok_rows:
        path, count = a.ok_rows
        rows = list(csv.DictReader(open(path, newline=""))) if os.path.exists(path) else []
        statuses = [r["status"] for r in rows]
        if statuses != ["ok"] * int(count):
            problems.append(f"{path}: expected {count} rows, all ok; found {statuses}")
    print(f"exit {proc.returncode} after {took:.1f} s")
    if problems:
        print("\n".join(problems) + "\nstderr:\n" + proc.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
