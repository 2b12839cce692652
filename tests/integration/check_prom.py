#!/usr/bin/env python3
"""Checks opbench's Prometheus textfiles against Prometheus' own linter and their CSVs.

For every .prom given (or found under a folder given), with the CSV of the same name beside it:
1. `promtool check metrics` accepts it without a word (naming, units, HELP, TYPE);
2. every family has a HELP that says what it is (not "opbench metric", not the fallback for a
   column the writer has no description of) and TYPE gauge;
3. labels identify the case and nothing more: no label that describes a run (status, algo,
   working_set_bytes, ...) outside the `_info` families, and `<prefix>_case_info` has one sample
   per CSV row; `<prefix>_run_info` names the run;
4. every sample equals its CSV cell in base units: the HELP names the columns a family comes
   from ("time_us (stat=mean)"); the sample whose labels match one CSV row must be that row's
   cell times the unit's factor, worked out here from the column's name (_us: 1e-6, _ms: 1e-3,
   _gbps: 1e9, tflops: 1e12, _mhz: 1e6, pct_: 0.01, _gib: 2^30).

Usage: check_prom.py PATH [PATH ...]    (exit 1 with every problem listed)
"""
import csv
import glob
import math
import os
import re
import subprocess
import sys

from report_check import verdict

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
SOURCE = re.compile(r'([a-z0-9_]+)(?: \(([a-z_]+)=([a-z0-9_]+)\))?')
SOURCES = re.compile(r" From the report's columns? (.*)$")
DESCRIBES_RUN = {"status", "algo", "engine", "working_set_bytes", "launches_per_sample", "iters",
                 "wrong", "aggregation", "roof", "times_from", "time_from", "source", "note", "fits"}


def unit_factor(column):
    if column.endswith("_us"):
        return 1e-6
    if column.endswith("_ms"):
        return 1e-3
    if column.endswith("_gbps"):
        return 1e9
    if column.startswith("tflops") or column == "peak_tflops":
        return 1e12
    if column.endswith("_mhz"):
        return 1e6
    if column.startswith("pct_"):
        return 0.01
    if column.endswith("_gib"):
        return 2.0 ** 30
    return 1.0


def unescape(v):
    return v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")


def parse(path):
    """family -> {help, type, samples: [(labels dict, value)]}"""
    fams = {}
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            _, kind, name, text = (line.split(" ", 3) + [""])[:4]
            fams.setdefault(name, {"samples": []})[kind.lower()] = text
            continue
        m = SAMPLE.match(line)
        if not m:
            raise ValueError(f"{path}: not a sample: {line[:120]}")
        labels = {k: unescape(v) for k, v in LABEL.findall(m.group(2) or "")}
        fams.setdefault(m.group(1), {"samples": []})["samples"].append((labels, float(m.group(3))))
    return fams


def check_file(prom, csv_path):
    problems = []
    lint = subprocess.run(["promtool", "check", "metrics"], stdin=open(prom), capture_output=True,
                          text=True)
    if lint.returncode != 0 or (lint.stdout + lint.stderr).strip():
        problems.append(f"{prom}: promtool check metrics: exit {lint.returncode}: "
                        f"{(lint.stdout + lint.stderr).strip()[:400]}")
    fams = parse(prom)
    rows = list(csv.DictReader(open(csv_path, newline="")))
    infos = [n for n in fams if n.endswith("_case_info")]
    if len(infos) != 1:
        return problems + [f"{prom}: {len(infos)} _case_info families, not 1"], 0
    prefix = infos[0][: -len("_case_info")]
    if len(fams[infos[0]]["samples"]) != len(rows):
        problems.append(f"{prom}: {len(fams[infos[0]]['samples'])} case_info samples for "
                        f"{len(rows)} CSV rows")
    run = fams.get(prefix + "_run_info", {"samples": []})["samples"]
    if len(run) != 1 or not run[0][0].get("run_id"):
        problems.append(f"{prom}: no {prefix}_run_info with a run_id")
    checked = 0
    for name, fam in fams.items():
        help_text = fam.get("help", "")
        if not help_text or help_text == "opbench metric" or "not described" in help_text:
            problems.append(f"{prom}: {name}: HELP says nothing: '{help_text}'")
        if fam.get("type") != "gauge":
            problems.append(f"{prom}: {name}: TYPE {fam.get('type')}, not gauge")
        if name.endswith("_info"):
            continue
        for labels, _ in fam["samples"]:
            bad = DESCRIBES_RUN & set(labels)
            if bad:
                problems.append(f"{prom}: {name}: labels that describe a run: {sorted(bad)}")
                break
        m = SOURCES.search(help_text)
        if not m:
            problems.append(f"{prom}: {name}: HELP names no column")
            continue
        sources = m.group(1).split(", ")
        for source in sources:
            m = SOURCE.fullmatch(source)
            if not m:
                problems.append(f"{prom}: {name}: HELP source '{source}' unreadable")
                continue
            column, label, value = m.groups()
            for labels, v in fam["samples"]:
                if label and labels.get(label) != value:
                    continue
                ident = {k: x for k, x in labels.items() if k != label}
                match = [r for r in rows if all(r.get(k) == x for k, x in ident.items())]
                if len(match) != 1:
                    problems.append(f"{prom}: {name}{labels}: labels match {len(match)} CSV rows, "
                                    "not 1 (they must identify the case)")
                    continue
                cell = match[0].get(column, "")
                want = float(cell) * unit_factor(column) if cell else None
                if want is None or not math.isclose(v, want, rel_tol=1e-5, abs_tol=1e-30):
                    problems.append(f"{prom}: {name}{labels} = {v}, CSV {column} = '{cell}' "
                                    f"(expected {want})")
                checked += 1
    return problems, checked


def main():
    paths = []
    for p in sys.argv[1:]:
        paths += sorted(glob.glob(os.path.join(p, "**", "*.prom"), recursive=True)) \
            if os.path.isdir(p) else [p]
    if not paths:
        print("check_prom.py: no .prom files found in " + " ".join(sys.argv[1:]))
        return 1
    problems, total = [], 0
    for prom in paths:
        found, checked = check_file(prom, prom[: -len(".prom")] + ".csv")
        problems += found
        total += checked
        print(f"{prom}: {checked} samples equal their CSV cells")
    return verdict(problems, None, f"ok: {len(paths)} files pass promtool, {total} samples checked against the CSVs")


if __name__ == "__main__":
    sys.exit(main())
