#!/usr/bin/env python3
"""Runs bench_gemm for real and reads its reports back.

Checks every CSV it is told about: the header holds the required columns, the row count is as
expected, numbers are plain, and each ok row's derived figures follow from its own m, n, k and
time (flops = 2·b·m·n·k, tflops = flops/time, io = read + write, mem_bw = io/time).

MoE expert rows (a non-empty `impl`; docs/formulas.md, "Grouped expert GEMMs") describe the
padded problem in m, n, k, batch and the real work in flops and bytes, so for them instead:
padded_flops = 2·b·m·n·k, flops = 2·tokens_total·n·k (fprop, dgrad) or 2·m·n·tokens_total (wgrad),
efficiency = flops/padded_flops, batch = experts_on_rank, m (fprop, dgrad) or k (wgrad) =
tokens_max, tokens_min <= tokens_max <= tokens_total, the real bytes summed over the experts, and
the row's JSON line: expert_tokens (the rank's counts) sums to tokens_total with min tokens_min and
max tokens_max, and is ep_rank's slice of group_expert_tokens, the most loaded rank's (the lowest
of equals). The implementations of one case agree on everything but the timings. Other rows
leave the expert columns empty. With --expect-impl LIST every expert case has exactly one row
per implementation of LIST, and the CSVs of --expect hold at least one expert row between them.
Expert rows' `ep` and `routing` are the --ep and --routing of ARGS, as given (when given).
environment.json's cpu_threads is the affinity mask's CPU count (--cpu-threads N: and N),
cpu_online the host's.

Usage: check_gemm_reports.py BENCH_GEMM OUT_DIR --expect FILE:ROWS[:OK_ROWS] ... [--expect-impl grouped,loop,padded]
                             [--exit-code N] [--cpu-threads N] -- ARGS...
"""
import csv
import json
import os
import sys

from report_check import (check_parser, close, count_problems, environment_problems, exit_problem, expected_files,
                          parse, report_verdict, run)

REQUIRED = ("model gemm pass m n k batch transa transb dtype backend device time_us median_us min_us "
            "max_us stddev_us samples flops tflops read_bytes write_bytes io_bytes mem_bw_gbps "
            "arith_intensity pct_peak_flops algo status note").split()
# MoE expert rows (bench_gemm --ep/--routing/--moe-impl): filled on expert rows, empty elsewhere.
EXPERT_COLUMNS = ("ep routing impl ep_rank experts_on_rank tokens_min tokens_max tokens_total padded_flops "
                  "efficiency").split()
# What names one expert case; its implementations (impl) must agree on everything but the timings.
EXPERT_CASE = ("model gemm pass dtype out_dtype tp micro_batch seqlen ep routing backend").split()
EXPERT_SAME = ("m n k batch transa transb calls_per_step ep_rank experts_on_rank tokens_min tokens_max tokens_total "
               "flops padded_flops efficiency read_bytes write_bytes io_bytes arith_intensity").split()
BYTES = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1, "int8": 1,
         "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8}


def json_value(line: dict, key: str):
    """A key of a JSON line: at the top level, else among its args or metrics."""
    for where in (line, line.get("args") or {}, line.get("metrics") or {}):
        if key in where:
            return where[key]
    return None


