#!/usr/bin/env python3
"""Gives every broken capture folder of tests/data/bad_capture (its README.md says what each
holds) to every reader of capture files: bench_gemm, bench_ccl and bench_step --capture-path,
which check them with common/capture_rows.cpp, and scripts/capture_summary.py, which keeps its
own copy of those rules. Each reader must exit 2, never die on a signal or with a traceback,
and print exactly one 'error:' line that holds the expected text (the file, the row and the
column) — the same line from all four, so the two copies of the rules cannot drift apart on
these files. The element sizes of the bytes rule are checked for every dtype name either copy
knows (bench_gemm lists C++'s in its --dtype error). The good folder tests/data/capture_replay
must pass bench_gemm and the summary, and so must a converted trace's table (trace_convert of
tests/data/trace's GPU step).
Prints one line per folder and reader, then the verdict.

Usage: bad_capture_corpus.py BUILD_DIR DATA_DIR SCRATCH_DIR
"""
import os
import re
import shutil
import subprocess
import sys
from report_check import verdict

build, data, scratch = sys.argv[1], sys.argv[2], sys.argv[3]
bad = os.path.join(data, "bad_capture")
HERE = os.path.dirname(os.path.abspath(__file__))
SUMMARY = os.path.join(HERE, "..", "..", "scripts", "capture_summary.py")
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

CASES = [
    # (folder, text the error line must hold after "<folder>/")
    ("calls_not_a_number", "capture-h-rank0.csv row 2 calls: expected a whole number >= 0, got '12x'"),
    ("truncated_row", "capture-h-rank0.csv row 2 avg_us: missing (the row has 20 of the header's 26 fields"),
    ("folder_named_like_a_file", "capture-h-rank1.csv: a folder, not a capture file"),
    ("total_us_inf", "capture-h-rank0.csv row 1 total_us: expected a finite number >= 0, got 'inf'"),
    ("timed_calls_exceed_calls", "capture-h-rank0.csv row 1 timed_calls: 18 exceeds calls (10)"),
    ("not_sampled_exceed_untimed", "capture-h-rank0.csv row 1 not_sampled_calls: 168 exceeds the "
                                   "untimed calls less those in graph captures (160)"),
    ("bytes_not_count", "capture-h-rank0.csv row 2 bytes: 12344, but count 1024 of fp32 (4 B each) "
                        "makes 4096 for MPI_Allreduce"),
    ("bytes_of_the_dtype", "capture-h-rank0.csv row 2 bytes: 16384, but count 1024 of bf16 (2 B each) "
                           "on 4 ranks makes 8192 for ncclAllGather"),
    ("garbled_cell", "capture-h-rank0.csv row 2 kind: '??gemm?' is not gemm, collective or p2p"),
    ("binary_garbage", "capture-h-rank0.csv row 2 pid: missing (the row has 2 of the header's 26 fields"),
    ("no_timed_calls_column", "capture-h-rank0.csv: no column 'timed_calls': not a capture file"),
    ("comm_stride_zero", "capture-h-rank0.csv row 2 comm_stride: 0, but a stride is at least 1 "
                         "(empty where it is not known)"),
    ("comm_id_not_hex", "capture-h-rank0.csv row 2 comm_id: expected 16 hex digits (or empty), got "
                        "'9C0F3A51D2E87B4'"),
    # a converted trace's table (trace_convert): its own sources, kinds and attention cells
    ("trace_source_unknown", "capture-h-rank0.csv row 2 source: 'trace:gpux' is not capture, "
                             "trace:gpu, trace:cpu or trace:et"),
    ("trace_kind_unknown", "capture-h-rank0.csv row 4 kind: 'kernel' is not gemm, attention, "
                           "collective, p2p, memory_bound, other or idle"),
    ("trace_causal_not_bool", "capture-h-rank0.csv row 1 causal: 'yes' is not true or false"),
    ("trace_attention_without_its_columns",
     "capture-h-rank0.csv row 1 heads_q: missing (the header has no such column)"),
]


def readers(folder, reports):
    """(name, command) of each reader given `folder`; reports go under `reports`."""
    return [
        ("bench_gemm", [os.path.join(build, "gemm/bench_gemm"), "--backend", "cpu", "--quiet",
                        "--capture-path", folder, "--dry-run"]),
        ("bench_ccl", [os.path.join(build, "collectives/bench_ccl"), "--backend", "mpi", "--quiet",
                       "--capture-path", folder, "--dry-run"]),
        ("bench_step", [os.path.join(build, "step/bench_step"), "--model", "tiny", "--quiet",
                        "--capture-path", folder, "--report-dir-path", reports]),
        ("capture_summary.py", [PY, SUMMARY, folder]),
    ]


