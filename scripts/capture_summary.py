#!/usr/bin/python3
"""Summary of a capture folder (scripts/capture.sh prints it when the command ends).

Reads every capture-*.csv in DIR (one per process) and prints: the processes, the top shapes by
total time over all processes with their calls, average and p99 (the largest p99 of any process),
and how the captured time splits between GEMMs and communication (collectives and
point-to-point). Shares are of the captured time, not of the job's wall time.

Usage: capture_summary.py [--top N] DIR
Exit 0; 2 when DIR holds no capture files.
"""
import argparse
import csv
import glob
import os
import sys


def shape_of(row):
    if row["kind"] == "gemm":
        dims = f'{row["m"]}x{row["n"]}x{row["k"]}'
        if row["batch"] not in ("", "1"):
            dims = f'b{row["batch"]} {dims}'
        return f'{dims} {row["layout"]}'
    text = f'{row["bytes"]} B (count {row["count"]}, comm {row["comm_size"]}'
    return text + (f', {row["redop"]})' if row["redop"] else ")")


def num(text):
    return float(text) if text not in ("", None) else 0.0


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--top", type=int, default=10)
    p.add_argument("dir")
    args = p.parse_args(argv)
    files = sorted(glob.glob(os.path.join(args.dir, "capture-*.csv")))
    if not files:
        print(f"capture: no capture files in {args.dir} (no intercepted call was made, or the "
              "library could not write there: see the opbench-capture: line above)")
        return 2
    merged = {}
    for path in files:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                key = (row["api"], row["op"], row["dtype"], shape_of(row))
                entry = merged.setdefault(key, {"kind": row["kind"], "calls": 0, "total": 0.0,
                                                "timed": 0, "p99": 0.0, "procs": 0})
                entry["calls"] += int(row["calls"])
                entry["timed"] += int(row["timed_calls"])
                entry["total"] += num(row["total_us"])
                entry["p99"] = max(entry["p99"], num(row["p99_us"]))
                entry["procs"] += 1
    total = sum(e["total"] for e in merged.values())
    gemm = sum(e["total"] for e in merged.values() if e["kind"] == "gemm")
    comm = total - gemm
    print(f"capture: {len(files)} process(es), {len(merged)} shapes, "
          f"{sum(e['calls'] for e in merged.values())} calls, {total / 1e3:.1f} ms captured "
          f"in {args.dir}")
    rows = sorted(merged.items(), key=lambda kv: -kv[1]["total"])[:args.top]
    print(f"  {'api':<26}{'op':<15}{'dtype':<7}{'shape':<36}{'calls':>9}{'total_ms':>11}"
          f"{'avg_us':>11}{'p99_us':>11}{'share':>8}")
    for (api, op, dtype, shape), e in rows:
        avg = e["total"] / e["timed"] if e["timed"] else 0.0
        share = 100.0 * e["total"] / total if total else 0.0
        print(f"  {api:<26}{op:<15}{dtype:<7}{shape:<36}{e['calls']:>9}{e['total'] / 1e3:>11.2f}"
              f"{avg:>11.1f}{e['p99']:>11.1f}{share:>7.1f}%")
    if total:
        print(f"  GEMM {100.0 * gemm / total:.1f}% and communication {100.0 * comm / total:.1f}% "
              "of the captured time")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
