#!/usr/bin/python3
"""bench_step's projection against real PyTorch training steps on this CPU (or, with --device
cuda, on one GPU), as one Markdown table.

For each case of --cases (MODEL[:SEQ_LEN], models of --model-config-path, default
bench/peers/step_models.json):
  measured     bench/peers/torch_train_step.py under scripts/capture.sh: real fp32 training steps
               (the median step), its peak memory above its start, and the capture of every GEMM
               it called (the capture's own cost is one timer pair per BLAS call); on jemalloc
               (--allocator, default jemalloc: a caching allocator, as GPU frameworks have; on
               glibc's malloc, torch's aligned blocks keep landing on fresh pages, whose faults
               cost 10-15 us each on this VM and no isolated operator pays);
  eager        bench_step --kernels eager --backend cpu --dtype fp32: the kernels PyTorch eager
               runs, each measured alone through opbench's CPU providers, added up;
  calibrated   the same plan with --capture-path: the GEMMs' in-job averages from the capture in
               place of the isolated times (the rest as measured for `eager`);
  fused        bench_step's default plan (flash attention, fused norms and AdamW): what fusion
               would buy, for reference;
  memory       bench_step's mem_peak_gib for the eager plan against the peak resident memory of
               one more torch step run with --mmap-tensors (every tensor its own mapping, so the
               peak follows the live tensors; the timed run keeps glibc's freed blocks);
and the errors (projected - measured) / measured. The targets (issue 27): eager within 15%,
calibrated within 5%, memory within 10%; --check-targets exits 1 when one is missed.

Threads: torch gets --threads (default 1) OpenMP threads; its GEMMs call OpenBLAS, which keeps a
pool of every core by itself. bench_step measures as the job runs: --threads the same for the
memory-bound and attention operators, --blas-threads every core this process may run on for the
GEMMs. Two pools on 2 cores (torch --threads 2) slow the job's GEMMs by about a quarter: what the
capture calibrates away.

--ddp 2: also 2 DDP ranks over gloo (torch_train_step.py --ddp 2, 1 thread each), against
bench_step --dp 2 run on one core (taskset -c 0: each rank has one) with the gradient all-reduce
timed by bench_ccl under mpirun (MPI on the CPU, a sweep its buckets are interpolated from) and
--overlap full (DDP overlaps its bucketed all-reduce with the backward).

--device cuda (one GPU, PyTorch 2.x with CUDA; default cases llama3.2-1b:4096 and
llama3.2-3b:2048 of configs/models.json): for each case and each --optimizer-impl (default
foreach,fused: torch.optim.AdamW's default on CUDA and fused=True)
  measured     torch_train_step.py --device cuda --precision bf16 (pure bf16 parameters, gradients
               and AdamW state: torchtune's dtype bf16; --precision autocast: fp32 parameters under
               bf16 autocast): the median of --steps steps, each between torch.cuda.synchronize()
               calls, and torch.cuda.max_memory_allocated() as the peak; then --kineto-trace: one
               more step under torch.profiler (CPU and CUDA activities, record_shapes=True);
  matched      bench_step --backend cuda --kernels eager --attention-kernels fused --optimizer-impl
               IMPL --dtype bf16 --grad-dtype bf16 --optimizer-dtype bf16: the plan PyTorch ran,
               operator by operator — the separate q, k, v, o, gate, up, down GEMMs (cuBLASLt),
               attention fused as scaled_dot_product_attention runs it (cuDNN SDPA, forward and
               backward), the norms, rotary embedding, activations, residual adds, loss and
               embedding eager (bench_memops's kernels, one per PyTorch kernel), AdamW as IMPL;
  calibrated   the same plan with --trace-path: the GEMMs' and attention's in-job times from the
               profiled step's trace in place of the isolated ones, and the memory-bound and
               optimizer operators scaled as families to the trace's kernels of each;
  profiled     (the parts table) the profiled step's own GPU time by part, from trace_convert
               (--trace-convert) of its trace (each AdamW's run records its own): the in-job
               kernel times of the GEMMs, attention, the memory-bound operators and the
               optimizer's (aten::_foreach_*, aten::_fused_adamw_), and the GPU's idle time
               between its first and last kernel (an upper bound: the profiler slows the host
               side), split by the phase whose kernel the GPU waited for (forward, backward,
               optimizer), beside the projections' parts, whose host part is that wait as
               modelled;
  fused        bench_step's fused plan (fused QKV, norms, SwiGLU, loss, AdamW), for reference;
  memory       the matched plan's mem_peak_gib against the peak;
every projection (on the CPU too) with --host-us-per-kernel FORWARD,BACKWARD from the torch step's
own host cost a kernel (torch_train_step.py measures it on the step's device: on the GPU each
phase's issue time over the kernels its profiled step launched there, else one eager operator
alone; the parts' "host" column), unless --no-host-cost;
with autocast the projections count the activations in bf16 where autocast keeps the residual
stream, the norms and the loss in fp32 (they say so). Targets on the GPU (issue 41): matched
within 10%, calibrated within 5%, memory within 10%.

Exit 0 when every run worked; 1 when a child failed (its last lines are printed) or, with
--check-targets, a target was missed; 2 on bad usage.
"""
import argparse
import csv
import glob
import json
import os
import re
import sys
import tempfile

