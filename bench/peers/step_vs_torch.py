#!/usr/bin/python3
"""bench_step's projection against real PyTorch training steps on this CPU, as one Markdown table.

For each model of --models (a models.json, default bench/peers/step_models.json) it runs
  measured   bench/peers/torch_train_step.py: real fp32 training steps (median step time), with
             --profile its own breakdown (matmul, attention, optimizer, memory-bound);
  projected  bench_step --backend cpu --dtype fp32: every operator of the same step measured
             through opbench's CPU providers (OpenBLAS GEMMs, blocked attention, fused
             memory-bound loops, AdamW in one pass) and added up;
and prints both with the error (projected - measured) / measured, and the two breakdowns side by
side in ms so the error can be placed (torch's: its profiler's shares of the measured median).

Threads: torch gets --threads (default 1). PyTorch's own OpenMP threads and OpenBLAS's pthreads
(which its GEMMs call, BLAS_INFO=generic in Debian's build) fight for the same cores when both
are 2 on a 2-core machine: its GEMMs then run ~25% slower inside a step than alone. With 1
OpenMP thread OpenBLAS still uses every core, as bench_step's providers do.

--ddp 2: also 2 DDP ranks over gloo (torch_train_step.py --ddp 2, 1 thread each), against
bench_step --dp 2 run on one core (taskset -c 0: each rank has one) with the gradient all-reduce
timed by bench_ccl under mpirun (MPI on the CPU, a sweep its buckets are interpolated from) and
--overlap full (DDP overlaps its bucketed all-reduce with the backward).

Exit 0 when every run worked (the error is reported, not judged); 1 when a child failed (its
last lines are printed); 2 on bad usage.
"""
import argparse
import csv
import json
import os
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PARTS = (("GEMM", "gemm_ms", "matmul/linear"), ("attention", "attention_ms", "attention"),
         ("memory-bound", "memop_ms", "memory-bound"), ("optimizer", "optimizer_ms", "optimizer"),
         ("communication", "exposed_comm_ms", "communication"))


class ChildFailed(Exception):
    pass


def run(cmd, env=None):
    print("$ " + " ".join(shlex.quote(c) for c in cmd), file=sys.stderr, flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if r.returncode != 0:
        tail = "\n".join(r.stdout.strip().splitlines()[-8:])
        raise ChildFailed(f"{os.path.basename(cmd[0])} exited {r.returncode}:\n{tail}")
    return r.stdout


def torch_step(a, model, ranks):
    cmd = ["/usr/bin/python3", os.path.join(ROOT, "bench/peers/torch_train_step.py"), "--model-config-path",
           a.model_config_path, "--model", model, "--micro-batch", str(a.micro_batch), "--grad-accum",
           str(a.grad_accum), "--warmup", str(a.warmup), "--steps", str(a.steps), "--threads",
           str(1 if ranks > 1 else a.threads)]
    if a.seq_len:
        cmd += ["--seq-len", str(a.seq_len)]
    if ranks > 1:
        cmd += ["--ddp", str(ranks)]
    if a.profile:
        cmd += ["--profile"]
    lines = [l for l in run(cmd).splitlines() if l.startswith("{")]
    if not lines:
        raise ChildFailed("torch_train_step.py printed no JSON line")
    return json.loads(lines[-1])


def bench_step(a, model, out, extra=(), prefix=()):
    cmd = [*prefix, a.bench_step, "--model-config-path", a.model_config_path, "--model", model, "--backend",
           "cpu", "--dtype", "fp32", "--micro-batch", str(a.micro_batch), "--grad-accum", str(a.grad_accum),
           "--report-dir-path", out, "--quiet", *extra]
    if a.seq_len:
        cmd += ["--seq-len", str(a.seq_len)]
    run(cmd)
    with open(os.path.join(out, "step.csv"), newline="") as f:
        return next(csv.DictReader(f))


def ccl_allreduce(a, out):
    """The gradient all-reduce of 2 ranks over MPI, swept so every DDP bucket interpolates."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    run(["timeout", "600", "mpirun", "-np", "2", "--oversubscribe", "--mca", "mpi_yield_when_idle", "1",
         a.bench_ccl, "--backend", "mpi", "--op", "all_reduce", "-d", "fp32", "-b", "1K", "-e", "64M", "-f", "2",
         "--report-dir-path", out, "--quiet"], env)


def row(label, tokens, measured, projected, profile):
    step = float(projected["step_time_ms"])
    error = (step - measured) / measured
    parts = []
    for _, column, category in PARTS:
        ours = f"{float(projected[column] or 0):.0f}"
        theirs = f"{profile[category] / 100 * measured:.0f}" if profile and category in profile else "-"
        parts.append(f"{ours} / {theirs}")
    return f"| {label} | {tokens} | {measured:.0f} | {step:.0f} | {100 * error:+.1f}% | " + " | ".join(parts) + " |"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="llama-cpu-s,llama-cpu-m")
    ap.add_argument("--model-config-path", default=os.path.join(ROOT, "bench/peers/step_models.json"))
    ap.add_argument("--seq-len", type=int, default=0, help="default: the model's")
    ap.add_argument("--micro-batch", type=int, default=1)
    ap.add_argument("--grad-accum", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1, help="torch's OpenMP threads (see above)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="torch's own breakdown beside the projection's")
    ap.add_argument("--ddp", type=int, default=0, choices=(0, 2), help="2: also 2 DDP ranks")
    ap.add_argument("--bench-step", default=os.path.join(ROOT, "build/step/bench_step"))
    ap.add_argument("--bench-ccl", default=os.path.join(ROOT, "build/collectives/bench_ccl"))
    ap.add_argument("--work-dir", help="keep the reports here (default: a temporary folder)")
    a = ap.parse_args()
    for path, what in ((a.bench_step, "--bench-step"), (a.bench_ccl, "--bench-ccl")):
        if not os.access(path, os.X_OK):
            print(f"error: {what} {path}: not built (bash scripts/build.sh)", file=sys.stderr)
            return 2
    work = a.work_dir or tempfile.mkdtemp(prefix="step_vs_torch_")
    lines = ["| model | tokens/step | measured ms | projected ms | error | "
             + " | ".join(f"{name} ms (ours / torch)" for name, _, _ in PARTS) + " |",
             "|---|---:|---:|---:|---:|" + "---:|" * len(PARTS)]
    try:
        for model in a.models.split(","):
            measured = torch_step(a, model, 1)
            projected = bench_step(a, model, os.path.join(work, model))
            tokens = measured["micro_batch"] * measured["seq_len"] * measured["grad_accum"]
            lines.append(row(f"{model}, 1 process", tokens, measured["median_ms"], projected,
                             measured.get("profile_pct")))
            if a.ddp:
                ccl = os.path.join(work, "ccl")
                if not os.path.exists(os.path.join(ccl, "ccl_all_reduce.csv")):
                    ccl_allreduce(a, ccl)
                measured = torch_step(a, model, a.ddp)
                projected = bench_step(a, model, os.path.join(work, model + "-ddp"),
                                       ["--dp", str(a.ddp), "--overlap", "full", "--from-reports", ccl, "--measure"],
                                       ["taskset", "-c", "0"])
                lines.append(row(f"{model}, DDP {a.ddp} ranks", tokens * a.ddp, measured["median_ms"], projected,
                                 measured.get("profile_pct")))
    except ChildFailed as e:
        print("\n".join(lines))
        print(f"error: {e}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    print(f"\n(torch: fp32, {a.threads} OpenMP thread(s) per process; reports in {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