def check_expert_row(where: str, r: dict, line) -> list:
    """The figures of an ok expert row against its own columns and its JSON line."""
    problems = []
    try:
        m, n, k, b = (int(r[c]) for c in ("m", "n", "k", "batch"))
        ep, rank, experts, lo, hi, total, padded = (int(r[c]) for c in (
            "ep", "ep_rank", "experts_on_rank", "tokens_min", "tokens_max", "tokens_total", "padded_flops"))
        flops, read, write = int(r["flops"]), int(r["read_bytes"]), int(r["write_bytes"])
        efficiency = float(r["efficiency"])
    except (TypeError, ValueError) as e:
        return [f"{where}: an expert column is not a plain number ({e})"]
    pass_ = r["pass"]
    if pass_ not in ("fprop", "dgrad", "wgrad"):
        return [f"{where}: expert row with pass {pass_!r}"]
    if padded != 2 * b * m * n * k:
        problems.append(f"{where}: padded_flops {padded} != 2bmnk {2 * b * m * n * k}")
    real = 2 * m * n * total if pass_ == "wgrad" else 2 * total * n * k
    if flops != real:
        problems.append(f"{where}: flops {flops} != the real FLOPs {real} "
                        f"({'2·m·n·tokens_total' if pass_ == 'wgrad' else '2·tokens_total·n·k'})")
    if not (padded > 0 and close(efficiency, flops / padded)):
        problems.append(f"{where}: efficiency {r['efficiency']} != flops/padded_flops")
    if not 0 < efficiency <= 1:
        problems.append(f"{where}: efficiency {efficiency} outside (0, 1]")
    if not 0 <= lo <= hi <= total or total < 1:
        problems.append(f"{where}: tokens min {lo}, max {hi}, total {total}: not 0 <= min <= max <= total, total >= 1")
    if experts != b:
        problems.append(f"{where}: experts_on_rank {experts} != batch {b}")
    if (k if pass_ == "wgrad" else m) != hi:
        problems.append(f"{where}: {'k' if pass_ == 'wgrad' else 'm'} is not tokens_max {hi} (the padded problem)")
    if not (ep >= 1 and 0 <= rank < ep):
        problems.append(f"{where}: ep_rank {rank} not a rank of ep {ep}")
    if r["routing"] == "":
        problems.append(f"{where}: expert row without routing")
    if line is None:
        return problems + [f"{where}: no JSON line"]
    mine, group = json_value(line, "expert_tokens"), json_value(line, "group_expert_tokens")
    if not (isinstance(mine, list) and all(isinstance(c, int) and c >= 0 for c in mine)):
        return problems + [f"{where}: JSON expert_tokens is not a list of token counts: {mine!r}"]
    in_size, out_size = BYTES.get(r["dtype"]), BYTES.get(r.get("out_dtype") or r["dtype"])
    if in_size and out_size:
        # Each expert with tokens a plain GEMM of its own tokens, summed over the rank; an expert
        # without tokens reads nothing and, in wgrad, writes its zero gradient.
        busy = sum(1 for c in mine if c > 0)
        if pass_ == "wgrad":
            want = (total * (m + n) * in_size, b * m * n * out_size)
        else:
            want = ((total * k + busy * k * n) * in_size, total * n * out_size)
        if (read, write) != want:
            problems.append(f"{where}: read/write bytes {read}/{write}, expected the experts' sum {want[0]}/{want[1]}")
    if len(mine) != experts or sum(mine) != total or max(mine, default=-1) != hi or min(mine, default=-1) != lo:
        problems.append(f"{where}: JSON expert_tokens {mine} (sum {sum(mine)}) does not match experts_on_rank "
                        f"{experts}, tokens_total {total}, tokens_max {hi}, tokens_min {lo}")
    if not (isinstance(group, list) and all(isinstance(c, int) and c >= 0 for c in group)):
        return problems + [f"{where}: JSON group_expert_tokens is not a list of token counts: {group!r}"]
    if len(group) != experts * ep:
        problems.append(f"{where}: JSON group_expert_tokens has {len(group)} counts, expected ep x experts_on_rank "
                        f"= {ep * experts}")
        return problems
    loads = [sum(group[i * experts:(i + 1) * experts]) for i in range(ep)]
    if group[rank * experts:(rank + 1) * experts] != mine:
        problems.append(f"{where}: expert_tokens is not rank {rank}'s slice of group_expert_tokens {group}")
    if loads.index(max(loads)) != rank:
        problems.append(f"{where}: ep_rank {rank}, but the most loaded rank (the lowest of equals) is "
                        f"{loads.index(max(loads))} (tokens per rank {loads})")
    return problems


def check_expert_cases(path: str, rows: list, expect_impl) -> list:
    """The implementations of each expert case: one row each (all of expect_impl when given), and
    the same figures but the timings."""
    problems, cases = [], {}
    for r in rows:
        if r.get("impl"):
            cases.setdefault(tuple(r.get(c, "") for c in EXPERT_CASE), []).append(r)
    for case, rs in sorted(cases.items()):
        name = f"{path}: {' '.join(v for v in case if v)}"
        impls = [r["impl"] for r in rs]
        if len(set(impls)) != len(impls):
            problems.append(f"{name}: an implementation has more than one row: {impls}")
        if expect_impl and sorted(impls) != sorted(expect_impl):
            problems.append(f"{name}: implementations {impls}, expected {','.join(expect_impl)}")
        ok = [r for r in rs if r["status"] == "ok"]
        for column in EXPERT_SAME:
            values = {r.get(column, "") for r in ok}
            if len(values) > 1:
                problems.append(f"{name}: the implementations differ in {column}: "
                                + ", ".join(f"{r['impl']} {r.get(column, '')}" for r in ok))
    return problems