from peer_common import ChildFailed, fresh_folder
from peer_common import run_child as run

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PARTS = (("GEMM", "gemm_ms", "matmul/linear"), ("attention", "attention_ms", "attention"),
         ("memory-bound", "memop_ms", "memory-bound"), ("optimizer", "optimizer_ms", "optimizer"),
         ("communication", "exposed_comm_ms", "communication"))


def torch_step(a, model, seq, ranks, capture_dir=None, memory=False):
    """One torch_train_step.py run; `memory`: one step with --mmap-tensors, whose peak resident
    memory follows the live tensors (the default heap keeps freed blocks and their holes)."""
    cmd = [a.python, os.path.join(ROOT, "bench/peers/torch_train_step.py"), "--model-config-path",
           a.model_config_path, "--model", model, "--micro-batch", str(a.micro_batch), "--grad-accum",
           str(a.grad_accum), "--warmup", "1" if memory else str(a.warmup), "--steps",
           "1" if memory else str(a.steps), "--threads", str(1 if ranks > 1 else a.threads)]
    if memory:
        cmd += ["--mmap-tensors"]
    elif a.allocator == "jemalloc":
        cmd += ["--jemalloc"]
    if seq:
        cmd += ["--seq-len", str(seq)]
    if ranks > 1:
        cmd += ["--ddp", str(ranks)]
    if a.profile and not memory:
        cmd += ["--profile"]
    env = None
    if capture_dir:
        cmd = [os.path.join(ROOT, "scripts/capture.sh"), "--out", capture_dir, "--interval", "0", "--", *cmd]
        env = dict(os.environ, OPBENCH_CAPTURE_LIB=a.capture_lib)
    lines = [l for l in run(cmd, env).splitlines() if l.startswith("{")]
    if not lines:
        raise ChildFailed("torch_train_step.py printed no JSON line")
    return json.loads(lines[-1])


def host_source(measured):
    """Where torch_train_step.py's host cost a kernel came from, in words."""
    if measured.get("host_us_from") == "step":
        issued, launches = measured.get("host_issue_ms", {}), measured.get("launches_per_step", {})
        return "the step's own: " + ", ".join(
            f"{p} {issued.get(p, 0):.1f} ms to issue {launches.get(p, 0):.0f} kernels"
            for p in ("forward", "backward", "optimizer")) + (
            f"; one operator alone {measured.get('host_us_one_op_fwd')} and "
            f"{measured.get('host_us_one_op_bwd')} us")
    return "one eager operator alone"


