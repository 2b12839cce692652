#!/usr/bin/python3
"""Calibrates compare_reports.py's rerun noise on this machine: runs bench_gemm --model tiny,
bench_memops --model tiny, bench_step --model tiny and 2-rank bench_ccl several times back to back, with nothing changed,
and prints for each how far its reruns' rows differ against the spread of their samples (cv): the
rerun floor the pairs need beyond RERUN_K x cv (pass it as --rerun-floor), and then what
compare_reports.py itself says of each rerun against the one before (the gate must pass them all)
and of the first half of the runs against the second (several runs a side), also with every time of
the second half made SLOWER percent longer: a change below the one-run floor that several runs a
side still catch.

    bench/compare/rerun_floor.py [--runs 12] [--slower 20] [--build build] [--out DIR] [--tables-only]
                                 [--only gemm,memops,step,ccl]

A figure of this machine, not a test: run it with nothing else busy; docs/scripts.md gives the
figures the shipped RERUN_K and floors came from.
"""
import argparse
import csv
import importlib.util
import itertools
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
spec = importlib.util.spec_from_file_location("compare_reports", os.path.join(ROOT, "scripts", "compare_reports.py"))
compare = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare)

MPIRUN = ["mpirun", "-np", "2", "--oversubscribe", "--allow-run-as-root"]
THRESHOLD = 5.0


def commands(build):
    return {
        "gemm tiny": ([f"{build}/gemm/bench_gemm", "--model", "tiny"], ["gemm_tiny.csv"]),
        "memops tiny": ([f"{build}/memops/bench_memops", "--model", "tiny"], ["memops_tiny.csv"]),
        "step tiny": ([f"{build}/step/bench_step", "--model", "tiny"], ["step.csv", "step_operators.csv"]),
        "ccl 2 ranks": (MPIRUN + [f"{build}/collectives/bench_ccl"],
                        [f"ccl_{op}.csv" for op in ("all_reduce", "all_gather", "reduce_scatter",
                                                    "all_to_all", "broadcast", "reduce", "send_recv")]),
    }


