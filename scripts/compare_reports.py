#!/usr/bin/python3
"""Compares two opbench CSV reports of the same kind (bench_gemm, bench_attention, bench_ccl or
bench_fsdp): rows are matched by their arguments, and each row's headline figure is compared —
TFLOPS for GEMM and attention, bus bandwidth for collectives (higher is better), else the time.

Prints a Markdown table of ratios (new / base, oriented so that above 1 is better) and flags
changes beyond --threshold. Exits 1 when any row regressed beyond the threshold, went from ok to
skipped or failed, or is missing from NEW; 0 otherwise; 2 on bad input. Usable as a CI gate:

    scripts/compare_reports.py baseline/gemm_llama3.1-70b.csv new/gemm_llama3.1-70b.csv --threshold 5
"""
import argparse
import csv
import math
import sys

# Columns that say which case a row is (whichever of them a report has), in table order.
KEY_COLUMNS = ["unit", "phase", "model", "gemm", "op", "label", "pass", "m", "n", "k", "batch", "transa", "transb",
               "batch_size", "seqlen_q", "seqlen_kv", "num_head_q", "num_head_kv", "head_dim_qk", "head_dim_v",
               "causal", "world_size", "group_size", "size_bytes", "placement", "redop", "root", "dtype",
               "out_dtype", "tp", "micro_batch", "seqlen", "backend"]
# Headline figures, best first: (column, higher is better)
FIGURES = [("tflops", True), ("busbw_gbps", True), ("time_us", False)]


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def read(path: str):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except FileNotFoundError:
        fail(f"{path}: no such file")
    except IsADirectoryError:
        fail(f"{path}: is a directory, expected a CSV report")
    except (UnicodeDecodeError, csv.Error) as e:
        fail(f"{path}: not a CSV report ({e})")
    if not rows:
        fail(f"{path}: no rows")
    if "status" not in rows[0]:
        fail(f"{path}: not an opbench report (no status column)")
    return rows


def number(text: str):
    try:
        v = float(text)
        return v if math.isfinite(v) else None
    except (TypeError, ValueError):
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--threshold", type=float, default=5.0, help="percent change that counts (default 5)")
    args = parser.parse_args()
    if not args.threshold >= 0:
        fail(f"--threshold: must be a percentage >= 0, got {args.threshold}")
    base, new = read(args.base), read(args.new)
    keys = [c for c in KEY_COLUMNS if c in base[0] and c in new[0]]
    if not keys:
        fail("the two reports share no argument columns: are they of the same kind?")
    figure = next(((c, hi) for c, hi in FIGURES if c in base[0] and c in new[0]), None)
    if figure is None:
        fail("the two reports share no figure to compare (tflops, busbw_gbps or time_us)")
    column, higher_better = figure

    def key(row):
        return tuple(row[c] for c in keys)

    base_rows, new_rows = {key(r): r for r in base}, {key(r): r for r in new}
    shown = [c for c in keys if len({r[c] for r in base} | {r[c] for r in new}) > 1] or keys[:1]
    print(f"| {' | '.join(shown)} | base {column} | new {column} | ratio | change | |")
    print("|" + "---|" * (len(shown) + 5))
    regressions = improvements = compared = 0
    for k, b in base_rows.items():
        label = " | ".join(b[c] for c in shown)
        n = new_rows.get(k)
        if n is None:
            print(f"| {label} | {b[column]} | missing | | | REGRESSION |")
            regressions += 1
            continue
        if b["status"] == "ok" and n["status"] != "ok":
            print(f"| {label} | {b[column]} | {n['status']} | | | REGRESSION: {n['note']} |")
            regressions += 1
            continue
        bv, nv = number(b[column]), number(n[column])
        if bv is None or nv is None or bv <= 0 or nv <= 0:
            print(f"| {label} | {b[column] or b['status']} | {n[column] or n['status']} | | | not compared |")
            continue
        compared += 1
        ratio = nv / bv if higher_better else bv / nv  # above 1: better
        change = (ratio - 1) * 100
        flag = ""
        if change < -args.threshold:
            flag, regressions = "REGRESSION", regressions + 1
        elif change > args.threshold:
            flag, improvements = "better", improvements + 1
        print(f"| {label} | {b[column]} | {n[column]} | {ratio:.3f} | {change:+.1f}% | {flag} |")
    for k, n in new_rows.items():
        if k not in base_rows:
            print(f"| {' | '.join(n[c] for c in shown)} | new row | {n[column]} | | | |")
    print(f"\n{compared} rows compared on {column} ({'higher' if higher_better else 'lower'} is better), threshold "
          f"{args.threshold:g}%: {regressions} regressed, {improvements} improved.")
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())
