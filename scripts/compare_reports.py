#!/usr/bin/python3
"""Compares two opbench CSV reports of the same kind (bench_gemm, bench_attention, bench_ccl,
bench_fsdp, bench_memops, bench_step's step.csv or step_operators.csv): rows are matched by all
their arguments, and each row's headline figure is compared — TFLOPS for GEMM and attention, bus
bandwidth for collectives, achieved memory bandwidth for memory-bound operators (higher is
better), the step time for bench_step's configurations, else the time.
bench_gemm's MoE expert rows are matched on their expert-parallel degree, routing and
implementation too (ep, routing, impl; empty on dense rows and in reports older than them).

Prints a Markdown table of ratios (new / base, oriented so that above 1 is better) and flags
changes beyond --threshold. Exits 1 when any row regressed beyond the threshold and the noise,
went from ok to skipped or failed, or is missing from NEW; 0 otherwise; 2 on bad input (a file
that is not a report, or two reports of different binaries). Usable as a CI gate:

    scripts/compare_reports.py baseline/gemm_llama3.1-70b.csv new/gemm_llama3.1-70b.csv --threshold 5

Noise. Each measured row carries the relative standard error of its mean time: the `rse` column
(a fraction: 0.24 is 24%), or where a report has none, cv / sqrt(samples). TFLOPS and bus
bandwidth are a constant divided by the time, so their relative error is the same. The noise band
of a comparison is

    noise = 2 * sqrt(rse_base^2 + rse_new^2)      (two standard errors of the difference)

and a change counts only when it exceeds both the threshold and that band: a larger change within
the band is flagged "within noise" and counts neither as a regression nor as an improvement. The
`noise` column shows the band (±x%) of every row whose noise is known, followed by "noisy" where
either run marked the row noisy (its note says "noisy (rse ...)"); the last line counts the changes
that were within noise. Rows without rse, cv or samples have a band of 0: the threshold alone.
"""
import argparse
import csv
import math
import sys

# Columns that say which case a row is (whichever of them a report has), in table order.
KEY_COLUMNS = ["unit", "phase", "model", "gemm", "op", "label", "pass", "m", "n", "k", "batch", "transa", "transb",
               "batch_size", "seqlen_q", "seqlen_kv", "num_head_q", "num_head_kv", "head_dim_qk", "head_dim_v",
               "causal", "world_size", "group_size", "size_bytes", "placement", "redop", "root", "dtype",
               "out_dtype", "tp", "micro_batch", "seqlen", "ep", "routing", "impl", "backend",
               # bench_memops: the operator's shape and implementation
               "rows", "cols", "heads", "kv_heads", "head_dim", "vocab", "devices", "provider",
               # bench_step: the configuration, and for step_operators.csv the operator
               "pp", "vpp", "dp", "sp", "sharding", "recompute", "micro_batches", "global_batch",
               "overlap", "stage", "family", "operator", "args"]
# bench_gemm's MoE expert rows: a report written before these columns existed reads as if they were
# empty, as they are on dense rows. So dense rows still match across versions, while expert rows
# of an implementation, expert-parallel degree or routing never match rows of another (nor the
# old one-expert rows).
EMPTY_WHEN_ABSENT = {"ep", "routing", "impl"}
# Headline figures, best first: (column, higher is better)
FIGURES = [("tflops", True), ("busbw_gbps", True), ("mem_bw_gbps", True), ("step_time_ms", False),
           ("time_us", False)]


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def kind_of(columns) -> str:
    """Which binary wrote a report, from its columns ("" when none did). bench_fsdp's rows have
    every column of bench_ccl's plus unit and phase, so fsdp is recognised first."""
    columns = set(columns)
    if {"unit", "phase", "op"} <= columns:
        return "fsdp"
    if {"op", "size_bytes", "busbw_gbps"} <= columns:
        return "ccl"
    if {"seqlen_q", "head_dim_qk"} <= columns:
        return "attention"
    if {"gemm", "pass", "m", "n", "k"} <= columns:
        return "gemm"
    if {"op", "rows", "cols", "mem_bw_gbps"} <= columns:
        return "memops"
    if {"stage", "family", "operator", "args"} <= columns:
        return "step_operators"
    if {"step_time_ms", "sharding", "recompute"} <= columns:
        return "step"
    return ""


def article(kind: str) -> str:
    return "an" if kind == "attention" else "a"  # "a memops report", "a step_operators report"


