#!/usr/bin/python3
"""The capture library's cost on a real PyTorch training step, and what the capture then buys:
the job's GEMMs replayed alone against their in-job times (issue 41 item 4).

For --rounds rounds, alternating which runs first, bench/peers/torch_train_step.py runs --steps
timed steps plainly and under scripts/capture.sh (libopbench_capture.so preloaded; the script
empties the capture's tables after its warm-up, so they hold the timed steps' calls). Then:
  overhead          median step time with the capture / without - 1 (the medians over the rounds
                    of each run's median step); issue 41's goal is under 1%. With --every-call,
                    each round also runs the step under the capture with every GPU call timed
                    (OPBENCH_CAPTURE_SAMPLE=1), a second row beside the default sampling's
  calls per step    every call the capture holds (its files' `calls`) / the timed steps, and the
                    timed ones among them (`timed_calls`: on a GPU, those it timed with CUDA events);
                    on the CPU this counts the GEMMs of torch_train_step.py's one attention probe
                    after the steps too (4 at --model tiny); on the GPU the probe calls no cuBLAS
and bench_gemm --capture-path on the first round's capture: each GEMM shape the job called, its
in-job average (what the job's steps paid), its time alone, and their ratio.

Usage: bench/peers/capture_cost.py [--device cuda|cpu] [--model M] [--seq-len S]
         [--model-config-path F] [--precision bf16|autocast|fp32] [--rounds R] [--steps N]
         [--warmup W] [--max-time T] [--work-dir DIR] [--bench-gemm BIN] [--capture-lib LIB]
         [--every-call]
Defaults: cuda, llama3.2-1b at 4096 tokens (configs/models.json), bf16, 2 rounds of 10 steps;
--device cpu: tiny at 64 tokens, fp32. Prints Markdown tables; exit 0, 1 when a child failed
(its last lines are printed), 2 on bad usage. SIGTERM (a time budget's `timeout`) ends it with
the overhead table of the runs that ended, and exit 1.
"""
import argparse
import csv
import glob
import json
import os
import signal
import statistics
import sys
import tempfile

from peer_common import ChildFailed, fresh_folder
from peer_common import run_child as run

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("OPBENCH_BUILD_DIR", os.path.join(ROOT, "build"))


def torch_step(a, capture_dir=None, settings=None):
    cmd = [a.python, os.path.join(ROOT, "bench/peers/torch_train_step.py"), "--model-config-path",
           a.model_config_path, "--model", a.model, "--seq-len", str(a.seq_len), "--device",
           a.device, "--precision", a.precision, "--warmup", str(a.warmup), "--steps", str(a.steps)]
    if a.device == "cpu":
        cmd += ["--threads", "1"]
    env = None
    if capture_dir:
        cmd = [os.path.join(ROOT, "scripts/capture.sh"), "--out", capture_dir, "--interval", "0",
               "--", *cmd]
        env = dict(os.environ, OPBENCH_CAPTURE_LIB=a.capture_lib, **(settings or {}))
    lines = [l for l in run(cmd, env).splitlines() if l.startswith("{")]
    if not lines:
        raise ChildFailed("torch_train_step.py printed no JSON line")
    return json.loads(lines[-1])


def captured_calls(folder):
    calls = timed = 0
    for path in glob.glob(os.path.join(folder, "capture-*.csv")):
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                calls += int(r["calls"] or 0)
                timed += int(r["timed_calls"] or 0)
    return calls, timed


class Stopped(Exception):
    """SIGTERM (a time budget's `timeout`): the rounds measured so far still make a table."""