def host_flags(a, measured):
    """bench_step --host-us-per-kernel with the torch step's own host cost of an eager operator
    (torch_train_step.py measures it on the step's device), unless --no-host-cost."""
    fwd, bwd = measured.get("host_us_per_op_fwd"), measured.get("host_us_per_op_bwd")
    if a.no_host_cost or not fwd or not bwd:
        return []
    return ["--host-us-per-kernel", f"{fwd},{bwd}"]


def bench_step(a, model, seq, out, extra=(), prefix=()):
    cmd = [*prefix, a.bench_step, "--model-config-path", a.model_config_path, "--model", model, "--backend",
           "cpu", "--dtype", "fp32", "--micro-batch", str(a.micro_batch), "--grad-accum", str(a.grad_accum),
           "--report-dir-path", out, "--quiet", *extra]
    if seq:
        cmd += ["--seq-len", str(seq)]
    # The job's threading: torch's elementwise kernels on its --threads, OpenBLAS on every core.
    cmd += ["--threads", str(a.threads), "--blas-threads", str(len(os.sched_getaffinity(0)))]
    if a.max_time:
        cmd += ["--max-time", str(a.max_time)]
    run(cmd)
    with open(os.path.join(out, "step.csv"), newline="") as f:
        return list(csv.DictReader(f))


def ccl_allreduce(a, out):
    """The gradient all-reduce of 2 ranks over MPI, swept so every DDP bucket interpolates."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    run(["timeout", "600", "mpirun", "-np", "2", "--oversubscribe", "--mca", "mpi_yield_when_idle", "1",
         a.bench_ccl, "--backend", "mpi", "--op", "all_reduce", "-d", "fp32", "-b", "1K", "-e", "64M", "-f", "2",
         "--report-dir-path", out, "--quiet"], env)


def error(projected, measured):
    return (projected - measured) / measured if projected is not None and measured else None


def pct(e):
    return "-" if e is None else f"{100 * e:+.1f}%"


def cell(value, err, digits=0):
    return "-" if value is None else f"{value:.{digits}f} ({pct(err)})"


def step_ms(row):
    return float(row["step_time_ms"]) if row and row.get("step_time_ms") else None


def mem_gib(row):
    return float(row["mem_peak_gib"]) if row and row.get("mem_peak_gib") else None


def parts(projected, profile, measured):
    out = []
    for _, column, category in PARTS:
        ours = f"{float(projected[column] or 0):.0f}"
        theirs = f"{profile[category] / 100 * measured:.0f}" if profile and category in profile else "-"
        out.append(f"{ours} / {theirs}")
    return out


# ---------------------------------------------------------------- --device cuda

CUDA_CASES = "llama3.2-1b:4096,llama3.2-3b:2048"
CUDA_TARGETS = (("matched", 0.10), ("calibrated", 0.05), ("memory", 0.10))


def torch_step_cuda(a, model, seq, impl, trace_dir=None):
    """One torch_train_step.py run on the GPU: timed steps, the peak, then (with a trace folder)
    one profiled step."""
    cmd = [a.python, os.path.join(ROOT, "bench/peers/torch_train_step.py"), "--model-config-path",
           a.model_config_path, "--model", model, "--device", "cuda", "--precision", a.precision,
           "--optimizer-impl", impl, "--micro-batch", str(a.micro_batch), "--grad-accum",
           str(a.grad_accum), "--warmup", str(a.warmup), "--steps", str(a.steps)]
    if trace_dir:
        cmd += ["--kineto-trace", trace_dir]
    if seq:
        cmd += ["--seq-len", str(seq)]
    lines = [l for l in run(cmd).splitlines() if l.startswith("{")]
    if not lines:
        raise ChildFailed("torch_train_step.py printed no JSON line")
    return json.loads(lines[-1])


def precision_flags(a):
    """bench_step's dtypes for the torch step's precision: pure bf16 has bf16 gradients and
    moments and no master weights; autocast fp32 ones (its fp32 activations are not modelled)."""
    if a.precision == "bf16":
        return ["--dtype", "bf16", "--grad-dtype", "bf16", "--optimizer-dtype", "bf16"]
    return ["--dtype", "bf16", "--grad-dtype", "fp32", "--optimizer-dtype", "fp32"]


def bench_step_cuda(a, model, seq, out, extra=()):
    cmd = [a.bench_step, "--model-config-path", a.model_config_path, "--model", model, "--backend",
           "cuda", *precision_flags(a), "--micro-batch", str(a.micro_batch), "--grad-accum",
           str(a.grad_accum), "--report-dir-path", out, "--quiet", *extra]
    if seq:
        cmd += ["--seq-len", str(seq)]
    if a.max_time:
        cmd += ["--max-time", str(a.max_time)]
    run(cmd)
    with open(os.path.join(out, "step.csv"), newline="") as f:
        return list(csv.DictReader(f))


# The phases of a step whose host wait bench_step projects and a GPU trace measures.
IDLE_PHASES = ("forward", "backward", "optimizer")


def parts_text(row):
    """The parts, the host part split by phase as the trace's idle time is (traced_text)."""
    text = " / ".join(f"{float(row.get(c) or 0):.1f}" for c in ("gemm_ms", "attention_ms", "memop_ms",
                                                               "optimizer_ms", "host_ms"))
    if not float(row.get("host_ms") or 0):
        return text
    return text + " (" + ", ".join(f"{p} {float(row.get(f'host_{p}_ms') or 0):.1f}"
                                   for p in IDLE_PHASES) + ")"