def read(path: str):
    """The rows of a report, its columns and its kind; exits 2 when the file is not an opbench
    report. A report with its header and no row (a run stopped before its first case finished)
    is one: its cases are missing."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            columns = reader.fieldnames
            rows = list(reader)
    except FileNotFoundError:
        fail(f"{path}: no such file")
    except IsADirectoryError:
        fail(f"{path}: is a directory, expected a CSV report")
    except (UnicodeDecodeError, csv.Error) as e:
        fail(f"{path}: not a CSV report ({e})")
    if not columns:
        fail(f"{path}: empty: not a report (an opbench report holds at least its header)")
    if {"unit", "collective", "per_rank_count"} <= set(columns):
        fail(f"{path}: a bench_fsdp plan (--plan-csv-path), not a measured report: compare the CSVs of a replay")
    if "status" not in columns:
        fail(f"{path}: not an opbench report (no status column)")
    kind = kind_of(columns)
    if not kind:
        fail(f"{path}: not an opbench report (the columns of none of bench_gemm, bench_attention, bench_ccl, "
             "bench_fsdp, bench_memops, bench_step)")
    if not rows:
        print(f"note: {path}: no rows (its run stopped before a case finished)", file=sys.stderr)
    return rows, columns, kind


def number(text):
    try:
        v = float(text)
        return v if math.isfinite(v) else None
    except (TypeError, ValueError):
        return None


def rse(row):
    """Relative standard error of the row's mean time (a fraction), or None when unknown."""
    value = number(row.get("rse"))
    if value is not None and value >= 0:
        return value
    cv, samples = number(row.get("cv")), number(row.get("samples"))
    if cv is not None and cv >= 0 and samples:
        return cv / math.sqrt(samples)
    return None


def noisy(row) -> bool:
    return "noisy (" in (row.get("note") or "")  # CPU attention notes start with the fp32 remark


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--threshold", type=float, default=5.0, help="percent change that counts (default 5)")
    args = parser.parse_args()
    if not args.threshold >= 0:
        fail(f"--threshold: must be a percentage >= 0, got {args.threshold}")
    (base, base_columns, base_kind), (new, new_columns, new_kind) = read(args.base), read(args.new)
    if base_kind != new_kind:  # shared columns (dtype, backend) would match unrelated rows
        fail(f"{args.base} is {article(base_kind)} {base_kind} report and {args.new} is {article(new_kind)} {new_kind} "
             "report: compare reports of the same binary")
    keys = [c for c in KEY_COLUMNS if (c in base_columns and c in new_columns)
            or (c in EMPTY_WHEN_ABSENT and (c in base_columns or c in new_columns))]
    if not keys:
        fail("the two reports share no argument columns: are they of the same kind?")
    figure = next(((c, hi) for c, hi in FIGURES if c in base_columns and c in new_columns), None)
    if figure is None:
        fail("the two reports share no figure to compare (tflops, busbw_gbps or time_us)")
    column, higher_better = figure

    def key(row):
        return tuple(row.get(c) or "" for c in keys)

    def by_key(rows, path):
        out = {}
        for r in rows:
            if key(r) in out:  # never dropped silently: the later row stands, and we say so
                print(f"note: {path}: two rows of the same case ({', '.join(f'{c}={v}' for c, v in zip(keys, key(r)) if v)}): "
                      f"the later one is compared", file=sys.stderr)
            out[key(r)] = r
        return out

    base_rows, new_rows = by_key(base, args.base), by_key(new, args.new)
    shown = [c for c in keys if len({r.get(c) or "" for r in base} | {r.get(c) or "" for r in new}) > 1] or keys[:1]
    print(f"| {' | '.join(shown)} | base {column} | new {column} | ratio | change | flag | noise |")
    print("|" + "---|" * (len(shown) + 6))
    regressions = improvements = within_noise = compared = 0
    for k, b in base_rows.items():
        label = " | ".join(b.get(c) or "" for c in shown)
        n = new_rows.get(k)
        if n is None:
            print(f"| {label} | {b[column]} | missing | | | REGRESSION | |")
            regressions += 1
            continue
        if b["status"] == "ok" and n["status"] != "ok":
            print(f"| {label} | {b[column]} | {n['status']} | | | REGRESSION: {n['note']} | |")
            regressions += 1
            continue
        bv, nv = number(b[column]), number(n[column])
        if bv is None or nv is None or bv <= 0 or nv <= 0:
            print(f"| {label} | {b[column] or b['status']} | {n[column] or n['status']} | | | not compared | |")
            continue
        compared += 1
        ratio = nv / bv if higher_better else bv / nv  # above 1: better
        change = (ratio - 1) * 100
        errors = [e for e in (rse(b), rse(n)) if e is not None]
        band = 200 * math.sqrt(sum(e * e for e in errors))  # percent; 0 when neither row says
        noise = f"±{band:.1f}%" if errors else ""
        if noisy(b) or noisy(n):
            noise = f"{noise} noisy".strip()
        flag = ""
        if abs(change) > args.threshold and abs(change) <= band:
            flag, within_noise = "within noise", within_noise + 1
        elif change < -args.threshold:
            flag, regressions = "REGRESSION", regressions + 1
        elif change > args.threshold:
            flag, improvements = "better", improvements + 1
        print(f"| {label} | {b[column]} | {n[column]} | {ratio:.3f} | {change:+.1f}% | {flag} | {noise} |")
    for k, n in new_rows.items():
        if k not in base_rows:
            print(f"| {' | '.join(n.get(c) or '' for c in shown)} | new row | {n[column]} | | | | |")
    print(f"\n{compared} rows compared on {column} ({'higher' if higher_better else 'lower'} is better), threshold "
          f"{args.threshold:g}%: {regressions} regressed, {improvements} improved, {within_noise} within noise.")
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())