def check_csv(path: str, rows_expected: int, ok_expected: int, expect_impl=(), moe_args=None) -> list:
    problems = []
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
        f.seek(0)
        header = next(csv.reader(f))
    jsonl = path[:-4] + ".jsonl"
    with open(jsonl) as f:
        lines = [json.loads(line) for line in f]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        problems.append(f"{path}: missing columns {missing}")
    problems += count_problems(path, rows, rows_expected, ok_expected, lambda r: r["gemm"])
    for r in rows:
        if r["status"] not in ("ok", "skipped", "failed"):
            problems.append(f"{path}: bad status {r['status']!r}")
        if r["status"] != "ok" and not r["note"]:
            problems.append(f"{path}: a {r['status']} row without a note")
        if r["status"] == "failed" and r.get("check") == "failed" and "check failed" not in r["note"]:
            problems.append(f"{path}: a failed check whose note does not say so")
    has_expert_columns = any(c in header for c in EXPERT_COLUMNS)
    if has_expert_columns:
        missing = [c for c in EXPERT_COLUMNS if c not in header]
        if missing:
            problems.append(f"{path}: has some expert columns but not {missing}")
    for i, r in enumerate(rows):
        if r.get("impl"):
            if r["impl"] not in ("grouped", "loop", "padded"):
                problems.append(f"{path}: row {i + 1}: unknown impl {r['impl']!r}")
            if not r.get("ep") or not r.get("routing"):
                problems.append(f"{path}: row {i + 1}: expert row without ep or routing")
            for column, given in (moe_args or {}).items():
                if r.get(column) != given:
                    problems.append(f"{path}: row {i + 1} ({r['gemm']} {r['pass']} {r['impl']}): {column} "
                                    f"{r.get(column)!r}, but the run was given --{column} {given}")
        elif has_expert_columns:
            filled = [c for c in EXPERT_COLUMNS if r.get(c)]
            if filled:
                problems.append(f"{path}: row {i + 1} ({r['gemm']} {r['pass']}) is not an expert row (impl empty) "
                                f"but fills {filled}")
    for i, r in enumerate(rows):
        if r["status"] != "ok":
            continue
        m, n, k, b = (int(r[c]) for c in ("m", "n", "k", "batch"))
        t = float(r["time_us"])
        flops = int(r["flops"])
        io = int(r["io_bytes"])
        where = f"{path}: {r['gemm']} {r['pass']} {m}x{n}x{k}"
        if r.get("impl"):
            where = f"{path}: {r['gemm']} {r['pass']} {r['impl']} b{b} {m}x{n}x{k}"
            line = lines[i] if i < len(lines) else None
            if line is not None and isinstance(line.get("args"), dict) and any(
                    str(line["args"].get(c, r[c])) != r[c] for c in ("gemm", "pass", "impl") if c in r):
                problems.append(f"{where}: JSON line {i + 1} is not this row's: {line['args']}")
            problems += check_expert_row(where, r, line)
        elif flops != 2 * b * m * n * k:
            problems.append(f"{where}: flops {flops} != 2bmnk")
        if io != int(r["read_bytes"]) + int(r["write_bytes"]):
            problems.append(f"{where}: io_bytes != read + write")
        if not t > 0 or not float(r["tflops"]) > 0:
            problems.append(f"{where}: time or tflops not positive")
        if not close(float(r["tflops"]), flops / t / 1e6):
            problems.append(f"{where}: tflops {r['tflops']} != flops/time {flops / t / 1e6}")
        if not close(float(r["mem_bw_gbps"]), io / t / 1e3):
            problems.append(f"{where}: mem_bw_gbps {r['mem_bw_gbps']} != io/time")
        if not close(float(r["arith_intensity"]), flops / io):
            problems.append(f"{where}: arith_intensity != flops/io")
        if not float(r["min_us"]) <= float(r["median_us"]) <= float(r["max_us"]):
            problems.append(f"{where}: min <= median <= max does not hold")
        if int(r["samples"]) < 1:
            problems.append(f"{where}: no samples")
    problems += check_expert_cases(path, rows, expect_impl)
    if len(lines) != len(rows):
        problems.append(f"{jsonl}: {len(lines)} lines, expected {len(rows)}")
    for line in lines:
        if line["status"] != "ok":
            continue
        if len(line["samples_us"]) != line["metrics"]["samples"]:
            problems.append(f"{jsonl}: samples_us has {len(line['samples_us'])} values, samples says {line['metrics']['samples']}")
        # Harness cost: the timed share is exactly the samples' sum, and no part exceeds the case.
        h, m = line["harness"], line["measurement"]
        if not close(h["timed_s"], sum(line["samples_us"]) * 1e-6, 1e-9):
            problems.append(f"{jsonl}: harness timed_s {h['timed_s']} != sum of samples")
        parts = h["timed_s"] + h["between_samples_s"] + h["warmup_s"] + h["setup_and_check_s"]
        if not (h["timed_s"] <= h["case_s"] * (1 + 1e-9) and close(parts, h["case_s"], 1e-6)):
            problems.append(f"{jsonl}: harness parts {parts} do not add up to case_s {h['case_s']}")
        if len(m["warmup_us"]) != m["warmup_runs"] or m["warmup_skipped"] != (m["warmup_runs"] == 0):
            problems.append(f"{jsonl}: warm-up record inconsistent: {m}")
    return problems


