#!/usr/bin/env python3
"""Checks a run's Prometheus file and Markdown summary: the .prom passes check_prom.py (promtool,
HELP, labels that identify the case, every sample equal to its CSV cell in base units), and the
summary has its environment, results and the best row by the headline figure.

Usage: check_prom_summary.py PROM CSV SUMMARY
"""
import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_prom import check_file  # noqa: E402

from report_check import verdict


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("prom")
    p.add_argument("csv")
    p.add_argument("summary")
    a = p.parse_args()
    problems, checked = check_file(a.prom, a.csv)
    rows = list(csv.DictReader(open(a.csv, newline="")))
    summary = open(a.summary).read()
    for section in ("## Environment", "## Results", "| command line |", "| opbench |", f"{len(rows)} cases:",
                    "## Where the time went", "| timed samples |"):
        if section not in summary:
            problems.append(f"{a.summary}: no '{section}'")
    return verdict(problems, None, f"ok: {checked} samples equal their CSV cells, summary of {len(rows)} rows")


if __name__ == "__main__":
    sys.exit(main())