def run(command, folder):
    result = subprocess.run(command + ["--report-dir-path", folder], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed: {result.stderr.strip().splitlines()[-1:]}")


def pair_figures(base_path, new_path):
    """(rows compared, the largest change as a factor either way (%), the floor the rows beyond
    RERUN_K x cv need) of a pair."""
    base, columns, kind = compare.read(base_path)
    new, new_columns, _ = compare.read(new_path)
    column, higher = next((c, hi) for c, hi in compare.FIGURES if c in columns)
    keys = compare.case_keys(kind, columns, new_columns)
    by_key = {compare.case_key(r, keys): r for r in new}
    compared, worst, floor = 0, 0.0, 0.0
    for row in base:
        other = by_key.get(compare.case_key(row, keys))
        if other is None:
            continue
        b, n = compare.Side([row], column), compare.Side([other], column)
        if not b.value or not n.value:
            continue
        compared += 1
        ratio = n.value / b.value if higher else b.value / n.value
        change = (ratio - 1) * 100
        factor = (max(ratio, 1 / ratio) - 1) * 100  # as compare_reports.py weighs noise
        worst = max(worst, factor)
        flag, _ = compare.verdict(b, n, change, THRESHOLD, 0.0)
        if flag in ("REGRESSION", "better"):  # beyond the threshold, the band and K x cv
            floor = max(floor, factor)
    return compared, worst, floor


def gate(base, new, files):
    """compare_reports.py over the files, base and new: lists of folders. Returns (the worst exit
    status, rows regressed, rows compared)."""
    codes, regressed, compared = [], 0, 0
    for f in files:
        if not all(os.path.exists(os.path.join(d, f)) for d in base + new):
            continue
        result = subprocess.run(
            [sys.executable, os.path.join(ROOT, "scripts", "compare_reports.py"),
             ",".join(os.path.join(d, f) for d in base), ",".join(os.path.join(d, f) for d in new)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        codes.append(result.returncode)
        count = re.search(r"(\d+) rows? compared .*: (\d+) regressed", result.stdout)
        if count:
            compared += int(count.group(1))
            regressed += int(count.group(2))
    return (max(codes) if codes else None), regressed, compared


def gate_text(result):
    """A gate's cell: compare_reports.py's worst exit and the rows it flagged, or why none ran."""
    code, regressed, compared = result
    if code is None:
        return "no report in every run"
    return f"exit {code}: {regressed} of {compared} rows regressed"


TIMES = {"time_us", "median_us", "min_us", "max_us", "p50_us", "p99_us", "min_time_us", "max_time_us",
         "iter_min_us", "iter_max_us", "step_time_ms"}
RATES = {"tflops", "busbw_gbps", "algbw_gbps", "busbw_all_groups_gbps", "algbw_all_groups_gbps", "mem_bw_gbps"}


def slowed(folder, files, percent, out):
    """A copy of a run's reports in `out` with every time `percent` longer and every rate lower."""
    os.makedirs(out, exist_ok=True)
    factor = 1 + percent / 100
    for f in files:
        if not os.path.exists(os.path.join(folder, f)):
            continue
        with open(os.path.join(folder, f), newline="") as src:
            rows = list(csv.DictReader(src))
        with open(os.path.join(out, f), "w", newline="") as dst:
            writer = csv.DictWriter(dst, fieldnames=list(rows[0].keys()) if rows else [])
            writer.writeheader()
            for row in rows:
                for column in TIMES | RATES:
                    value = compare.number(row.get(column))
                    if value is not None:
                        row[column] = f"{value * factor if column in TIMES else value / factor:.6g}"
                writer.writerow(row)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=12, help="reruns of each (default 12: 11 back-to-back pairs, six runs a side)")
    parser.add_argument("--slower", type=float, default=20.0, help="percent the slowed second half's times grow (default 20)")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--tables-only", action="store_true",
                        help="run nothing: the table of the reports an earlier run left in --out")
    parser.add_argument("--out", help="folder for the reports (default: a temporary one)")
    parser.add_argument("--only", metavar="B[,B...]", default="gemm,memops,step,ccl",
                        help="the binaries, by the first word of their rows (default all: gemm,memops,step,ccl)")
    args = parser.parse_args()
    if args.tables_only and not args.out:
        print("error: --tables-only: name the folder of an earlier run with --out", file=sys.stderr)
        return 2
    if args.runs < 2:
        print(f"error: --runs: needs at least 2 runs to compare, got {args.runs}", file=sys.stderr)
        return 2
    every = commands(args.build)
    binaries = [n.split()[0] for n in every]
    only = args.only.split(",")
    unknown = [b for b in only if b not in binaries]
    if unknown:
        print(f"error: --only: unknown {', '.join(unknown)} (accepted: {', '.join(binaries)})",
              file=sys.stderr)
        return 2
    out = args.out or tempfile.mkdtemp(prefix="rerun_floor.")
    print(f"RERUN_K {compare.RERUN_K:g}; threshold {THRESHOLD:g}%; "
          f"{'the runs found' if args.tables_only else f'{args.runs} runs each'}, reports in {out}\n")
    print("| binary | runs | row pairs | largest change | floor needed beyond K x cv | shipped floor "
          f"| reruns passed (i+1 against i) | half against half | half against half {args.slower:g}% slower |")
    print("|---|---:|---:|---:|---:|---:|---|---|---|")
    for name, (command, files) in every.items():
        if name.split()[0] not in only:
            continue
        runs = args.runs
        if args.tables_only:  # the runs an earlier call left, however many
            runs = 0
            while os.path.isdir(os.path.join(out, f"{name.replace(' ', '_')}-{runs}")):
                runs += 1
        folders = [os.path.join(out, f"{name.replace(' ', '_')}-{i}") for i in range(runs)]
        for folder in folders:
            if not args.tables_only:
                run(command, folder)
        figures = [pair_figures(os.path.join(a, f), os.path.join(b, f))
                   for a, b in itertools.combinations(folders, 2) for f in files
                   if os.path.exists(os.path.join(a, f)) and os.path.exists(os.path.join(b, f))]
        if len(folders) < 2 or not figures:
            print(f"error: {out}: no two runs of {name} with reports ({name.replace(' ', '_')}-0, -1, ...)",
                  file=sys.stderr)
            return 2
        gates = [gate([a], [b], files)[0] for a, b in zip(folders, folders[1:])]
        half = runs // 2
        halves = gate_text(gate(folders[:half], folders[half:], files)) if half >= 2 else "n/a"
        slow = [slowed(f, files, args.slower, f"{f}-slower") for f in folders[half:]]
        caught = gate_text(gate(folders[:half], slow, files)) if half >= 2 else "n/a"
        # the floor of each report kind the binary writes (bench_step: step.csv's, step_operators.csv's)
        kinds = sorted({compare.read(os.path.join(folders[0], f))[2] for f in files
                        if os.path.exists(os.path.join(folders[0], f))})
        floors = " / ".join(f"{compare.HOST_RERUN_FLOOR.get(k, 0.0):g}%" for k in kinds)
        print(f"| {name} | {runs} | {sum(f[0] for f in figures)} | {max(f[1] for f in figures):.1f}% "
              f"| {max(f[2] for f in figures):.1f}% | {floors} "
              f"| {sum(1 for c in gates if c == 0)} of {len(gates)} | {halves} | {caught} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