def main() -> int:
    parser = check_parser(expect=True, exit_code=True)
    parser.add_argument("--expect-impl", default="",
                        help="grouped,loop,padded: every expert case has one row per implementation listed")
    parser.add_argument("--cpu-threads", type=int,
                        help="environment.json's cpu_threads (run this script under taskset -c 0 to expect 1)")
    a, extra = parse(parser)
    expect_impl = [i.strip() for i in a.expect_impl.split(",") if i.strip()]
    # Expert rows carry the --ep and --routing they were made with, as given on the command line.
    moe_args = {flag[2:]: extra[i + 1] for i, flag in enumerate(extra[:-1]) if flag in ("--ep", "--routing")}
    cmd = [a.bench, "--report-dir-path", a.out_dir, "--quiet", "--min-time", "0.01", "--max-time", "0.3"] + extra
    proc = run(cmd, a.out_dir)
    problems, expert_rows = exit_problem(proc, a.exit_code), 0
    for path, rows, ok in expected_files(a.out_dir, a.expect, problems):
        problems += check_csv(path, rows, ok, expect_impl, moe_args)
        if expect_impl:
            with open(path, newline="") as f:
                expert_rows += sum(1 for r in csv.DictReader(f) if r.get("impl"))
    if expect_impl and not expert_rows:
        problems.append(f"--expect-impl {a.expect_impl}: no expert rows (non-empty impl) in {' '.join(a.expect)}")
    env_path = os.path.join(a.out_dir, "environment.json")
    problems += environment_problems(a.out_dir)
    if os.path.exists(env_path):
        with open(env_path) as f:
            env = json.load(f)
        for key in ("command_line", "git_revision", "start_time", "end_time", "cpu", "libraries"):
            if not env.get(key):
                problems.append(f"environment.json: {key} is empty")
        # cpu_threads: the CPUs the run may use (its affinity, inherited from this script);
        # cpu_online: the host's.
        allowed = len(os.sched_getaffinity(0))
        if env.get("cpu_threads") != allowed:
            problems.append(f"environment.json: cpu_threads {env.get('cpu_threads')}, expected the {allowed} "
                            "CPUs of the affinity mask")
        if a.cpu_threads is not None and env.get("cpu_threads") != a.cpu_threads:
            problems.append(f"environment.json: cpu_threads {env.get('cpu_threads')}, expected {a.cpu_threads}")
        if env.get("cpu_online") != os.cpu_count():
            problems.append(f"environment.json: cpu_online {env.get('cpu_online')}, expected {os.cpu_count()}")
    return report_verdict(proc, problems, cmd, a.expect)


if __name__ == "__main__":
    sys.exit(main())