# The optimizer's kernels among a trace's memory-bound operators: foreach AdamW's _foreach_* ops
# and fused AdamW's one kernel (aten::_fused_adamw_).
OPTIMIZER_APIS = ("aten::_foreach_", "aten::_fused_adam")


def traced_parts(a, trace, out):
    """The profiled step's GPU time by part, from trace_convert's table of its trace: in-job
    kernel times of the GEMMs, attention, the memory-bound operators, the optimizer's among them,
    and the GPU's idle time between its first and last kernel, each per step (ms), with that idle
    time by phase (idle_forward, idle_backward, idle_optimizer) where the trace shows the phases;
    None when the trace could not be converted. The profiled step's host side is slower than an
    unprofiled one's (the profiler records every operator), so its idle time is an upper bound."""
    if not os.access(a.trace_convert, os.X_OK):
        return None
    fresh_folder(out, "step_vs_torch.py")
    try:
        said = run([a.trace_convert, "--trace-path", trace, "--out", out])
    except ChildFailed:
        return None
    steps = re.search(r"(\d+) steps?\b", said)
    steps = max(1, int(steps.group(1))) if steps else 1
    total = {"gemm": 0.0, "attention": 0.0, "memory_bound": 0.0, "optimizer": 0.0, "idle": 0.0,
             "other": 0.0}
    for path in glob.glob(os.path.join(out, "*.csv")):
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                kind = r["kind"] if r["kind"] in total else "other"
                if kind == "memory_bound" and r["api"].startswith(OPTIMIZER_APIS):
                    kind = "optimizer"
                ms = float(r["total_us"] or 0) / 1e3 / steps
                total[kind] += ms
                # "(GPU 0 idle, backward)": the wait before that phase's kernels (a trace that
                # shows the step's phases, docs/architecture.md#profiler-traces)
                phase = re.fullmatch(r"\(GPU \S+ idle, (\w+)\)", r["api"]) if kind == "idle" else None
                if phase:
                    total[f"idle_{phase.group(1)}"] = total.get(f"idle_{phase.group(1)}", 0.0) + ms
    return total


