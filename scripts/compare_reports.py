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

Noise. A change counts only when it exceeds --threshold and the noise of the comparison, the
larger of:

    band  = 2 * sqrt(rse_base^2 + rse_new^2)   (two standard errors of the difference of the means;
                                                rse from the `rse` column, else cv / sqrt(samples))
    rerun = what plain reruns of the case differ by: with several runs a side (FILE,FILE,...),
            RUN_T standard errors of the difference of the sides' means, from how their runs
            differ; with one, RERUN_K x the larger cv of the two rows, and at
            least the rerun floor (--rerun-floor; runs on the CPU: HOST_RERUN_FLOOR's, as measured
            on the development machine; GPU runs: 0, none measured)

The noise is a factor either way (a floor of 60% passes a run up to 1.6x faster or slower). A
change beyond the threshold but inside the noise is "within noise", or "inconclusive" when the
noise exceeds 50% (such a comparison cannot tell a 1.5x change from none). Whatever the band, a
run whose every sample is slower than every sample of the other (min_us above the other's max_us)
by more than the threshold and the rerun floor (or the runs' noise) has regressed.
docs/scripts.md#scriptscompare_reportspy gives the calibration.
"""
import argparse
import csv
import math
import sys
from collections import Counter

# Columns that say which case a row is (whichever of them a report has), in table order.
KEY_COLUMNS = ["unit", "phase", "model", "gemm", "op", "label", "pass", "m", "n", "k", "batch", "transa", "transb",
               "batch_size", "seqlen_q", "seqlen_kv", "num_head_q", "num_head_kv", "head_dim_qk", "head_dim_v",
               "causal", "world_size", "group_size", "size_bytes", "placement", "redop", "root", "dtype",
               "out_dtype", "tp", "cp", "micro_batch", "seqlen", "ep", "etp", "moe_dispatcher", "routing", "impl", "backend",
               # bench_memops: the operator's shape and implementation
               "rows", "cols", "heads", "kv_heads", "head_dim", "vocab", "devices", "provider",
               # bench_step: the configuration, and for step_operators.csv the operator
               "pp", "vpp", "dp", "sp", "sharding", "recompute", "micro_batches", "global_batch",
               "overlap", "stage", "family", "operator", "args"]
# bench_gemm's MoE expert rows, and bench_step's etp: a report written before these columns existed
# reads as if they were empty, as they are on dense rows. So dense rows still match across
# versions, while expert rows of an implementation, expert-parallel degree or routing never match
# rows of another (nor the old one-expert rows), nor an MoE configuration's of another etp.
EMPTY_WHEN_ABSENT = {"ep", "etp", "routing", "impl"}
# bench_step's columns a report written before them lacks, as they would have read: moe_dispatcher
# (every MoE configuration, one with an etp, through the all-to-all dispatcher, dense ones through
# none) and cp (no context parallelism: 1).
ABSENT_MEANS = {"moe_dispatcher": lambda row: "alltoall" if row.get("etp") else "",
                "cp": lambda row: "1" if row.get("sharding") else ""}
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
    for index, row in enumerate(rows, start=1):
        # csv leaves a short row's missing fields None and puts a long row's extra ones under None
        if None in row or any(v is None for v in row.values()):
            fields = len(row) - (None in row) + len(row.get(None) or []) - sum(v is None for v in row.values())
            fail(f"{path} row {index}: {fields} fields where the header has {len(columns)}: "
                 "a truncated or damaged report")
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


# How much two plain runs of the same case differ when nothing changed. It grows with how much the
# samples spread within a run (a case whose samples wander by 30% lands its mean elsewhere each
# run; one that repeats to 1% does not): RERUN_K x the larger cv. On a shared CPU whole runs shift
# besides, every row at once, by more than their samples spread (the 2-core development machine,
# bench/compare/rerun_floor.py: one bench_gemm --model tiny run in six 15-20% slower than the rest,
# at cv 3-8%; an AdamW row of bench_memops 440 us in some runs and 620 us in others): one run a side
# on the host gets a floor. docs/scripts.md gives the reruns it was calibrated on.
RERUN_K = 1.0
# percent, from the calibration (attention as gemm and fsdp as ccl: not calibrated apart)
HOST_RERUN_FLOOR = {"gemm": 45.0, "attention": 45.0, "memops": 60.0, "ccl": 30.0, "fsdp": 30.0,
                    "step": 20.0, "step_operators": 60.0}
HOST_BACKENDS = {"cpu", "mpi"}
# Several runs a side: a change must exceed RUN_T standard errors of the difference of the two
# sides' means, estimated from how their runs differ (3, not 2: a few runs, and whole-run shifts
# that are rare and large, estimate the variance loosely).
RUN_T = 3.0


def ran_on_host(row) -> bool:
    """Whether a row's time was measured on the CPU: its backend (cpu, mpi), or where a report has
    none (bench_step's), its device: the CPU providers' "model (N threads)", or mpi; a time bench_step
    read from reports or a capture moves only as they do."""
    if row.get("backend"):
        return row["backend"] in HOST_BACKENDS
    if (row.get("times_from") or row.get("time_from") or "measured").find("measured") < 0:
        return False
    device = row.get("device") or ""
    return device in HOST_BACKENDS or device.endswith(" threads)")


def default_floor(kind, rows):
    """The rerun floor of one run a side: HOST_RERUN_FLOOR's where every row ran on the host; 0 on a
    GPU (no rerun has been measured there: --rerun-floor sets one)."""
    on_host = rows and all(ran_on_host(r) for r in rows if r.get("status") == "ok")
    return HOST_RERUN_FLOOR.get(kind, 0.0) if on_host else 0.0


# A noise this wide cannot tell a 1.5x change from none: such a change is "inconclusive".
CONCLUSIVE_BAND = 50.0


def times(row):
    """The row's fastest and slowest sample (µs), when the report has them."""
    lo, hi = number(row.get("min_us")), number(row.get("max_us"))
    return (lo, hi) if lo is not None and hi is not None and 0 < lo <= hi else None


class Side:
    """One case's rows in one side's runs (one report, or several reruns)."""

    def __init__(self, rows, column):
        self.rows = rows
        self.values = [v for v in (number(r.get(column)) for r in rows) if v is not None and v > 0]
        self.value = sum(self.values) / len(self.values) if self.values else None
        medians = [number(r.get("median_us")) for r in rows]
        # the typical sample's time over the runs, when every run has it
        self.median = (sum(medians) / len(medians)
                       if medians and all(m is not None and m > 0 for m in medians) else None)
        spans = [times(r) for r in rows]
        self.times = None if None in spans or not spans else (min(t[0] for t in spans),
                                                               max(t[1] for t in spans))
        errors = [e for e in (rse(r) for r in rows) if e is not None]
        # the mean over runs: its error shrinks with their number
        self.rse = math.sqrt(sum(e * e for e in errors)) / len(errors) if errors else None
        self.runs = len(self.values)
        # how much the runs' figures differ: their variance relative to the mean's square
        self.run_var = (sum((v - self.value) ** 2 for v in self.values) / (self.runs - 1) / self.value ** 2
                        if self.runs > 1 else None)
        cvs = [c for c in (cv(r) for r in rows) if c is not None]
        self.cv = max(cvs) if cvs else None
        self.status = "ok" if all(r["status"] == "ok" for r in rows) else \
            next(r["status"] for r in rows if r["status"] != "ok")
        self.note = next((r.get("note") for r in rows if r["status"] != "ok"), "")
        self.noisy = any(noisy(r) for r in rows)
        self.impls = sorted({r.get("impl") or "" for r in rows})


def cv(row):
    """The spread of the row's samples: stddev / mean (a fraction), or None when unknown."""
    value = number(row.get("cv"))
    if value is not None and value >= 0:
        return value
    error, samples = number(row.get("rse")), number(row.get("samples"))
    return error * math.sqrt(samples) if error is not None and samples else None


def verdict(base, new, change, threshold, floor):
    """(flag, noise): REGRESSION, better, within noise, inconclusive or "", and the noise (percent)
    a change had to exceed besides the threshold: the larger of the band of the means' standard
    errors and the rerun noise (several runs a side: RUN_T standard errors of the difference of
    the runs' means; one: RERUN_K x the larger cv, at least `floor`)."""
    band = 200 * math.sqrt(sum(e * e for e in (base.rse, new.rse) if e is not None))
    within_run = 100 * RERUN_K * max(c for c in (base.cv, new.cv, 0.0) if c is not None)
    if base.runs > 1 or new.runs > 1:
        # the runs of both sides estimate one run-to-run variance; a side's mean over n runs
        # varies by 1/sqrt(n) of it (K x cv, scaled the same, stays a lower bound)
        variances = [s.run_var for s in (base, new) if s.run_var is not None]
        scale = math.sqrt(1 / base.runs + 1 / new.runs)
        rerun = max(100 * RUN_T * math.sqrt(sum(variances) / len(variances)) * scale,
                    within_run * scale / math.sqrt(2))
        shift = rerun
    else:
        rerun = max(within_run, floor)
        shift = floor
    shift = max(threshold, shift)
    noise = max(band, rerun)
    tolerance = max(threshold, noise)
    # noise is a factor either way: a run 1.4x slower (-28.6% on a rate) is as far off as one
    # 1.4x faster (+40%), so a 2x slowdown (-50%) still exceeds a 60% floor
    factor = change if change >= 0 else 100 * (100 / (100 + change) - 1)
    # every sample of one side slower than every sample of the other: a change however wide the
    # samples' band, unless whole runs shift by as much (the floor, or what the runs differ by)
    if base.times and new.times and abs(change) > threshold and factor > shift:
        if new.times[0] > base.times[1] and change < 0:
            return "REGRESSION", noise
        if new.times[1] < base.times[0] and change > 0:
            return "better", noise
    if abs(change) <= threshold:
        return "", noise
    if factor > tolerance and typical_moved(base, new, change, tolerance):
        return ("REGRESSION" if change < 0 else "better"), noise
    return ("inconclusive" if noise > CONCLUSIVE_BAND else "within noise"), noise


def typical_moved(base, new, change, tolerance):
    """Whether the typical sample moved as the mean did: a few stalls among a thousand samples can
    take a mean 2x away while the median stays (bench_memops tiny's rope, one run in four: mean
    29.4 us, median 12.3 us, its other runs 11-12 us). A change of the mean alone is noise, not a
    regression. True where either report lacks medians."""
    if base.median is None or new.median is None:
        return True
    slower = new.median / base.median - 1  # medians are times: above 0 is slower
    factor = 100 * (max(slower + 1, 1 / (slower + 1)) - 1)
    return factor > tolerance and (slower > 0) == (change < 0)


def case_keys(kind, base_columns, new_columns):
    """The argument columns that say which case a row of two reports of `kind` is."""
    # bench_memops' impl says what ran (the CPU loops and their threads): the same case under
    # another thread count is still the same case, and the table shows the change
    key_columns = [c for c in KEY_COLUMNS if not (kind == "memops" and c == "impl")]
    return [c for c in key_columns if (c in base_columns and c in new_columns)
            or ((c in EMPTY_WHEN_ABSENT or c in ABSENT_MEANS) and (c in base_columns or c in new_columns))]


def case_key(row, keys):
    """A row's values of the key columns; a column its report lacks reads as ABSENT_MEANS says, else
    empty."""
    return tuple((row.get(c) or "") if c in row else ABSENT_MEANS.get(c, lambda _: "")(row) for c in keys)


def read_side(paths):
    """Several reruns of one binary: their rows, columns and kind (one report: itself)."""
    rows, columns, kinds = [], None, set()
    for run, path in enumerate(paths):
        r, c, k = read(path)
        for index, row in enumerate(r, start=1):
            row["_run"], row["_row"] = run, index
        rows += r
        columns = c if columns is None else [x for x in columns if x in c]
        kinds.add(k)
    if len(kinds) > 1:
        fail(f"{', '.join(paths)}: reports of different binaries ({', '.join(sorted(kinds))}) on one side")
    return rows, columns, kinds.pop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("base", help="the baseline report, or reruns of it: FILE[,FILE...]")
    parser.add_argument("new", help="the new report, or reruns of it: FILE[,FILE...]")
    parser.add_argument("--threshold", type=float, default=5.0, help="percent change that counts (default 5)")
    parser.add_argument("--rerun-floor", type=float, metavar="PCT",
                        help="percent plain reruns of one case differ by on your machine, for one run a side "
                             "(default: HOST_RERUN_FLOOR's for runs on the CPU, 0 on a GPU; "
                             "bench/compare/rerun_floor.py measures it)")
    args = parser.parse_args()
    if not args.threshold >= 0:
        fail(f"--threshold: must be a percentage >= 0, got {args.threshold}")
    if args.rerun_floor is not None and not args.rerun_floor >= 0:
        fail(f"--rerun-floor: must be a percentage >= 0, got {args.rerun_floor}")
    base_paths, new_paths = args.base.split(","), args.new.split(",")
    for name, argument, paths in (("base", args.base, base_paths), ("new", args.new, new_paths)):
        if "" in paths:
            fail(f"{name} '{argument}': an empty file name in the comma-separated list")
    (base, base_columns, base_kind) = read_side(base_paths)
    (new, new_columns, new_kind) = read_side(new_paths)
    if base_kind != new_kind:  # shared columns (dtype, backend) would match unrelated rows
        fail(f"{args.base} is {article(base_kind)} {base_kind} report and {args.new} is {article(new_kind)} {new_kind} "
             "report: compare reports of the same binary")
    keys = case_keys(base_kind, base_columns, new_columns)
    if not keys:
        fail("the two reports share no argument columns: are they of the same kind?")
    figure = next(((c, hi) for c, hi in FIGURES if c in base_columns and c in new_columns), None)
    if figure is None:
        fail("the two reports share no figure to compare (tflops, busbw_gbps or time_us)")
    column, higher_better = figure
    # An ok row carries its figure: one without it would be 'not compared' and pass the gate.
    for rows, paths in ((base, base_paths), (new, new_paths)):
        for r in rows:
            if r["status"] == "ok" and not (number(r.get(column)) or 0) > 0:
                fail(f"{paths[r['_run']]} row {r['_row']}: {column}: an ok row needs a positive "
                     f"number, got '{r.get(column)}'")
    floor = args.rerun_floor if args.rerun_floor is not None else default_floor(base_kind, base + new)

    def key(row):
        return case_key(row, keys)

    def by_key(rows, paths):
        out, seen = {}, set()
        for r in rows:
            if (key(r), r["_run"]) in seen:  # never dropped silently: the later row stands
                print(f"note: {paths[r['_run']]}: two rows of the same case ({', '.join(f'{c}={v}' for c, v in zip(keys, key(r)) if v)}): "
                      f"the later one is compared", file=sys.stderr)
                out[key(r)] = [x for x in out[key(r)] if x["_run"] != r["_run"]]
            seen.add((key(r), r["_run"]))
            out.setdefault(key(r), []).append(r)
        return out

    base_rows, new_rows = by_key(base, base_paths), by_key(new, new_paths)
    # the key columns the rows differ in, read as the match reads them (ABSENT_MEANS)
    shown = [c for c in keys if len({key(r)[keys.index(c)] for r in base + new}) > 1] or keys[:1]

    def key_cells(k):
        return " | ".join(k[keys.index(c)] for c in shown)
    impl_changes = base_kind == "memops" and any(
        sorted({r.get("impl") or "" for r in base_rows[k]}) != sorted({r.get("impl") or "" for r in new_rows[k]})
        for k in base_rows if k in new_rows)
    extra = ["impl (base → new)"] if impl_changes else []
    print(f"| {' | '.join(shown + extra)} | base {column} | new {column} | ratio | change | flag | noise |")
    print("|" + "---|" * (len(shown) + len(extra) + 6))
    counts = Counter()
    compared = 0
    for k, rows in base_rows.items():
        b = Side(rows, column)
        label = key_cells(k)
        figure_b = rows[0][column] if len(rows) == 1 else (f"{b.value:.4g}" if b.value else "")
        if k not in new_rows:
            print(f"| {label}{' | ' if extra else ''}{' | '.join('' for _ in extra)} | {figure_b} | missing | | | REGRESSION | |")
            counts["REGRESSION"] += 1
            continue
        absent = sorted(set(range(len(new_paths))) - {r["_run"] for r in new_rows[k]})
        if absent:  # reruns of one binary hold the same cases: one lost is lost
            print(f"| {label}{' | ' if extra else ''}{' | '.join('' for _ in extra)} | {figure_b} | "
                  f"missing from {', '.join(new_paths[i] for i in absent)} | | | REGRESSION | |")
            counts["REGRESSION"] += 1
            continue
        n = Side(new_rows[k], column)
        figure_n = new_rows[k][0][column] if len(new_rows[k]) == 1 else (f"{n.value:.4g}" if n.value else "")
        cells = [label]
        if extra:
            cells.append("" if b.impls == n.impls else f"{' / '.join(b.impls)} → {' / '.join(n.impls)}")
        label = " | ".join(cells)
        if b.status == "ok" and n.status != "ok":
            print(f"| {label} | {figure_b} | {n.status} | | | REGRESSION: {n.note} | |")
            counts["REGRESSION"] += 1
            continue
        if b.value is None or n.value is None:
            print(f"| {label} | {figure_b or rows[0]['status']} | {figure_n or new_rows[k][0]['status']} | | | not compared | |")
            continue
        compared += 1
        ratio = n.value / b.value if higher_better else b.value / n.value  # above 1: better
        change = (ratio - 1) * 100
        flag, band = verdict(b, n, change, args.threshold, floor)
        counts[flag] += 1
        noise = f"±{band:.1f}%" if b.rse is not None or n.rse is not None or b.cv is not None \
            or n.cv is not None or b.runs > 1 or n.runs > 1 or floor else ""
        if b.noisy or n.noisy:
            noise += " noisy"
        print(f"| {label} | {figure_b} | {figure_n} | {ratio:.3f} | {change:+.1f}% | {flag} | {noise} |")
    for k, rows in new_rows.items():
        if k not in base_rows:
            print(f"| {key_cells(k)} | new row | {rows[0][column]} | | | | |")
    if len(base_paths) == len(new_paths) == 1:
        runs = f", rerun floor {floor:g}%" if floor else ""
    else:
        runs = f" ({len(base_paths)} base and {len(new_paths)} new runs: what they differ by is the rerun noise)"
    rows_word = "row" if compared == 1 else "rows"
    print(f"\n{compared} {rows_word} compared on {column} ({'higher' if higher_better else 'lower'} is better), "
          f"threshold {args.threshold:g}%{runs}: {counts['REGRESSION']} regressed, {counts['better']} improved, "
          f"{counts['within noise']} within noise, {counts['inconclusive']} inconclusive.")
    return 1 if counts["REGRESSION"] else 0


if __name__ == "__main__":
    sys.exit(main())
