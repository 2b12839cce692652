#!/usr/bin/env python3
"""Runs bench_ccl for real (under mpirun when --np is given) and reads its CSV back.

For every ok row it recomputes, independently of the C++ code, what docs/formulas.md says:
size = max(send, recv) bytes, count rounding as nccl-tests does, algbw = bytes / time,
busbw = algbw x factor(op, n), the per-group sums, and #wrong = 0 when checked.

In-place all_to_all and send_recv are undefined in NCCL: their rows must say #wrong N/A (an
empty `wrong`) and why; every other checked row has wrong = 0. --stdout-count TEXT:N asks that
TEXT appear N times on stdout (one "Avg bus bandwidth" line per op).

Usage: check_ccl_reports.py BENCH OUT_DIR [--np N --mpiexec PATH] [--rows R] [--ok R]
                            [--exit-code C] [--requested-size BYTES] [--stdout-count TEXT:N]
                            -- BENCH_ARGS...
"""
import json
import math
import os
import sys

from report_check import count_problems, exit_problem, check_parser, parse, read_csv, run, verdict

TYPE_SIZE = {"fp64": 8, "fp32": 4, "fp16": 2, "bf16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1,
             "int8": 1, "uint8": 1, "int32": 4, "int64": 8, "uint32": 4, "uint64": 8}
PER_RANK_OPS = ("all_gather", "reduce_scatter", "all_to_all")


MAX_NOISE = 0.01  # --max-noise's default; the tests run with it
# The CSV writes a fraction with 7 significant digits: an rse of 0.009999997 (not noisy: the
# runner compares the unrounded value) reads back as "0.01". Within that rounding of the limit,
# either verdict is right.
WRITTEN_PRECISION = 1e-6


def noise_problems(where: str, rse_cell: str, note: str) -> list:
    """The note says noisy exactly when rse >= --max-noise, read at the precision written."""
    rse = float(rse_cell)
    noisy = "noisy (" in note
    if rse >= MAX_NOISE * (1 + WRITTEN_PRECISION) and not noisy:
        return [f"{where}: rse {rse_cell} >= 1% but the note does not say noisy"]
    if rse < MAX_NOISE * (1 - WRITTEN_PRECISION) and noisy:
        return [f"{where}: rse {rse_cell} < 1% but the note says noisy: {note!r}"]
    return []


def busbw_factor(op: str, n: int) -> float:
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in PER_RANK_OPS:
        return (n - 1) / n
    return 1.0


