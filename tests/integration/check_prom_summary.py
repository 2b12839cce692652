#!/usr/bin/env python3
"""Checks a run's Prometheus file and Markdown summary: every line of the .prom is a HELP/TYPE
comment or a sample `opbench_<binary>_<metric>{label="...",...} <number>`, every metric named in
--metric has one sample per CSV row, and the summary has its environment, results and the
best row by the headline figure.

Usage: check_prom_summary.py PROM CSV SUMMARY --metric NAME ...
"""
import argparse
import csv
import re
import sys

SAMPLE = re.compile(r'^(opbench_[a-z]+_[a-z0-9_]+)\{([a-z_]+="(?:[^"\\]|\\.)*"(?:,[a-z_]+="(?:[^"\\]|\\.)*")*)\} (-?[0-9.e+-]+)$')


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("prom")
    p.add_argument("csv")
    p.add_argument("summary")
    p.add_argument("--metric", action="append", default=[])
    a = p.parse_args()
    problems, counts = [], {}
    for n, line in enumerate(open(a.prom), 1):
        line = line.rstrip("\n")
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            continue
        m = SAMPLE.match(line)
        if not m:
            problems.append(f"{a.prom}:{n}: not a Prometheus sample: {line[:120]}")
            continue
        float(m.group(3))
        counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    rows = list(csv.DictReader(open(a.csv, newline="")))
    for metric in a.metric:
        if counts.get(metric) != len(rows):
            problems.append(f"{metric}: {counts.get(metric, 0)} samples for {len(rows)} rows")
    summary = open(a.summary).read()
    for section in ("## Environment", "## Results", "| command line |", "| opbench |", f"{len(rows)} cases:",
                    "## Where the time went", "| timed samples |"):
        if section not in summary:
            problems.append(f"{a.summary}: no '{section}'")
    if problems:
        print("\n".join(problems))
        return 1
    print(f"ok: {sum(counts.values())} samples, summary of {len(rows)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
