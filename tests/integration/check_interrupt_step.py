#!/usr/bin/env python3
"""Ctrl-C in bench_step keeps the operators it measured and the step rows it can (issue 27 item 6).

First a quick run measures every operator of the tiny model at micro-batch 1 (folder `first`).
Then bench_step projects micro-batches 1 and 2 from those reports, measuring what micro-batch 2
lacks with --min-time 1 (a second or more per operator); SIGINT goes out as soon as its first
measured row is on disk, so an operator is in progress. Expected: exit 130 within a few seconds;
every row on disk at the signal still there, whole and ok; step.csv with micro-batch 1's step
(every operator timed by the first run) and micro-batch 2's left empty, skipped, its note saying
the run was interrupted; step_operators.csv written; stderr saying it was interrupted.

Usage: check_interrupt_step.py BENCH_STEP OUT_DIR
"""
import csv
import glob
import io
import os
import shutil
import signal
import subprocess
import sys
import time
from report_check import verdict

MODEL = ["--model", "tiny", "--seq-len", "16", "--backend", "cpu"]


def measured_rows(folder):
    """The rows of the measured operators' reports (gemm_step.csv, ...): {file: [row, ...]}."""
    out = {}
    for path in sorted(glob.glob(os.path.join(folder, "*_step.csv"))):
        with open(path, newline="") as f:
            text = f.read()
        # Whole lines only: a row being written as we read is not on disk yet.
        out[os.path.basename(path)] = list(csv.DictReader(io.StringIO(text[:text.rfind("\n") + 1])))
    return out


def main() -> int:
    bench, out = sys.argv[1], sys.argv[2]
    shutil.rmtree(out, ignore_errors=True)
    first, cut = os.path.join(out, "first"), os.path.join(out, "cut")
    os.makedirs(out)
    quick = subprocess.run([bench, *MODEL, "--max-time", "0.01", "--quiet", "--report-dir-path", first],
                           capture_output=True, text=True, timeout=300)
    if quick.returncode != 0:
        print(f"FAIL: the first run exited {quick.returncode}: {quick.stderr[-600:]}")
        return 1
    problems = []
    with open(os.path.join(out, "stderr.txt"), "w") as err:
        proc = subprocess.Popen([bench, *MODEL, "--micro-batch", "1,2", "--from-reports", first, "--measure",
                                 "--min-time", "1", "--max-time", "2", "--report-dir-path", cut],
                                stdout=subprocess.DEVNULL, stderr=err)
        deadline, at_signal = time.time() + 120, {}
        while time.time() < deadline and proc.poll() is None:
            at_signal = measured_rows(cut)
            if any(at_signal.values()):
                break
            time.sleep(0.05)
        if not any(at_signal.values()):
            problems.append("no measured row on disk within 120 s (or the run ended first)")
        proc.send_signal(signal.SIGINT)
        sent = time.time()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            problems.append("still running 30 s after SIGINT")
    took = time.time() - sent
    with open(os.path.join(out, "stderr.txt")) as f:
        stderr = f.read()
    print(f"exit {proc.returncode} {took:.1f} s after SIGINT; rows at the signal: "
          + ", ".join(f"{name} {len(rows)}" for name, rows in at_signal.items()))
    if proc.returncode != 130:
        problems.append(f"exit {proc.returncode}, expected 130")
    if took > 10:
        problems.append(f"ended {took:.1f} s after SIGINT: the operator ran on instead of stopping at its next run")
    if "interrupted (SIGINT)" not in stderr:
        problems.append(f"stderr does not say the run was interrupted: {stderr[-600:]}")

    after = measured_rows(cut)
    for name, rows in at_signal.items():
        kept = after.get(name, [])
        if kept[:len(rows)] != rows:
            problems.append(f"{name}: the {len(rows)} row(s) on disk at the signal are not all kept")
    for name, rows in after.items():
        for r in rows:
            if r.get("status") != "ok" or not r.get("time_us"):
                problems.append(f"{name}: a row that is not whole and ok: {r.get('status')} {r.get('note')}")

    with open(os.path.join(cut, "step.csv"), newline="") as f:
        steps = {r["micro_batch"]: r for r in csv.DictReader(f)}
    print("step.csv: " + "; ".join(f"micro_batch {mb} step_time_ms={r['step_time_ms']!r} {r['status']} "
                                   f"{r['note'][:60]!r}" for mb, r in sorted(steps.items())))
    if sorted(steps) != ["1", "2"]:
        problems.append(f"step.csv holds micro-batches {sorted(steps)}, expected 1 and 2")
    else:
        one, two = steps["1"], steps["2"]
        if not one["step_time_ms"] or one["status"] != "ok":
            problems.append("micro-batch 1 (every operator timed by the first run) has no step time")
        if two["step_time_ms"] or two["status"] != "skipped":
            problems.append("micro-batch 2 (cut short) has a step time or is not skipped")
        if not two["note"].startswith("interrupted (SIGINT) before every operator was measured; no time for "):
            problems.append(f"micro-batch 2's note does not say the run was interrupted: {two['note'][:200]!r}")
    with open(os.path.join(cut, "step_operators.csv"), newline="") as f:
        operators = list(csv.DictReader(f))
    if not any(r["micro_batch"] == "2" and r["status"] == "missing" for r in operators) or \
            not any(r["micro_batch"] == "1" and r["status"] == "ok" for r in operators):
        problems.append("step_operators.csv lacks micro-batch 1's timed or micro-batch 2's missing operators")
    return verdict(problems, None, "ok")


if __name__ == "__main__":
    sys.exit(main())