def expected_count(op: str, size: int, ts: int, n: int) -> int:
    count = size // ts
    if op in PER_RANK_OPS:
        align = max(1, 16 // ts)
        return (count // n) // align * align
    return count


def check_rows(rows, args) -> list:
    problems = []
    for r in rows:
        where = f"{r['op']} {r['dtype']} {r['size_bytes']} {r['placement']}"
        if r["status"] != "ok":
            if not r["note"]:
                problems.append(f"{where}: {r['status']} without a note")
            continue
        n, ts = int(r["group_size"]), TYPE_SIZE[r["dtype"]]
        count, size, t = int(r["count"]), int(r["size_bytes"]), float(r["time_us"])
        size_expected = count * ts * (n if r["op"] in PER_RANK_OPS else 1)
        if size != size_expected:
            problems.append(f"{where}: size_bytes {size} != count x ts (x n) = {size_expected}")
        if args.requested_size and count != expected_count(r["op"], args.requested_size, ts, n):
            problems.append(f"{where}: count {count} is not nccl-tests' rounding of {args.requested_size} B")
        algbw = size / (t * 1e-6) / 1e9  # every op's algbw bytes equal its size (docs/formulas.md)
        if not math.isclose(float(r["algbw_gbps"]), algbw, rel_tol=2e-6):
            problems.append(f"{where}: algbw {r['algbw_gbps']} != size/time {algbw}")
        if not math.isclose(float(r["busbw_gbps"]), algbw * busbw_factor(r["op"], n), rel_tol=2e-6, abs_tol=1e-9):
            problems.append(f"{where}: busbw {r['busbw_gbps']} != algbw x factor")
        groups = int(r["num_groups"])
        if groups * n != int(r["world_size"]):
            problems.append(f"{where}: num_groups x group_size != world_size")
        if not math.isclose(float(r["busbw_all_groups_gbps"]), float(r["busbw_gbps"]) * groups, rel_tol=1e-6, abs_tol=1e-9):
            problems.append(f"{where}: busbw_all_groups != busbw x groups")
        # ByteMicroPerf's byte fields: algo size = the bytes algbw divides; bus size = x factor
        if int(r["algo_size_bytes"]) != size:
            problems.append(f"{where}: algo_size_bytes {r['algo_size_bytes']} != size_bytes {size}")
        # A byte count is a whole number of bytes: size x bus factor, rounded.
        if r["bus_size_bytes"] != str(math.floor(size * busbw_factor(r["op"], n) + 0.5)):
            problems.append(f"{where}: bus_size_bytes {r['bus_size_bytes']} != size x bus factor, "
                            f"rounded to a whole byte")
        # Every cell plain ASCII, so a spreadsheet without a BOM reads it as written
        for k, v in r.items():
            if any(ord(ch) > 127 for ch in (k or "") + (v or "")):
                problems.append(f"{where}: column {k} is not plain ASCII: {v!r}")
        if not float(r["min_time_us"]) <= t * (1 + 1e-6) and t <= float(r["max_time_us"]) * (1 + 1e-6):
            problems.append(f"{where}: time outside [min, max] over ranks")
        if r["samples"]:  # the adaptive stop: 1..100 samples; noisy rows say so
            if not 1 <= int(r["samples"]) <= 100:
                problems.append(f"{where}: {r['samples']} samples, outside the collective profile's 1..100")
            problems += noise_problems(where, r["rse"], r["note"])
        elif not r["p50_us"]:
            problems.append(f"{where}: neither sample statistics nor --per-iter statistics")
        elif r["status"] == "ok" and "calls of one pass (-n)" not in r["note"]:
            problems.append(f"{where}: --per-iter row does not say how many calls its p99 rests on: {r['note']!r}")
        if r["wrong"] not in ("", "0"):
            problems.append(f"{where}: {r['wrong']} wrong elements")
        undefined = r["placement"] == "in_place" and r["op"] in ("all_to_all", "send_recv")
        if undefined and (r["wrong"] != "" or "#wrong N/A" not in r["note"]):
            problems.append(f"{where}: in place it is undefined in NCCL: wrong must be N/A, with why")
    return problems


def main() -> int:
    parser = check_parser(exit_code=True)
    parser.add_argument("--np", type=int, default=0)
    parser.add_argument("--mpiexec", default="mpirun")
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--ok", type=int)
    parser.add_argument("--requested-size", type=int, default=0)
    parser.add_argument("--require-column", action="append", default=[])
    parser.add_argument("--stdout-count", action="append", default=[])
    a, extra = parse(parser)
    csv_path = os.path.join(a.out_dir, "all.csv")
    cmd = [a.bench, "--report-dir-path", a.out_dir, "--report-csv-path", csv_path, "--quiet"] + extra
    if a.np:
        cmd = [a.mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", str(a.np)] + cmd
    proc = run(cmd, a.out_dir)
    problems = exit_problem(proc, a.exit_code, tail=20000)
    if a.exit_code == 3 and "nothing ran: every case was skipped" not in proc.stderr:
        problems.append(f"exit code 3 without the 'nothing ran' line: {proc.stderr}")
    if "Avg bus bandwidth" not in proc.stdout:
        problems.append("no nccl-tests-style table on stdout")
    for spec in a.stdout_count:
        text, _, n = spec.rpartition(":")
        if proc.stdout.count(text) != int(n):
            problems.append(f"'{text}' appears {proc.stdout.count(text)} times on stdout, expected {n}")
    if os.path.exists(csv_path):
        rows = read_csv(csv_path)
        problems += count_problems(csv_path, rows, a.rows, a.rows if a.ok is None else a.ok,
                                   lambda r: f"{r['op']} {r['size_bytes']}")
        for col in a.require_column:
            if any(r["status"] == "ok" and r[col] == "" for r in rows):
                problems.append(f"column {col} is empty on an ok row")
        problems += check_rows(rows, a)
        world = int(rows[0]["world_size"]) if rows else 0
        for name in os.listdir(a.out_dir):
            if name.endswith(".jsonl"):
                with open(os.path.join(a.out_dir, name)) as f:
                    for line in f:
                        j = json.loads(line)
                        if j["status"] == "ok" and j.get("harness", {}).get("timed_s", 1) <= 0:
                            problems.append(f"{name}: an ok row books no timed calls (harness.timed_s 0)")
                        if j["status"] == "ok" and len(j.get("latency_list_us", [])) != world:
                            problems.append(f"{name}: latency_list_us has {len(j['latency_list_us'])} values for {world} ranks")
    else:
        problems.append(f"{csv_path} was not written")
    return verdict(problems, cmd, f"ok: {a.rows} rows checked")


if __name__ == "__main__":
    sys.exit(main())
