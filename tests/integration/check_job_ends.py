#!/usr/bin/env python3
"""Runs a job that must end by itself, failed: a non-zero exit within --within seconds, with
every --stderr text on stderr (the rank, host and case that went wrong). A job still running at
twice the limit is killed and fails the test.

Usage: check_job_ends.py --within SECONDS [--stderr TEXT]... -- COMMAND...
"""
import argparse
import subprocess
import sys
import time


def main() -> int:
    argv = sys.argv[1:]
    split = argv.index("--")
    parser = argparse.ArgumentParser()
    parser.add_argument("--within", type=float, required=True)
    parser.add_argument("--stderr", action="append", default=[])
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
    print(f"exit {proc.returncode} after {took:.1f} s")
    if problems:
        print("\n".join(problems) + "\nstderr:\n" + proc.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