def traced_text(t):
    text = " / ".join(f"{t[k]:.1f}" for k in ("gemm", "attention", "memory_bound", "optimizer",
                                               "idle"))
    split = [f"{p} {t[f'idle_{p}']:.1f}" for p in IDLE_PHASES if f"idle_{p}" in t]
    return f"{text} ({', '.join(split)})" if split else text


def emit(line):
    """A line of the table, out at once: a run ended at its time budget keeps its finished rows."""
    print(line, flush=True)


def cuda_cases(a, cases, work):
    """The GPU table, a row per case and AdamW implementation printed as each finishes (a case
    whose child fails gets a failed row, and the others still run); returns the parts table, the
    notes, the target misses and the failures."""
    emit("| case | adamw | tokens/step | measured ms | matched ms (error) | calibrated ms (error) "
         "| fused ms (error) | peak GiB | predicted GiB (error) |")
    emit("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    parts = ["| case | adamw | GEMM / attention / memory-bound / optimizer / host ms: matched | calibrated "
             "| the profiled step's kernels / GPU idle |",
             "|---|---|---|---|---|"]
    notes, misses, failures = [], [], []
    impls = [i for i in a.optimizer_impl.split(",") if i]
    for model, seq in cases:
        # The first AdamW's operators' reports serve the next ones, which measure only their
        # optimizer's kernels. Each AdamW's run records its own trace: the GEMMs and attention
        # the calibration reads are the same whatever the optimizer, but where the GPU waits for
        # the host (the trace's idle time by phase) is not.
        first = None
        for impl in impls:
            name = f"{model}-{seq or 'model'}-{impl}"
            try:
                first = cuda_case(a, model, seq, impl, name, work, first, parts, notes, misses)
            except ChildFailed as e:
                emit(f"| {model}, seq {seq or '-'} | {impl} | failed: {str(e)[:200].replace('|', '/')} "
                     "| - | - | - | - | - | - |")
                failures.append(f"{name}: {e}")
    return parts, notes, misses, failures