def stop(signum, frame):
    raise Stopped()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--model")
    ap.add_argument("--seq-len", type=int)
    ap.add_argument("--model-config-path", default=os.path.join(ROOT, "configs/models.json"))
    ap.add_argument("--precision", choices=("bf16", "autocast", "fp32"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--max-time", type=float, default=0.2, help="bench_gemm --max-time")
    ap.add_argument("--every-call", action="store_true",
                    help="also run under the capture with every GPU call timed")
    ap.add_argument("--work-dir")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--bench-gemm", default=os.path.join(BUILD, "gemm/bench_gemm"))
    ap.add_argument("--capture-lib", default=os.environ.get(
        "OPBENCH_CAPTURE_LIB", os.path.join(BUILD, "capture/libopbench_capture.so")))
    a = ap.parse_args()
    cpu = a.device == "cpu"
    a.model = a.model or ("tiny" if cpu else "llama3.2-1b")
    a.seq_len = a.seq_len or (64 if cpu else 4096)
    a.precision = a.precision or ("fp32" if cpu else "bf16")
    if a.rounds < 1 or a.steps < 1:
        print("error: --rounds and --steps must be at least 1", file=sys.stderr)
        return 2
    for path, what in ((a.bench_gemm, "--bench-gemm"), (a.capture_lib, "--capture-lib")):
        if not os.path.exists(path):
            print(f"error: {what} {path}: not built (bash scripts/build.sh)", file=sys.stderr)
            return 2
    work = a.work_dir or tempfile.mkdtemp(prefix="capture_cost_")
    os.makedirs(work, exist_ok=True)
    # The captured configurations: the library's defaults, and (--every-call) every call timed.
    configs = {"sampled (default)": {}}
    if a.every_call:
        configs["every call timed"] = {"OPBENCH_CAPTURE_SAMPLE": "1"}
    plain, captured, per_step = [], {name: [] for name in configs}, {}
    stopped = False
    signal.signal(signal.SIGTERM, stop)
    try:
        for i in range(a.rounds):
            # the order rotates from round to round, so that no configuration always runs first
            order = ["plain", *configs]
            order = order[i % len(order):] + order[:i % len(order)]
            for which in order:
                if which == "plain":
                    plain.append(torch_step(a)["median_ms"])
                    continue
                folder = "capture" if not configs[which] else "capture-every-call"
                capture = os.path.join(work, f"{folder}-{i + 1}")
                fresh_folder(capture, "capture_cost.py")
                s = torch_step(a, capture, configs[which])
                if not s.get("capture_reset"):
                    raise ChildFailed("the step under capture.sh did not find the capture library")
                captured[which].append(s["median_ms"])
                per_step.setdefault(which, captured_calls(capture))
    except ChildFailed as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except Stopped:
        stopped = True
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    measured = {which: times for which, times in captured.items() if times}
    if not plain or not measured:
        print("error: stopped (SIGTERM) before a step ran both with and without the capture",
              file=sys.stderr)
        return 1
    # The overhead table first, out at once: a replay that fails or outlasts a time budget does
    # not take it along.
    without = statistics.median(plain)
    print("| model, seq | precision | capture | rounds x steps | without capture ms "
          "| with capture ms | overhead | calls captured per step | timed per step |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|")
    for which, times in measured.items():
        with_ = statistics.median(times)
        calls, timed = per_step[which]
        print(f"| {a.model}, seq {a.seq_len} | {a.precision} | {which} | {len(times)} x {a.steps} "
              f"| {without:.2f} | {with_:.2f} | {100 * (with_ / without - 1):+.2f}% "
              f"| {calls / a.steps:.1f} | {timed / a.steps:.1f} |")
    print(f"\n(per round, without: {', '.join(f'{v:.2f}' for v in plain)} ms; "
          + "; ".join(f"{which}: {', '.join(f'{v:.2f}' for v in times)} ms"
                      for which, times in measured.items())
          + "; goal: overhead under 1%)", flush=True)
    if stopped:
        print(f"\n(stopped by SIGTERM, a time budget, before its {a.rounds} rounds ended: the "
              "table holds the runs that ended; no GEMM replay)", flush=True)
        return 1
    replay = os.path.join(work, "replay")
    try:
        run([a.bench_gemm, "--backend", "cpu" if cpu else "cuda", "--capture-path",
             os.path.join(work, "capture-1"), "--max-time", str(a.max_time), "--quiet",
             "--report-dir-path", replay])
    except ChildFailed as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    rows = []
    with open(os.path.join(replay, "gemm_capture.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    rows.sort(key=lambda r: -(float(r["in_job_us"] or 0) * int(r["captured_calls"] or 0)))
    print("\n| GEMM (m x n x k, layout, dtype, batch) | calls | in-job us | alone us | in-job / alone |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        layout = ("T" if r["transa"] == "T" else "N") + ("T" if r["transb"] == "T" else "N")
        alone = f"{float(r['time_us']):.1f}" if r["status"] == "ok" and r["time_us"] else r["status"]
        ratio = f"{float(r['in_job_ratio']):.2f}" if r["in_job_ratio"] else "-"  # a skipped row has none
        print(f"| {r['m']} x {r['n']} x {r['k']} {layout} {r['dtype']} b{r['batch']} "
              f"| {r['captured_calls']} | {float(r['in_job_us'] or 0):.1f} | {alone} | {ratio} |")
    print(f"\n(captures and replay in {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