def element_sizes(problems):
    """The bytes rule takes each dtype's element size from common/dtype (C++) and from the
    summary's own table: for every name either side knows, and two neither does, a row of 3
    elements claiming 5 bytes must get the same verdict from bench_gemm and the summary."""
    p = subprocess.run([os.path.join(build, "gemm/bench_gemm"), "--dtype", "none", "--dry-run"],
                       capture_output=True, text=True)
    cpp_names = p.stderr.split("(accepted: ")[-1].rstrip(")\n").split(", ")
    with open(SUMMARY) as f:
        py_names = re.findall(r'"(\w+)": \d+', f.read().split("ELEMENT_BYTES = ")[1].split("}")[0])
    if len(cpp_names) < 10 or len(py_names) < 10:
        problems.append(f"dtype names not found: C++ {cpp_names}, Python {py_names}")
    with open(os.path.join(data, "capture_replay", "capture-node1-rank0.csv")) as f:
        header, gemm_row = f.readline(), f.readline()  # a GEMM, so that bench_gemm has a case
    for dtype in sorted(set(cpp_names) | set(py_names) | {"int16", "other"}):
        folder = os.path.join(scratch, "dtype", dtype)
        os.makedirs(folder)
        with open(os.path.join(folder, "capture-h-rank0.csv"), "w") as f:
            f.write(header + gemm_row + f"node1,0,11,MPI_Allreduce,collective,all_reduce,{dtype},,,,,,,"
                    "5,3,2,sum,1,1,1.000,1.000,1.000,1.000,1.000,1.000,\n")
        verdicts = {}
        for name, cmd in readers(folder, folder + "-reports"):
            if name in ("bench_gemm", "capture_summary.py"):
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
                verdicts[name] = (p.returncode, [l for l in p.stderr.splitlines() if l.startswith("error:")])
        print(f"dtype {dtype}: {verdicts['bench_gemm']}")
        if len(set(map(str, verdicts.values()))) != 1:
            problems.append(f"dtype {dtype}: bench_gemm and the summary differ: {verdicts}")


def main() -> int:
    shutil.rmtree(scratch, ignore_errors=True)
    problems = []
    for case, expected in CASES:
        folder = os.path.join(bad, case)
        lines = {}
        for name, cmd in readers(folder, os.path.join(scratch, case)):
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, errors="replace")
            errors = [l for l in p.stderr.splitlines() if l.startswith("error:")]
            lines[name] = errors[0] if len(errors) == 1 else None
            print(f"{case} {name}: exit {p.returncode}: {errors}")
            if not (p.returncode == 2 and len(errors) == 1 and f"{folder}/{expected}" in errors[0]):
                problems.append(f"{case} {name}: exit {p.returncode}, error lines {errors}, "
                                f"expected one holding '{expected}'")
            if "Traceback" in p.stderr:
                problems.append(f"{case} {name}: a traceback: {p.stderr[-300:]}")
        if len(set(lines.values())) != 1:
            problems.append(f"{case}: the readers' lines differ: {lines}")
    element_sizes(problems)
    # a converted trace (the GPU step of tests/data/trace) is a good capture folder too
    converted = os.path.join(scratch, "converted_trace")
    shutil.rmtree(converted, ignore_errors=True)
    subprocess.run([os.path.join(build, "trace/trace_convert"), "--trace-path",
                    os.path.join(data, "trace", "host-a_4242.1700000000000.pt.trace.json"),
                    "--out", converted], capture_output=True, text=True, timeout=60, check=True)
    for good in (os.path.join(data, "capture_replay"), converted):
        for name, cmd in readers(good, os.path.join(scratch, "good")):
            if name in ("bench_gemm", "capture_summary.py"):  # one rank cannot run its 2-rank
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)  # collectives
                print(f"the good folder {os.path.basename(good)}, {name}: exit {p.returncode}")
                if p.returncode != 0:
                    problems.append(f"{good}, {name}: exit {p.returncode}: {p.stderr[-300:]}")
    return verdict(problems, None, f"ok: {len(CASES)} broken folders, each refused alike by "
                                   "bench_gemm, bench_ccl, bench_step and capture_summary.py; "
                                   "the same element size of every dtype")


if __name__ == "__main__":
    sys.exit(main())