def cuda_case(a, model, seq, impl, name, work, first, parts, notes, misses):
    """One case's row (emitted); returns the reports the next AdamW reuses."""
    trace = os.path.join(work, "trace-" + name)
    fresh_folder(trace, "step_vs_torch.py")
    measured = torch_step_cuda(a, model, seq, impl, trace)
    traced = traced_parts(a, trace, os.path.join(work, "traced-" + name))
    ms = measured["median_ms"]
    plan = ["--kernels", "eager,fused", "--attention-kernels", "fused", "--optimizer-impl", impl,
            *host_flags(a, measured)]
    if first:
        plan += ["--from-reports", first, "--measure"]
    rows = bench_step_cuda(a, model, seq, os.path.join(work, name), plan)
    reports = ",".join(dict.fromkeys(filter(None, (first, os.path.join(work, name)))))
    first = first or os.path.join(work, name)
    matched = next(r for r in rows if r["kernels"] == "eager")
    fused = next(r for r in rows if r["kernels"] == "fused")
    calibrated = bench_step_cuda(a, model, seq, os.path.join(work, name + "-calibrated"),
                                 ["--kernels", "eager", "--attention-kernels", "fused",
                                  "--optimizer-impl", impl, "--trace-path", trace,
                                  "--from-reports", reports, "--measure",
                                  *host_flags(a, measured)])[0]
    tokens = measured["micro_batch"] * measured["seq_len"] * measured["grad_accum"]
    errors = {"matched": error(step_ms(matched), ms), "calibrated": error(step_ms(calibrated), ms),
              "fused": error(step_ms(fused), ms)}
    peak = measured.get("peak_mem_gib")
    errors["memory"] = error(mem_gib(matched), peak)
    case = f"{model}, seq {measured['seq_len']}"
    emit(f"| {case} | {measured.get('optimizer_impl', impl)} | {tokens} | {ms:.1f} | "
         f"{cell(step_ms(matched), errors['matched'], 1)} | "
         f"{cell(step_ms(calibrated), errors['calibrated'], 1)} | "
         f"{cell(step_ms(fused), errors['fused'], 1)} | "
         f"{'-' if peak is None else f'{peak:.2f}'} | "
         f"{cell(mem_gib(matched), errors['memory'], 2)} |")
    parts.append(f"| {case} | {impl} | {parts_text(matched)} | {parts_text(calibrated)} | "
                 f"{traced_text(traced) if traced else '-'} |")
    note = (f"{case}, adamw {impl}: torch {measured.get('torch')} on {measured.get('gpu')}, "
            f"{measured.get('precision')}, attention {measured.get('attention')}; host cost a "
            f"kernel {measured.get('host_us_per_op_fwd', '-')} us forward, "
            f"{measured.get('host_us_per_op_bwd', '-')} us backward "
            f"({host_source(measured)}); trace {trace}")
    if not str(measured.get("attention", "")).startswith("cudnn"):
        # PyTorch 2.11 prefers cuDNN's SDPA on sm_90 and sm_100 with cuDNN above 9.15
        # (check_prefer_cudnn_attention, aten/src/ATen/native/transformers/cuda/sdp_utils.cpp);
        # another backend (an older cuDNN on the library path, TORCH_CUDNN_SDPA_DEPRIORITIZED)
        # makes the matched plan's attention, cuDNN's, another kernel than the job's
        note += ("; the matched plan times cuDNN's SDPA where torch ran another backend: its "
                 "attention is a peer's here, and the calibrated column, which reads the job's "
                 "kernel times, is the like-for-like one")
    notes.append(note)
    for what, target in CUDA_TARGETS:
        e = errors[what]
        if e is None or abs(e) > target:
            misses.append(f"{name}: {what} error {pct(e)} (target {100 * target:.0f}%)")
    return first


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", help="MODEL[:SEQ_LEN],... (default seq: the model's; default cases "
                    "llama-cpu-xs:256,llama-cpu-s:512,llama-cpu-m:1024 on the CPU, "
                    f"{CUDA_CASES} with --device cuda)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="cuda: bf16 steps on one GPU against bench_step --backend cuda (above)")
    ap.add_argument("--precision", choices=("bf16", "autocast"), default="bf16",
                    help="--device cuda: the torch step's precision (default bf16)")
    ap.add_argument("--optimizer-impl", default="foreach,fused",
                    help="--device cuda: AdamW implementations, comma-separated (default foreach,fused)")
    ap.add_argument("--python", default=None,
                    help="the Python with torch (default /usr/bin/python3 on the CPU, this one with cuda)")
    ap.add_argument("--models", help="the same as --cases without sequence lengths (kept for old commands)")
    ap.add_argument("--model-config-path",
                    help="default bench/peers/step_models.json on the CPU, configs/models.json with cuda")
    ap.add_argument("--seq-len", type=int, default=0, help="every case's sequence length (default: the case's)")
    ap.add_argument("--micro-batch", type=int, default=1)
    ap.add_argument("--grad-accum", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1, help="torch's OpenMP threads (see above)")
    ap.add_argument("--max-time", type=float, default=0,
                    help="bench_step --max-time: seconds per operator (default: its own, 2)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="torch's own breakdown beside the eager projection's")
    ap.add_argument("--allocator", choices=("jemalloc", "glibc"), default="jemalloc",
                    help="the timed torch steps' allocator (default jemalloc; glibc: its heap, "
                    "torch_train_step.py's default)")
    ap.add_argument("--ddp", type=int, default=0, choices=(0, 2), help="2: also 2 DDP ranks")
    ap.add_argument("--check-targets", action="store_true", help="exit 1 when an error is beyond its target")
    ap.add_argument("--bench-step", default=os.path.join(ROOT, "build/step/bench_step"))
    ap.add_argument("--bench-ccl", default=os.path.join(ROOT, "build/collectives/bench_ccl"))
    ap.add_argument("--capture-lib", default=os.path.join(ROOT, "build/capture/libopbench_capture.so"))
    ap.add_argument("--no-host-cost", action="store_true",
                    help="project without the torch step's host cost of an eager operator "
                         "(bench_step --host-us-per-kernel, given by default)")
    ap.add_argument("--trace-convert", default=None,
                    help="trace_convert, for the profiled step's breakdown (default: beside --bench-step's "
                         "build tree, trace/trace_convert)")
    ap.add_argument("--work-dir", help="keep the reports and captures here (default: a temporary folder)")
    a = ap.parse_args()
    cuda = a.device == "cuda"
    a.trace_convert = a.trace_convert or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(a.bench_step))), "trace", "trace_convert")
    if a.model_config_path is None:
        a.model_config_path = os.path.join(ROOT, "configs/models.json" if cuda else "bench/peers/step_models.json")
    if a.cases is None:
        a.cases = CUDA_CASES if cuda else "llama-cpu-xs:256,llama-cpu-s:512,llama-cpu-m:1024"
    if a.python is None:
        a.python = sys.executable if cuda else "/usr/bin/python3"
    for impl in a.optimizer_impl.split(","):
        if impl not in ("fused", "foreach", "single"):
            print(f"error: --optimizer-impl: '{impl}' is not fused, foreach or single", file=sys.stderr)
            return 2
    if cuda and a.ddp:
        print("error: --ddp: with --device cpu only (one GPU here)", file=sys.stderr)
        return 2
    if cuda and "single" in a.optimizer_impl.split(","):
        # its kernels (mul_, lerp_, addcmul_, ...) are the step's other elementwise kernels by
        # name: the traced parts table finds the optimizer by its _foreach_/_fused_ kernels
        print("error: --optimizer-impl single: with --device cpu only (on a GPU the per-tensor "
              "AdamW's kernels cannot be told from the step's own by name, so the traced parts "
              "table would count them as memory-bound)", file=sys.stderr)
        return 2
    for path, what in ((a.bench_step, "--bench-step"), (a.bench_ccl, "--bench-ccl")):
        if not os.access(path, os.X_OK):
            print(f"error: {what} {path}: not built (bash scripts/build.sh)", file=sys.stderr)
            return 2
    if not os.path.isfile(a.capture_lib):
        print(f"error: --capture-lib {a.capture_lib}: not built (bash scripts/build.sh)", file=sys.stderr)
        return 2
    cases = []
    for item in (a.models or a.cases).split(","):
        model, _, seq = item.partition(":")
        if not model or (seq and not seq.isdigit()):
            print(f"error: --cases: '{item}' is not MODEL or MODEL:SEQ_LEN", file=sys.stderr)
            return 2
        cases.append((model, a.seq_len or (int(seq) if seq else 0)))
    work = a.work_dir or tempfile.mkdtemp(prefix="step_vs_torch_")
    if cuda:
        parts_lines, notes, misses, failures = cuda_cases(a, cases, work)
        print("\n" + "\n".join(parts_lines))
        print("\n(matched: bench_step --kernels eager --attention-kernels fused, the plan PyTorch ran;"
              " torch " + ("bf16 parameters, gradients and AdamW state" if a.precision == "bf16" else
                           "fp32 parameters under bf16 autocast: the projections count its fp32 "
                           "activations in bf16") + f"; reports and traces in {work})")
        for n in notes:
            print(f"note: {n}")
        for f in failures:
            print(f"error: {f}", file=sys.stderr)
        if failures:
            return 1
        if a.check_targets and misses:
            for m in misses:
                print(f"target missed: {m}", file=sys.stderr)
            return 1
        return 0
    # Each row is printed as its case ends (emit): a run stopped at its time budget keeps them.
    emit("| case | tokens/step | measured ms | eager ms (error) | calibrated ms (error) | fused ms (error) "
         "| peak memory GiB | predicted GiB (error) |")
    emit("|---|---:|---:|---:|---:|---:|---:|---:|")
    breakdown = ["| case | " + " | ".join(f"{name} ms (eager / torch)" for name, _, _ in PARTS) + " |",
                 "|---|" + "---:|" * len(PARTS)]
    misses = []
    try:
        for model, seq in cases:
            name = f"{model}-{seq}" if seq else model
            capture = os.path.join(work, "capture-" + name)
            fresh_folder(capture, "step_vs_torch.py")
            measured = torch_step(a, model, seq, 1, capture)
            want = "jemalloc" if a.allocator == "jemalloc" else "heap"
            if measured.get("alloc") != want:
                raise ChildFailed(f"the torch step ran on allocation mode {measured.get('alloc')}, not {want}")
            ms = measured["median_ms"]
            host = host_flags(a, measured)
            rows = bench_step(a, model, seq, os.path.join(work, name), ["--kernels", "eager,fused", *host])
            eager = next(r for r in rows if r["kernels"] == "eager")
            fused = next(r for r in rows if r["kernels"] == "fused")
            calibrated = bench_step(a, model, seq, os.path.join(work, name + "-calibrated"),
                                    ["--kernels", "eager", "--capture-path", capture,
                                     "--from-reports", os.path.join(work, name), "--measure", *host])[0]
            tokens = measured["micro_batch"] * measured["seq_len"] * measured["grad_accum"]
            errors = (error(step_ms(eager), ms), error(step_ms(calibrated), ms), error(step_ms(fused), ms))
            peak = torch_step(a, model, seq, 1, memory=True).get("peak_mem_gib")
            mem_err = error(mem_gib(eager), peak)
            emit(f"| {model}, seq {measured['seq_len']} | {tokens} | {ms:.0f} | "
                 f"{cell(step_ms(eager), errors[0])} | {cell(step_ms(calibrated), errors[1])} | "
                 f"{cell(step_ms(fused), errors[2])} | {'-' if peak is None else f'{peak:.2f}'} | "
                 f"{cell(mem_gib(eager), mem_err, 2)} |")
            breakdown.append(f"| {model}, seq {measured['seq_len']} | "
                             + " | ".join(parts(eager, measured.get("profile_pct"), ms)) + " |")
            for what, e, target in (("eager", errors[0], 0.15), ("calibrated", errors[1], 0.05),
                                    ("memory", mem_err, 0.10)):
                if e is None or abs(e) > target:
                    misses.append(f"{name}: {what} error {pct(e)} (target {100 * target:.0f}%)")
            if a.ddp:
                ccl = os.path.join(work, "ccl")
                if not os.path.exists(os.path.join(ccl, "ccl_all_reduce.csv")):
                    ccl_allreduce(a, ccl)
                measured = torch_step(a, model, seq, a.ddp)
                projected = bench_step(a, model, seq, os.path.join(work, name + "-ddp"),
                                       ["--kernels", "eager", "--dp", str(a.ddp), "--overlap", "full",
                                        "--from-reports", ccl, "--measure", *host_flags(a, measured)],
                                       ["taskset", "-c", "0"])[0]
                ms = measured["median_ms"]
                emit(f"| {model}, seq {measured['seq_len']}, DDP {a.ddp} ranks | {tokens * a.ddp} | "
                     f"{ms:.0f} | {cell(step_ms(projected), error(step_ms(projected), ms))} | - | - | - | - |")
    except ChildFailed as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if a.profile:
        print("\n" + "\n".join(breakdown))
    print(f"\n(torch: fp32, {a.threads} OpenMP thread(s) per process, timed steps on {a.allocator}"
          f"{', peak memory with --mmap-tensors' if cases else ''}; reports and captures in {work})")
    if a.check_targets and misses:
        for m in misses:
            print(f"target missed: {m}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
