#!/usr/bin/python3
"""Runs real programs under scripts/capture.sh (libopbench_capture.so) and checks the captured
tables against counts worked out by hand (tests/integration/capture.cmake runs each mode).

  check_capture.py torch   --out DIR --bench-gemm BIN [--seq-len S] [--steps N]
      bench/peers/torch_train_step.py (the tiny model, fp32, 1 thread, 2 warm-up steps, N steps) under
      capture.sh, which empties the capture after the warm-up (opbench_capture_reset). Expected
      sgemm_ calls = N x the GEMMs `bench_gemm --model tiny --dry-run`
      derives for one step (fprop, dgrad, wgrad of every linear layer, each row's `calls` times),
      with the fused layers split as torch.nn runs them (attn_qkv: q, k, v projections of
      Hq·d, Hkv·d, Hkv·d outputs; mlp_gate_up: gate and up of I each), plus the batched products
      of torch 1.13's unfused attention: per layer and per (sequence x head) one sgemm_ each for
      S·Kᵀ (S x S x d, NT) and P·V (S x d x S, NN) forward; backward dP = dO·Vᵀ (NT),
      dV = Pᵀ·dO (S x d x S, TN), dQ = dS·K (NN), dKᵀ = Qᵀ·dS... (d x S x S, TN); plus the
      script's attention-path probe after the steps (one forward at sequence 16: Hq calls each
      of 16 x 16 x d NT and 16 x d x 16 NN).
  check_capture.py numpy   --out DIR
  check_capture.py mpi     --out DIR --prog BIN --mpiexec MPIEXEC
  check_capture.py threads --out DIR --prog BIN
  check_capture.py fork    --out DIR --prog BIN
  check_capture.py killed  --out DIR --prog BIN --lib LIB
  check_capture.py pyfork  --out DIR
      a Python job (numpy) with 3 float32 products in the parent, 28 in a fork Pool's two
      workers (ended by SIGTERM when `with Pool()` closes) and 5 in each of two Process children
      (ended by os._exit): 41 calls over the processes' files, with OPBENCH_CAPTURE_INTERVAL 0
      and 1; each child names its parent, each file is a final write, each child's .prom series
      are its own.
  check_capture.py pyterm  --out DIR
      a fork child that installs its own SIGTERM handler after the fork (a worker's graceful
      shutdown), then makes its first recorded call, and a grandchild of it that keeps the
      inherited handler: SIGTERM runs each one's handler (it writes a marker file and exits 0),
      not the capture's; one numpy product in each of the three processes, each file final.
  check_capture.py nested  --out DIR --prog BIN
  check_capture.py baddir  --out DIR --prog BIN --lib LIB
  check_capture.py bench-gemm --out DIR --bench-gemm BIN --lib LIB [--backend B] [--dtype D]
      bench_gemm on one GEMM (m 256, n 128, k 64, NN) under capture.sh: the capture holds that
      shape (cublasLtMatmul on a GPU, cblas_* on the CPU) in bench_gemm's own convention, and on
      the CPU exactly as many calls as bench_gemm ran: its warm-up runs + samples x launches per
      sample (from its JSON line). On a GPU, CUDA-graph replays and autotuning change the count,
      so at least one call is required. Writes DIR/check.csv (status, note, captured_calls,
      expected_calls, in_job_us, bench_us) for scripts/gpu_selftest.sh's verdict.
  check_capture.py replay-gemm --out DIR --bench-gemm BIN
      bench_gemm --backend cpu --capture-path tests/data/capture_replay (two ranks' files,
      numbers in its README.md), merged and with --rank 1: gemm_capture.csv's rows, their
      captured_calls, in_job_us (the merged average) and in_job_ratio (in_job_us / time_us), the
      bf16 shape a skipped row with its reason, the MPI rows left out.
  check_capture.py replay-ccl --out DIR --bench-ccl BIN --mpiexec MPIEXEC
      mpirun -np 2 bench_ccl --backend mpi --capture-path tests/data/capture_replay, merged and
      --rank 1: the MPI_Allreduce fp32 4096-byte message (count 1024, comm 2) in and out of
      place (the capture predates the placement column: both are run), captured_calls 5 per rank
      (5 and 5 over 2 ranks; rank 1: 5), in_job_us (50 + 60) / 10 = 11 (rank 1: 12),
      in_job_ratio = in_job_us / time_us; the GEMM rows are not bench_ccl's. On
      tests/data/capture_placed (5 calls in place, 1 out of place) each placement runs with its
      own calls and time, and --placement naming one of them names the other in a warning.
  check_capture.py prometheus --out DIR --prog BIN --lib LIB
      the live endpoint: blas_calls loop under the capture with OPBENCH_CAPTURE_PORT; its
      /metrics passes `promtool check metrics`; a real Prometheus server (Debian's `prometheus`)
      scrapes it every second, and a query through its HTTP API
      (/api/v1/query?query=opbench_capture_calls_total) returns the cblas_sgemm 64x64x64 NN series
      with a count above 0. Exit 77 (skipped) when prometheus or promtool is not installed.
  check_capture.py gpu     --out DIR --prog BIN --lib LIB
      tests/capture/gpu_calls.cpp against the stand-in cuBLAS/NCCL/driver library and the real
      cuBLASLt's descriptors: every call's key as listed there, counted once (cublasGemmEx's
      inner cublasLtMatmul not at all), and every call timed by the stand-in's events at no
      less than the 300 µs each stand-in operation takes.
  check_capture.py gpu-async --out DIR --prog BIN --lib LIB
      the same program's other modes, where the stand-in's device runs behind the host as a
      GPU's does: 200 calls of 2 ms queued with 100 µs of host work between them leave the
      device more than half the queue behind the host with the capture as without it (a capture
      that waited for each call would leave it one call behind), each call timed at 2000 µs,
      and the poller's event queries a few per poll (one per busy stream), not one per call in
      flight; with OPBENCH_CAPTURE_SAMPLE=1 every call timed (400 events), by default the
      first 32 and one in 8 after (53 timed, 106 events, 147 counted in not_sampled_calls and
      at the timed calls' mean in the summary's 400 ms, said by the summary and the JSON lines'
      run facts); a bad sampling setting (baddir mode) turns the capture off with one line
      naming it;
      3 calls inside a global-mode graph capture counted in graph_capture_calls with the job's
      capture intact although the poller queried an event during it; a driver that refuses the
      relaxed capture mode said in one line, the calls still timed; a failing
      cuStreamIsCapturing and an NCCL nonblocking communicator's ncclInProgress (100 calls,
      past the sampling's first 32) counted untimed with their reason; an NCCL group over two
      communicators a row for each one's part, untimed; without a poller thread (pthread_create
      fails) said once, the calls timed and their events reused; a call still running when the
      program returns read before the driver shuts down at exit; after an operation that never
      ends, the next call, fork() and the exit return (the call counted as still running at
      exit), and the forked child's exit makes no driver call.

Every mode also runs the program without the capture where it can, and requires the same
results (checksums) and exit status. Exit 0 when everything holds, 1 otherwise.
"""
import argparse
import csv
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter

from torch_step_gemms import linear_gemms, math_attention, model_entry

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
CAPTURE_SH = os.path.join(ROOT, "scripts", "capture.sh")
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
SUMMARY = os.path.join(ROOT, "scripts", "capture_summary.py")
problems = []


def check(cond, message):
    if not cond:
        problems.append(message)
    return cond


def fresh(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def run(cmd, env=None, timeout=300):
    full = dict(os.environ)
    full.update(env or {})
    p = subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=timeout)
    return p


def capture(out, cmd, env=None, interval="0", timeout=300):
    p = run(["bash", CAPTURE_SH, "--out", out, "--interval", interval, "--"] + cmd, env=env,
            timeout=timeout)
    sys.stdout.write(p.stdout)
    sys.stdout.write(p.stderr)
    # The summary capture.sh prints must take what the library wrote: its rules are the replays'
    # (common/capture_rows.cpp), and a rule stricter than the library would refuse a real job.
    refused = [line for line in p.stderr.splitlines()
               if line.startswith("error: ") and ".csv" in line and "capture-" in line]
    check(not refused and "Traceback" not in p.stderr,
          f"capture_summary.py refused the capture of {cmd[0]}: {refused or p.stderr[-300:]}")
    return p


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def files(out):
    return sorted(glob.glob(os.path.join(out, "capture-*.csv")))


def gemm_counts(rows, api):
    """(m, n, k, layout) -> calls for the rows of one API."""
    c = Counter()
    for r in rows:
        if r["api"] == api:
            c[(int(r["m"]), int(r["n"]), int(r["k"]), r["layout"])] += int(r["calls"])
    return c


def compare(what, got, expected, source="captured"):
    """Calls per GEMM shape, as the capture (or a converted trace: source) counted them, against
    the expected ones, printed side by side."""
    print(f"{what}: {'shape (m n k layout)':<28}{source:>10}{'expected':>10}")
    for key in sorted(set(got) | set(expected)):
        mark = "" if got.get(key, 0) == expected.get(key, 0) else "   <-- differs"
        print(f"  {' '.join(map(str, key)):<36}{got.get(key, 0):>10}{expected.get(key, 0):>10}{mark}")
    check(got == expected, f"{what}: {source} calls differ from the expected ones (table above)")
    print(f"  total: {source} {sum(got.values())} calls, expected {sum(expected.values())}")


def checksum_lines(text):
    return sorted(line for line in text.splitlines() if "checksum" in line)


# ---------------------------------------------------------------- torch

def torch_mode(a):
    e = model_entry("tiny")
    Hq = e["num_attention_heads"]
    d = e.get("head_dim", e["hidden_size"] // Hq)
    S, steps = a.seq_len, a.steps
    out = fresh(a.out)
    p = capture(out, [PY, os.path.join(ROOT, "bench", "peers", "torch_train_step.py"), "--model",
                      "tiny", "--seq-len", str(S), "--warmup", "2", "--steps", str(steps),
                      "--threads", "1"])
    check(p.returncode == 0, f"torch_train_step.py under the capture exited {p.returncode}")
    found = files(out)
    if not check(len(found) == 1, f"expected one capture file (one process), found {found}"):
        return
    rows = read_rows(found[0])
    captured = gemm_counts(rows, "sgemm_")
    check(all(r["api"] == "sgemm_" for r in rows), "rows of another API than sgemm_: "
          + ", ".join(sorted({r["api"] for r in rows})))
    expected, derived_rows = linear_gemms(a.bench_gemm, "tiny", S, steps)
    check(derived_rows == 15, f"bench_gemm derived {derived_rows} rows for tiny, expected 15")
    linear = sum(expected.values()) // steps
    # torch 1.13's math attention runs one sgemm_ per bmm batch entry (batch 1 here: Hq each)
    attention, heads = math_attention("tiny", S, steps)
    for shape, calls in attention.items():
        expected[shape] += calls * heads
    # torch_train_step.py's attention-path probe: one forward at sequence 16, Hq heads
    expected[(16, 16, d, "NT")] += Hq
    expected[(16, d, 16, "NN")] += Hq
    # the 2 warm-up steps are not there: the script empties the capture after them
    # (opbench_capture_reset); the probe runs after the timed steps
    compare(f"torch step x {steps} after 2 warm-up steps (tiny, seq {S})", captured, expected)
    print(f"  per step: {linear} linear-layer sgemm_ calls (q/k/v and gate/up apart) + "
          f"{sum(attention.values()) * heads // steps} attention products")


# ---------------------------------------------------------------- numpy

NUMPY = """
import numpy as np
a = np.arange(64 * 32, dtype=np.float32).reshape(64, 32) % 7
b = np.arange(32 * 48, dtype=np.float32).reshape(32, 48) % 5
x = np.arange(32 * 64, dtype=np.float32).reshape(32, 64) % 3
d = np.arange(200, dtype=np.float64).reshape(10, 20) % 11
e = np.arange(600, dtype=np.float64).reshape(20, 30) % 13
s = 0.0
for _ in range(5): s += float((a @ b).sum())
for _ in range(2): s += float((x.T @ b).sum())
for _ in range(3): s += float((d @ e).sum())
print("checksum", s)
"""


def numpy_mode(a):
    out = fresh(a.out)
    p = capture(out, [PY, "-c", NUMPY])
    plain = run([PY, "-c", NUMPY])
    check(p.returncode == 0, f"numpy under the capture exited {p.returncode}")
    check(checksum_lines(p.stdout) == checksum_lines(plain.stdout),
          f"results differ: {checksum_lines(p.stdout)} vs {checksum_lines(plain.stdout)}")
    found = files(out)
    if not check(len(found) == 1, f"expected one capture file, found {found}"):
        return
    rows = read_rows(found[0])
    compare("numpy cblas_sgemm", gemm_counts(rows, "cblas_sgemm"),
            {(64, 48, 32, "NN"): 5, (64, 48, 32, "TN"): 2})
    compare("numpy cblas_dgemm", gemm_counts(rows, "cblas_dgemm"), {(10, 30, 20, "NN"): 3})
    # every column of the capture's CSV is documented (docs/outputs.md)
    docs = run([PY, os.path.join(HERE, "check_docs.py"), "columns", "--root", ROOT, "--csv",
                found[0]])
    check(docs.returncode == 0, f"check_docs.py columns on the capture CSV: {docs.stdout.strip()}")
    for r in rows:
        check(r["dtype"] == ("fp32" if r["api"] == "cblas_sgemm" else "fp64"), f"dtype of {r}")
        check(int(r["flops"]) == 2 * int(r["m"]) * int(r["n"]) * int(r["k"]), f"flops of {r}")
        check(float(r["min_us"]) <= float(r["p50_us"]) <= float(r["p99_us"]) <= float(r["max_us"]),
              f"min <= p50 <= p99 <= max fails for {r}")
        check(abs(float(r["avg_us"]) * int(r["timed_calls"]) - float(r["total_us"])) < 0.01
              + 1e-3 * float(r["total_us"]), f"avg x calls != total for {r}")


# ---------------------------------------------------------------- MPI

# (api, op, dtype, count, bytes, redop) -> calls on every rank of 2 (tests/capture/mpi_calls.c)
# (and placement: MPI_IN_PLACE or not, "" where a call has no such choice)
MPI_EXPECTED = {
    ("MPI_Allreduce", "all_reduce", "fp32", 1024, 4096, "sum", "in_place"): 5,
    ("MPI_Allreduce", "all_reduce", "fp32", 1024, 4096, "sum", "out_of_place"): 1,
    ("MPI_Allreduce", "all_reduce", "fp32", 16, 64, "sum", "in_place"): 3,
    ("MPI_Allreduce", "all_reduce", "fp64", 8, 64, "max", "in_place"): 2,
    ("MPI_Allgather", "all_gather", "int32", 256, 2 * 256 * 4, "", "out_of_place"): 2,
    ("MPI_Reduce_scatter_block", "reduce_scatter", "fp32", 512, 2 * 512 * 4, "sum", "out_of_place"): 4,
    ("MPI_Bcast", "broadcast", "fp64", 100, 800, "", ""): 4,
    ("MPI_Reduce", "reduce", "fp32", 64, 256, "sum", "out_of_place"): 1,
    ("MPI_Alltoall", "all_to_all", "fp32", 128, 2 * 128 * 4, "", "out_of_place"): 3,
    ("MPI_Irecv", "recv", "fp32", 200, 800, "", ""): 6,
    ("MPI_Isend", "send", "fp32", 200, 800, "", ""): 6,
    ("MPI_Sendrecv", "send_recv", "fp64", 50, 400, "", ""): 2,
    ("MPI_Iallreduce", "all_reduce", "fp32", 2048, 8192, "sum", "in_place"): 3,
    ("MPI_Allreduce", "all_reduce", "fp32", 32, 128, "sum", "in_place"): 1,
    ("MPI_Barrier", "barrier", "none", 0, 0, "", ""): 2,
}


def mpi_mode(a):
    out = fresh(a.out)
    mpirun = [a.mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", "2", a.prog]
    p = capture(out, mpirun)
    plain = run(mpirun)
    check(p.returncode == 0, f"mpirun under the capture exited {p.returncode}")
    check(checksum_lines(p.stdout) == checksum_lines(plain.stdout),
          f"results differ: {checksum_lines(p.stdout)} vs {checksum_lines(plain.stdout)}")
    found = files(out)
    names = sorted(os.path.basename(f).rsplit("-", 1)[1] for f in found)
    check(names == ["rank0.csv", "rank1.csv"], f"expected the files of rank 0 and 1, found {found}")
    for path in found:
        rows = read_rows(path)
        got = {}
        for r in rows:
            key = (r["api"], r["op"], r["dtype"], int(r["count"] or 0), int(r["bytes"] or 0),
                   r["redop"], r["placement"])
            got[key] = got.get(key, 0) + int(r["calls"])
            check(r["comm_size"] == "2", f"{os.path.basename(path)}: comm_size of {key}")
            # MPI_COMM_WORLD's ranks are consecutive, and so are those of a split that reverses
            # their order
            check(r["comm_stride"] == "1", f"{os.path.basename(path)}: comm_stride of {key}: "
                  f"'{r['comm_stride']}'")
            check(r["timed_calls"] == r["calls"], f"{os.path.basename(path)}: {key} has "
                  f"{r['calls']} calls but {r['timed_calls']} timed")
        print(f"{os.path.basename(path)}:")
        for key in sorted(set(got) | set(MPI_EXPECTED)):
            mark = "" if got.get(key) == MPI_EXPECTED.get(key) else "   <-- differs"
            print(f"  {' '.join(map(str, key)):<60}{got.get(key, 0):>5}{MPI_EXPECTED.get(key, 0):>5}{mark}")
        check(got == MPI_EXPECTED, f"{os.path.basename(path)}: counts differ (table above)")


# ---------------------------------------------------------------- threads, fork, nested

def threads_mode(a):
    out = fresh(a.out)
    T, N = 4, 50
    p = capture(out, [a.prog, "threads", str(T), str(N)])
    plain = run([a.prog, "threads", str(T), str(N)])
    check(p.returncode == 3 and plain.returncode == 3,
          f"exit status {p.returncode} with the capture, {plain.returncode} without (expected 3)")
    check(checksum_lines(p.stdout) == checksum_lines(plain.stdout), "results differ")
    found = files(out)
    if not check(len(found) == 1, f"expected one capture file, found {found}"):
        return
    rows = read_rows(found[0])
    compare(f"{T} threads x {N} cblas_sgemm", gemm_counts(rows, "cblas_sgemm"),
            {(8 * (t + 1), 24, 16, "NN"): N for t in range(T)})
    # sgemm_("T", "N", 40, 8(t+1), 12): row-major m = 8(t+1), n = 40, layout NT
    compare(f"{T} threads x {N} sgemm_", gemm_counts(rows, "sgemm_"),
            {(8 * (t + 1), 40, 12, "NT"): N for t in range(T)})


def fork_mode(a):
    out = fresh(a.out)
    p = capture(out, [a.prog, "fork"])
    check(p.returncode == 3, f"exit status {p.returncode}, expected 3")
    child = next((line.split()[-1] for line in p.stdout.splitlines() if "child pid" in line), None)
    found = files(out)
    check(len(found) == 2, f"expected the parent's and the child's files, found {found}")
    child_file = [f for f in found if child and f.endswith(f"-pid{child}.csv")]
    if not check(len(child_file) == 1, f"no file for the child (pid {child}) in {found}"):
        return
    parent_file = [f for f in found if f != child_file[0]]
    compare("forked child", gemm_counts(read_rows(child_file[0]), "cblas_dgemm"),
            {(16, 16, 16, "NN"): 2})
    compare("parent", gemm_counts(read_rows(parent_file[0]), "cblas_dgemm"),
            {(32, 32, 32, "NN"): 4})


PYFORK = """
import multiprocessing as mp, os, sys
import numpy as np
a = np.ones((24, 16), dtype=np.float32)
b = np.ones((16, 8), dtype=np.float32)
def product(i):
    return float((a @ b).sum())
def child(n):
    for i in range(n):
        product(i)
s = sum(product(i) for i in range(3))
ctx = mp.get_context("fork")
with ctx.Pool(2) as pool:  # __exit__ is terminate(): the workers end by SIGTERM
    s += sum(pool.map(product, range(28), chunksize=1))
kids = [ctx.Process(target=child, args=(5,)) for _ in range(2)]  # they end by os._exit
for k in kids: k.start()
for k in kids: k.join()
print("checksum", s, "children exit", [k.exitcode for k in kids])
"""


def pyfork_mode(a):
    """3 products in the parent, 28 in a fork pool's workers, 5 in each of two Process
    children: 41 cblas_sgemm calls of 24x8x16, whatever the interval."""
    for interval in ("0", "1"):
        out = fresh(os.path.join(a.out, f"interval{interval}"))
        p = capture(out, [PY, "-c", PYFORK], interval=interval)
        check(p.returncode == 0 and "children exit [0, 0]" in p.stdout,
              f"interval {interval}: exit {p.returncode}: {p.stdout.strip()} {p.stderr.strip()}")
        runs, calls = {}, {}
        for path in files(out):
            with open(path[:-3] + "jsonl") as f:
                first = json.loads(f.readline())
            pid = first["run"]["pid"]
            runs[pid] = first["run"]
            calls[pid] = sum(c for c in gemm_counts(read_rows(path), "cblas_sgemm").values())
        parents = [pid for pid, r in runs.items() if "parent_pid" not in r]
        print(f"interval {interval}: {len(runs)} processes, calls per process "
              f"{sorted(calls.values(), reverse=True)}, {sum(calls.values())} in all")
        if not check(len(parents) == 1, f"interval {interval}: {len(parents)} processes without a "
                                        f"parent: {parents}"):
            continue
        parent = parents[0]
        check(calls[parent] == 3, f"interval {interval}: the parent holds {calls[parent]} calls, not 3")
        check(sum(calls.values()) == 41, f"interval {interval}: {sum(calls.values())} calls in all, "
                                         "not 41 (3 + 28 + 2 x 5)")
        check(all(r.get("parent_pid", parent) == parent for r in runs.values()),
              f"interval {interval}: a child names another parent: {runs}")
        check(runs[parent]["forked_children"] >= 4 and all(r["final"] for r in runs.values()),
              f"interval {interval}: forked_children {runs[parent]['forked_children']}, final "
              f"{[r['final'] for r in runs.values()]}")
        # each child is its own Prometheus series: the pid label tells them apart
        series = set()
        for path in files(out):
            with open(path[:-3] + "prom") as f:
                series |= {line.split(" ")[0] for line in f
                           if line.startswith("opbench_capture_calls_total{")}
        check(len(series) == len(runs), f"interval {interval}: {len(series)} distinct series for "
                                        f"{len(runs)} processes")
        # the summary counts the parent's forks against the children's files
        forked = runs[parent]["forked_children"]
        said = f"forked {forked} children; {len(runs) - 1} left a file"
        check(said in p.stdout + p.stderr or forked == len(runs) - 1,
              f"interval {interval}: the summary does not say '{said}'")


PYTERM = """
import multiprocessing as mp, os, sys, time
import signal
import numpy as np
out = sys.argv[1]
role, kid = "parent", None
def product():
    return float((np.ones((24, 16), dtype=np.float32) @ np.ones((16, 8), dtype=np.float32)).sum())
def on_term(signum, frame):
    code = None
    if kid is not None:
        kid.terminate()
        kid.join(30)
        code = kid.exitcode
    with open(os.path.join(out, role + ".term"), "w") as f:
        f.write(f"handled, grandchild exit {code}\\n")
    sys.exit(0)
def idle():  # until SIGTERM; or, should the parent be gone without passing it on, 20 s at most
    parent, end = os.getppid(), time.time() + 20
    while os.getppid() == parent and time.time() < end:
        time.sleep(0.05)
def grandchild(ready):
    global role
    role = "grandchild"  # keeps the handler inherited from its parent
    product()
    ready.set()
    idle()
def child(ready):
    global role, kid
    role = "child"
    signal.signal(signal.SIGTERM, on_term)  # after the fork, before the first recorded call
    product()
    ctx = mp.get_context("fork")
    got = ctx.Event()
    p = ctx.Process(target=grandchild, args=(got,))
    p.start()
    kid = p
    got.wait(20)
    ready.set()
    idle()
s = product()
ctx = mp.get_context("fork")
ready = ctx.Event()
k = ctx.Process(target=child, args=(ready,))
k.start()
ready.wait(20)
k.terminate()
k.join(30)
print("checksum", s, "child exit", k.exitcode)
"""


def pyterm_mode(a):
    """The program's own SIGTERM handlers run; each of the 3 processes keeps its one call."""
    out = fresh(a.out)
    plain_dir = fresh(os.path.join(out, "plain"))
    plain = run([PY, "-c", PYTERM, plain_dir], timeout=120)
    cap_dir = fresh(os.path.join(out, "capture"))
    p = capture(cap_dir, [PY, "-c", PYTERM, cap_dir], timeout=120)
    for what, proc, where in (("without the capture", plain, plain_dir),
                              ("with the capture", p, cap_dir)):
        check(proc.returncode == 0 and "child exit 0" in proc.stdout,
              f"{what}: exit {proc.returncode}: {proc.stdout.strip()} {proc.stderr.strip()[-300:]}")
        for role in ("child", "grandchild"):
            marker = os.path.join(where, role + ".term")
            text = open(marker).read().strip() if os.path.exists(marker) else "(no marker)"
            print(f"{what}: {role}: {text}")
            expected = "handled, grandchild exit 0" if role == "child" else "handled, grandchild exit None"
            check(text == expected, f"{what}: the {role}'s own SIGTERM handler did not run: {text}")
    calls, final = [], []
    for path in files(cap_dir):
        with open(path[:-3] + "jsonl") as f:
            final.append(json.loads(f.readline())["run"]["final"])
        calls.append(sum(gemm_counts(read_rows(path), "cblas_sgemm").values()))
    print(f"capture: calls per process {calls}, final {final}")
    check(calls == [1, 1, 1] and all(final), f"expected three final files of one call each: "
                                             f"calls {calls}, final {final}")


def nested_mode(a):
    out = fresh(a.out)
    p = capture(out, [a.prog])
    check(p.returncode == 0, f"exit status {p.returncode}")
    found = files(out)
    if not check(len(found) == 1, f"expected one capture file, found {found}"):
        return
    rows = read_rows(found[0])
    compare("cblas_sgemm calling sgemm_ inside", Counter(
        {(r["api"], int(r["m"]), int(r["n"]), int(r["k"]), r["layout"]): int(r["calls"])
         for r in rows}), {("cblas_sgemm", 20, 30, 10, "NN"): 4})


# ---------------------------------------------------------------- killed, bad folder

def killed_mode(a):
    out = fresh(a.out)
    env = dict(os.environ, OPBENCH_CAPTURE_DIR=out, OPBENCH_CAPTURE_INTERVAL="0.2",
               LD_PRELOAD=a.lib)
    proc = subprocess.Popen([a.prog, "loop", "60"], env=env, stdout=subprocess.DEVNULL)
    deadline = time.time() + 30
    path, calls = None, 0
    while time.time() < deadline and calls == 0:
        time.sleep(0.1)
        found = files(out)
        if found:
            path = found[0]
            rows = read_rows(path)
            calls = sum(int(r["calls"]) for r in rows)
    time.sleep(0.5)  # more periodic writes while it runs
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    check(proc.returncode == -signal.SIGKILL, f"the program ended with {proc.returncode}")
    if not check(path is not None, "no periodic tables were written before the kill"):
        return
    rows = read_rows(path)
    after = sum(int(r["calls"]) for r in rows)
    print(f"killed after periodic writes: {os.path.basename(path)} holds {after} calls "
          f"(first periodic table seen: {calls})")
    check(len(rows) == 1 and rows[0]["api"] == "cblas_sgemm" and rows[0]["m"] == "64",
          f"the table after the kill: {rows}")
    check(after >= calls > 0, f"calls {after} after the kill, {calls} before")
    for ext in ("jsonl", "prom"):
        check(os.path.exists(path[:-3] + ext), f"no .{ext} beside {path}")


def stuckexit_mode(a):
    """A tables folder that stops answering: the exit write blocks (a FIFO without a reader where
    the write's temporary file goes, as a hung network filesystem would block it), and the job
    still ends with its own status within the exit write's bound (5 s), saying so. It used to
    wait for ever; a forked child leaving by _exit was ended by SIGALRM. A forked child's SIGTERM
    ends it by SIGTERM within the same bound."""
    out = fresh(a.out)
    # no periodic writes (interval 0) and no launcher rank: the exit write alone, to
    # capture-<host>-pid<pid>.*, through write_atomically's DIR/.<name>.tmp<pid>
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "RANK")}
    env.update(OPBENCH_CAPTURE_DIR=out, OPBENCH_CAPTURE_INTERVAL="0", LD_PRELOAD=a.lib)
    proc = subprocess.Popen([a.prog, "loop", "2"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    base = f"capture-{socket.gethostname().split('.')[0]}-pid{proc.pid}"
    started = time.time()
    try:
        for ext in ("csv", "jsonl", "prom"):
            os.mkfifo(os.path.join(out, f".{base}.{ext}.tmp{proc.pid}"))
        _, err = proc.communicate(timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        proc.kill()  # never left behind, stuck on a FIFO
        _, err = proc.communicate()
        check(False, f"the job did not end within 30 s of a blocked exit write ({e})")
        return
    took = time.time() - started
    print(f"ended {took:.1f} s after its start (2 s of calls, then the blocked exit write), "
          f"status {proc.returncode}; stderr: {err.strip()}")
    check(proc.returncode == 3, f"the program's own status 3 is kept: {proc.returncode}")
    check(took < 2 + 5 + 3, f"{took:.1f} s: 2 s of calls, and the exit write's bound is 5 s")
    check("did not end within 5 s" in err and out in err, f"no line says the write was cut: {err}")
    for fifo in glob.glob(os.path.join(out, ".*.tmp*")):
        os.unlink(fifo)
    # A forked child leaving by _exit(7), whose write is bounded by an alarm (no thread can be
    # started where _exit may be called, a signal handler): it ends with status 7 within 5 s. The
    # alarm used to end it by SIGALRM (signal 14).
    hung_child(a, env, "child", [], ["child", "status", "7"], "the child's _exit(7) is kept")
    # A forked child ended by SIGTERM (Pool.terminate()): the capture's watcher writes, and its
    # alarm ends the child by SIGTERM 5 s later, as the signal would have, whatever the write does
    hung_child(a, env, "term", ["term"], ["child", "signal", str(int(signal.SIGTERM))],
               "the child ends by SIGTERM")


def hung_child(a, env, name, extra, expected, what):
    """blas_calls hungexit: a forked child whose exit write blocks ends as `expected` says (its
    first three words: how it ended) within the 5 s bound, and a line says the write was cut."""
    out = fresh(os.path.join(a.out, name))
    p = subprocess.run([a.prog, "hungexit", out] + extra, env=dict(env, OPBENCH_CAPTURE_DIR=out),
                       capture_output=True, text=True, timeout=60)
    print(f"{name}: {p.stdout.strip()}; stderr: {p.stderr.strip()}")
    ended = p.stdout.split()
    check(p.returncode == 3 and ended[:3] == expected and float(ended[4]) < 5 + 3,
          f"{what} within the 5 s bound: {p.stdout.strip()!r}, exit {p.returncode}")
    check("did not end within 5 s" in p.stderr, f"no line says the child's write was cut: {p.stderr}")
    for fifo in glob.glob(os.path.join(out, ".*.tmp*")):
        os.unlink(fifo)


def baddir_mode(a):
    env = dict(os.environ, OPBENCH_CAPTURE_DIR="/proc/no-such-folder", LD_PRELOAD=a.lib)
    p = subprocess.run([a.prog, "threads", "2", "3"], env=env, capture_output=True, text=True)
    plain = run([a.prog, "threads", "2", "3"])
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    print("stderr:", lines)
    check(len(lines) == 1 and lines[0].startswith("opbench-capture: OPBENCH_CAPTURE_DIR "
                                                  "'/proc/no-such-folder'"),
          f"expected one opbench-capture: line naming the folder, got {lines}")
    check(p.returncode == plain.returncode == 3, f"exit status {p.returncode}, expected 3")
    check(p.stdout == plain.stdout, "the program's output changed")
    # a sampling setting that is not a whole number in range: the same one line, naming it
    fresh(a.out)
    for name, value in (("OPBENCH_CAPTURE_SAMPLE", "0"), ("OPBENCH_CAPTURE_TIME_FIRST", "-3"),
                        ("OPBENCH_CAPTURE_SAMPLE", "8x")):
        env = dict(os.environ, OPBENCH_CAPTURE_DIR=a.out, LD_PRELOAD=a.lib, **{name: value})
        p = subprocess.run([a.prog, "threads", "2", "3"], env=env, capture_output=True, text=True)
        lines = [line for line in p.stderr.splitlines() if line.strip()]
        print(f"{name}={value}:", lines)
        check(len(lines) == 1 and lines[0].startswith(f"opbench-capture: {name} '{value}': "
                                                      "expected a whole number"),
              f"{name}={value}: expected one opbench-capture: line naming it, got {lines}")
        check(p.returncode == 3 and p.stdout == plain.stdout,
              f"{name}={value}: exit {p.returncode}, the program's output changed")
    q = run(["bash", CAPTURE_SH, "--out", "/proc/no-such-folder", "--", a.prog, "threads", "1", "1"])
    print("capture.sh:", q.stderr.strip())
    check(q.returncode == 2 and q.stderr.startswith("error: capture.sh: --out"),
          f"capture.sh --out on an unusable folder: exit {q.returncode}, {q.stderr.strip()}")


# (api, op, dtype, m, n, k, batch, layout) -> calls; (api, op, dtype, count, bytes, redop) -> calls
GPU_GEMMS = {
    ("cublasSgemm_v2", "gemm", "fp32", 32, 64, 16, 1, "TN"): 3,
    ("cublasHgemm", "gemm", "fp16", 8, 128, 64, 1, "NT"): 2,
    ("cublasGemmEx", "gemm", "bf16", 128, 256, 64, 1, "NN"): 4,
    ("cublasGemmEx", "gemm", "tf32", 16, 32, 8, 1, "NN"): 1,
    ("cublasGemmEx", "gemm", "bf16", 32, 64, 16, 1, "NN"): 2,  # through opbench's loader
    ("cublasGemmStridedBatchedEx", "gemm_batched", "fp16", 64, 64, 32, 8, "NT"): 2,
    ("cublasGemmBatchedEx", "gemm_batched", "fp32", 48, 16, 24, 3, "TN"): 1,
    ("cublasGemmGroupedBatchedEx", "gemm_grouped", "bf16", 260, 512, 256, 1, "NT"): 1,
    ("cublasLtMatmul", "gemm_batched", "bf16", 40, 96, 64, 2, "NT"): 8,  # 3 through opbench's loader
}
GPU_COLLS = {
    ("ncclAllReduce", "all_reduce", "fp32", 1024, 4096, "sum", "in_place"): 2,
    ("ncclAllReduce", "all_reduce", "fp32", 1024, 4096, "sum", "out_of_place"): 1,
    ("ncclAllGather", "all_gather", "bf16", 256, 2048, "", "in_place"): 2,
    ("ncclReduceScatter", "reduce_scatter", "fp16", 128, 1024, "max", "out_of_place"): 1,
    ("ncclBroadcast", "broadcast", "fp64", 100, 800, "", "in_place"): 1,
    ("ncclGroupEnd", "send_recv", "fp32", 128, 512, "", ""): 2,
}


def gpu_mode(a):
    out = fresh(a.out)
    p = capture(out, [a.prog])
    check(p.returncode == 0, f"exit status {p.returncode}")
    check("descriptors ok" in p.stdout, "the real cuBLASLt did not build its descriptors")
    found = files(out)
    if not check(len(found) == 1, f"expected one capture file, found {found}"):
        return
    rows = read_rows(found[0])
    gemms, colls = Counter(), Counter()
    for r in rows:
        if r["kind"] == "gemm":
            gemms[(r["api"], r["op"], r["dtype"], int(r["m"]), int(r["n"]), int(r["k"]),
                   int(r["batch"]), r["layout"])] += int(r["calls"])
            check(int(r["flops"]) == 2 * int(r["batch"]) * int(r["m"]) * int(r["n"]) * int(r["k"]),
                  f"flops of {r['api']}")
        else:
            colls[(r["api"], r["op"], r["dtype"], int(r["count"]), int(r["bytes"]),
                   r["redop"], r["placement"])] += int(r["calls"])
            check(r["comm_size"] == "4", f"comm_size of {r['api']}: {r['comm_size']}")
        check(r["timed_calls"] == r["calls"], f"{r['api']}: {r['timed_calls']} of {r['calls']} timed")
        check(r["min_us"] != "" and float(r["min_us"]) >= 300.0,
              f"{r['api']}: min_us {r['min_us']} below the stand-in's 300 us")
    compare("GPU GEMMs", gemms, GPU_GEMMS)
    compare("NCCL", colls, GPU_COLLS)


def gpu_comms_mode(a):
    """NCCL tells a process only its own rank in a communicator: the capture writes a comm_id
    that every member computes alike, and the files read together give the members. Four ranks
    (RANK 0-3, each its own process on the stand-in NCCL) make a world communicator and split it
    into the pairs 0 and 2, 1 and 3, twice (blocking, then nonblocking); make two more worlds
    (ncclCommInitRankConfig, ncclCommInitRankScalable); and ranks 0 and 2 shrink the first world
    to themselves; then all split the world into halves, 0 and 1, 2 and 3 (after a shrink that
    0 made and 1 did not). bench_ccl --capture-path must replay the pairs 2 ranks apart, where it
    ran every NCCL group on consecutive ranks."""
    out = fresh(a.out)
    job = os.path.join(out, "job")
    ranks = " ".join(f"RANK={r} '{a.prog}' comms {r} &" for r in range(4))
    p = capture(job, ["bash", "-c", f"{ranks} wait"])
    check(p.returncode == 0, f"exit status {p.returncode}")
    # capture.sh's summary reads the members as bench_ccl does: the pairs 2 apart, the worlds 1
    said = [line.split() for line in p.stderr.splitlines() if line.strip().startswith("nccl")]
    pairs = [l for l in said if l[0] == "ncclAllReduce" and "comm 2, ranks 2 apart" in " ".join(l)]
    check(len(pairs) == 1,
          f"the summary's ncclAllReduce pairs: {said}, expected 'comm 2, ranks 2 apart'")
    ids = {}  # rank -> {(api, comm_size): comm_id}
    for path in files(job):
        for r in read_rows(path):
            if r["api"].startswith("nccl"):
                ids.setdefault(r["rank"], {})[(r["api"], r["comm_size"])] = r["comm_id"]
                check(r["comm_stride"] == "", f"{path}: comm_stride '{r['comm_stride']}': an NCCL "
                      "process cannot know it")
    print("  comm_id by rank and size:", ids)
    if not check(sorted(ids) == ["0", "1", "2", "3"], f"ranks with files: {sorted(ids)}"):
        return
    world = {ids[r].get(("ncclAllReduce", "4")) for r in ids}
    check(len(world) == 1 and "" not in world and None not in world,
          f"the world communicator's comm_id differs between ranks: {world}")
    # the blocking split's pairs, then the nonblocking one's (whose handle NCCL writes later:
    # a capture that read it at the split's return had none)
    for api in ("ncclAllReduce", "ncclBroadcast"):
        pairs = [ids[r].get((api, "2")) for r in "0123"]
        check(pairs[0] == pairs[2] and pairs[1] == pairs[3] and pairs[0] != pairs[1]
              and len(pairs[0] or "") == 16 and pairs[0] not in world,
              f"{api}: the pairs' comm_ids: {pairs}, expected ranks 0 and 2 alike, 1 and 3 alike")
    check(ids["0"].get(("ncclAllReduce", "2")) != ids["0"].get(("ncclBroadcast", "2")),
          "the second split's pairs have the first's comm_id")
    # the worlds made with a config and from two ids: one number each, in every rank
    for api in ("ncclAllGather", "ncclReduceScatter"):
        made = {ids[r].get((api, "4")) for r in ids}
        check(len(made) == 1 and len(next(iter(made)) or "") == 16 and not made & world,
              f"{api}: comm_ids {made}, expected one, not the first world's")
    # the shrink of ranks 0 and 2, which named the ranks left out in different orders
    kept = [ids[r].get(("ncclAlltoAll", "2")) for r in "0123"]
    check(kept[0] == kept[2] and len(kept[0] or "") == 16 and kept[1] is None and kept[3] is None,
          f"the shrunk communicator's comm_ids by rank: {kept}")
    # the halves split after the shrink: one number per half in both its members
    halves = [ids[r].get(("ncclSend", "2")) for r in "0123"]
    check(halves[0] == halves[1] and halves[2] == halves[3] and halves[0] != halves[2]
          and len(halves[0] or "") == 16 and len(halves[2] or "") == 16,
          f"the halves' comm_ids by rank: {halves}, expected ranks 0 and 1 alike, 2 and 3 alike")

    def dry_run(folder):
        q = run([a.bench_ccl, "--backend", "mpi", "--capture-path", folder, "--dry-run",
                 "--world-size", "4", "--placement", "in_place"])
        check(q.returncode == 0, f"bench_ccl --dry-run on {folder}: exit {q.returncode} {q.stderr}")
        # each all_reduce line's group column and rank 0's group ("2 0 2"): the cells between
        # the label and the dtype, placement and sizes (calls/step is empty)
        groups = sorted(line.split()[0] + " " + " ".join(line.split()[2:-4])
                        for line in q.stdout.splitlines()
                        if line.split() and line.split()[0] in ("all_reduce", "broadcast",
                                                                 "all_gather", "reduce_scatter",
                                                                 "all_to_all"))
        print(f"  bench_ccl --dry-run: (group, rank 0's group) {groups}")
        return groups
    got = dry_run(job)
    expected = ["all_gather 4 0 1 2 3", "all_reduce 2 0 2", "all_reduce 4 0 1 2 3",
                "all_to_all 2 0 2", "broadcast 2 0 2", "reduce_scatter 4 0 1 2 3"]
    check(got == expected, f"replayed groups {got}, expected {expected}")
    # without rank 3's file, the pair 1-3 and the world lack a member: their stride is not known
    # (consecutive), the pair 0-2's still is
    some = fresh(os.path.join(out, "some"))
    for path in files(job):
        if not path.endswith("rank3.csv"):
            shutil.copy(path, some)
    got = dry_run(some)
    expected = ["all_gather 4 0 1 2 3", "all_reduce 2 0 1", "all_reduce 2 0 2",
                "all_reduce 4 0 1 2 3", "all_to_all 2 0 2", "broadcast 2 0 1", "broadcast 2 0 2",
                "reduce_scatter 4 0 1 2 3"]
    check(got == expected, f"replayed groups without rank 3's file {got}, expected {expected}")


def figures(text, *names):
    """The numbers after `name` in a program's output line ("loop_ms 20.1 lag_ms 380.2")."""
    words = text.split()
    return [float(words[words.index(n) + 1]) if n in words else None for n in names]


def one_table(out):
    found = files(out)
    if not check(len(found) == 1, f"{out}: expected one capture file, found {found}"):
        return []
    return read_rows(found[0])


def square_row(rows, size):
    return next((r for r in rows if r["kind"] == "gemm" and r["m"] == str(size)
                 and r["n"] == str(size) and r["k"] == str(size)), None)


def expect_untimed(rows, size, calls, timed, graph, why):
    r = square_row(rows, size)
    if not check(r is not None, f"no {size}x{size}x{size} row in {rows}"):
        return
    print(f"  {size}x{size}x{size}: calls {r['calls']}, timed {r['timed_calls']}, in a graph "
          f"capture {r['graph_capture_calls']}; note: {r['note']}")
    check((int(r["calls"]), int(r["timed_calls"]), int(r["graph_capture_calls"])) == (calls, timed, graph),
          f"{size}x{size}x{size}: expected calls {calls}, timed {timed}, graph {graph}")
    check(why in r["note"], f"{size}x{size}x{size}: the note does not say '{why}': {r['note']}")


def gpu_async_mode(a):
    """The stand-in's device runs behind the host, as a GPU does."""
    # 1. the capture never makes the host wait: 200 calls of 2 ms queued with 100 us of host work
    # between them; the device must still be far behind the host when the loop ends
    calls = 200
    plain = run([a.prog, "async", str(calls)])
    out = fresh(os.path.join(a.out, "async"))
    every = {"OPBENCH_CAPTURE_SAMPLE": "1"}  # every call timed, as before the sampling
    p = capture(out, [a.prog, "async", str(calls)], env=every)
    loop0, lag0, queued = figures(plain.stdout, "loop_ms", "lag_ms", "queued_ms")
    loop1, lag1, queries = figures(p.stdout, "loop_ms", "lag_ms", "queries")
    print(f"{'':<18}{'loop_ms':>10}{'device behind host at the end (ms)':>38}")
    print(f"{'without capture':<18}{loop0:>10.1f}{lag0:>38.1f}")
    print(f"{'with capture':<18}{loop1:>10.1f}{lag1:>38.1f}   ({queued:.0f} ms queued)")
    check(p.returncode == 0 and plain.returncode == 0, f"exit {p.returncode} / {plain.returncode}")
    check(lag1 is not None and lag1 > queued / 2,
          f"with the capture the device is {lag1} ms behind the host after {queued:.0f} ms were "
          "queued: the hooked calls waited for the device")
    # a stream completes in order: a poll queries the oldest running call per stream, not
    # every call in flight (about 2,000 polls of 200 us here; querying all ~100 in flight at
    # each would be some 200,000 queries)
    print(f"event queries while {calls} calls ran: {queries:.0f}")
    check(queries is not None and queries < 20 * calls + 5000,
          f"{queries} event queries for {calls} calls: the poller queries every call in flight")
    rows = one_table(out)
    r = square_row(rows, 32)
    if check(r is not None, "no 32x32x32 row"):
        check(int(r["calls"]) == calls and int(r["timed_calls"]) == calls,
              f"32x32x32: {r['calls']} calls, {r['timed_calls']} timed, expected {calls}")
        check(abs(float(r["min_us"]) - 2000) < 1 and abs(float(r["max_us"]) - 2000) < 1,
              f"each call is 2000 us of device time: min {r['min_us']}, max {r['max_us']}")
    records, = figures(p.stdout, "event_records")
    check(records == 2 * calls, f"every call timed: {records} events recorded, expected {2 * calls}")

    # 1b. the default sampling: the shape's first 32 calls timed, then one in each 8 of the other
    # 168 (21): 53 timed, 106 events on the device's timeline instead of 400; every call counted
    out = fresh(os.path.join(a.out, "sampled"))
    p = capture(out, [a.prog, "async", str(calls)])
    records, = figures(p.stdout, "event_records")
    r = square_row(one_table(out), 32)
    print(f"sampled: {records:.0f} events recorded; 32x32x32: calls {r and r['calls']}, timed "
          f"{r and r['timed_calls']}; note: {r and r['note']}")
    check(p.returncode == 0, f"sampled: exit {p.returncode}")
    check(records == 2 * 53, f"sampled: {records} events recorded, expected {2 * 53}")
    if check(r is not None, "sampled: no 32x32x32 row"):
        check((r["calls"], r["timed_calls"]) == (str(calls), "53"),
              f"sampled: {r['calls']} calls, {r['timed_calls']} timed, expected {calls} and 53")
        check("147 left untimed by the sampling" in r["note"], f"sampled: the note says {r['note']}")
        check(r["not_sampled_calls"] == "147",
              f"sampled: not_sampled_calls {r['not_sampled_calls']}, expected 147")
        check(abs(float(r["avg_us"]) - 2000) < 1, f"sampled: the timed calls' mean {r['avg_us']}")
    # the summary's time in the job counts the 147 calls sampled out at the timed ones' 2000 us:
    # 400 ms, as every call timed gave above (the 53 timed calls alone are 106 ms)
    check("200 calls, 400.0 ms captured" in p.stdout + p.stderr,
          "sampled: the summary's total is not the job's 200 x 2 ms")
    check("147 GPU calls were left untimed by the sampling (each shape's first 32 calls timed, "
          "then one in 8;" in p.stdout + p.stderr, "sampled: the summary does not say so")
    sampling = json.loads(open(files(out)[0][:-len(".csv")] + ".jsonl").readline())["run"]
    check(sampling.get("gpu_sampling") == {"time_first": 32, "one_in": 8},
          f"sampled: the JSON lines' run facts say {sampling.get('gpu_sampling')}")

    # 2. calls inside a global-mode graph capture: counted apart, and the poller's queries
    # (of a 20 ms operation from before the capture) do not invalidate the job's capture
    out = fresh(os.path.join(a.out, "graph"))
    p = capture(out, [a.prog, "graph"])
    print("graph:", p.stdout.strip().splitlines()[-1:] if p.stdout.strip() else p.stderr.strip())
    check(p.returncode == 0 and "capture ok" in p.stdout,
          f"the job's graph capture was invalidated (exit {p.returncode}): {p.stdout.strip()}")
    rows = one_table(out)
    expect_untimed(rows, 16, 5, 2, 3, "made during a CUDA-graph capture")
    r = square_row(rows, 64)
    check(r is not None and r["timed_calls"] == "1" and abs(float(r["max_us"]) - 20000) < 1,
          f"the 20 ms call before the capture: {r}")
    check("3 GPU calls were made inside CUDA-graph captures" in p.stdout + p.stderr,
          "the summary does not say that 3 calls were made inside a graph capture")

    # 3. cuStreamIsCapturing fails: not timed, said why
    out = fresh(os.path.join(a.out, "implicit"))
    p = capture(out, [a.prog, "implicit"])
    check(p.returncode == 0, f"implicit: exit {p.returncode}")
    expect_untimed(one_table(out), 8, 2, 0, 0, "cuStreamIsCapturing failed")

    # 3b. the driver refuses the relaxed capture mode: one line says what that risks, and the
    # calls are still timed
    out = fresh(os.path.join(a.out, "exchange_fails"))
    p = capture(out, [a.prog, "exchange_fails"])
    check(p.returncode == 0, f"exchange_fails: exit {p.returncode}")
    check("opbench-capture: cuThreadExchangeStreamCaptureMode failed (CUresult 1): the capture's "
          "event queries could invalidate a CUDA graph the job captures in global mode"
          in p.stderr, f"exchange_fails: stderr says {p.stderr.strip()[-300:]}")
    r = square_row(one_table(out), 8)
    check(r is not None and (r["calls"], r["timed_calls"]) == ("2", "2"),
          f"exchange_fails: the two calls, timed: {r}")

    # 4. an NCCL nonblocking communicator: ncclInProgress, counted untimed, for that reason past
    # the sampling's first 32 calls too (they were counted as sampled out, which the summary's
    # job time adds at the timed calls' mean)
    out = fresh(os.path.join(a.out, "nonblocking"))
    p = capture(out, [a.prog, "nonblocking", "100"])
    check(p.returncode == 0, f"nonblocking: exit {p.returncode}")
    rows = [r for r in one_table(out) if r["api"] == "ncclAllReduce"]
    if check(len(rows) == 1, f"nonblocking: rows {rows}"):
        r = rows[0]
        print(f"  ncclAllReduce on a nonblocking communicator: calls {r['calls']}, timed "
              f"{r['timed_calls']}, not sampled {r['not_sampled_calls']}; note: {r['note']}")
        check((r["calls"], r["timed_calls"], r["count"], r["not_sampled_calls"]) ==
              ("100", "0", "512", "0"), f"nonblocking: {r}")
        check("100 calls without a time: 100 an NCCL nonblocking communicator enqueued them "
              "later (ncclInProgress)" in r["note"], f"nonblocking: the note says {r['note']}")
    # the summary says the calls have no time, and that the notes say why (not "as an execution
    # trace records them")
    check("100 calls, no call timed (the notes below say why)" in p.stdout + p.stderr and
          "100 calls have no time for another reason" in p.stdout + p.stderr,
          f"nonblocking: the summary says {(p.stdout + p.stderr)[-400:]}")

    # 4a. one process driving two GPUs: a group over two communicators is a row for each one's
    # all_reduce of 1024 (not one of 2048), untimed; a group on one communicator and stream is
    # one call, timed
    out = fresh(os.path.join(a.out, "multicomm"))
    p = capture(out, [a.prog, "multicomm"])
    check(p.returncode == 0, f"multicomm: exit {p.returncode}")
    groups = {r["count"]: r for r in one_table(out) if r["api"] == "ncclGroupEnd"}
    print("  multicomm: " + "; ".join(f"count {c}: calls {r['calls']}, timed {r['timed_calls']}"
                                      for c, r in sorted(groups.items())))
    check(sorted(groups) == ["1024", "512"], f"multicomm: the group rows' counts {sorted(groups)}")
    if "1024" in groups:
        r = groups["1024"]
        check((r["calls"], r["timed_calls"], r["bytes"]) == ("4", "0", "4096"),
              f"multicomm: the two-communicator groups' row {r}")
        check("several communicators" in r["note"], f"multicomm: the note says {r['note']}")
    if "512" in groups:
        check((groups["512"]["calls"], groups["512"]["timed_calls"]) == ("1", "1"),
              f"multicomm: the one-communicator group's row {groups['512']}")

    # 4b'. a call still running when the program returns is read at exit before the driver
    # shuts down (the stand-in's exit handler, registered at its first call as the CUDA
    # runtime's is): timed, not counted as lacking events
    out = fresh(os.path.join(a.out, "exit_inflight"))
    p = capture(out, [a.prog, "exit_inflight"])
    check(p.returncode == 0, f"exit_inflight: exit {p.returncode}")
    r = square_row(one_table(out), 20)
    print(f"exit_inflight: {r and (r['calls'], r['timed_calls'], r['max_us'], r['note'])}")
    check(r is not None and (r["calls"], r["timed_calls"]) == ("1", "1") and
          abs(float(r["max_us"] or 0) - 50000) < 1, f"exit_inflight: the 50 ms call: {r}")

    # 4c. no thread can be made for the poller: said once, and the hooked calls read the
    # timings themselves without waiting, so the events are reused (not two new ones a call)
    out = fresh(os.path.join(a.out, "nothread"))
    p = capture(out, [a.prog, "nothread"])
    loop_ms, creates = figures(p.stdout, "loop_ms", "event_creates")
    print(f"nothread: loop {loop_ms} ms, {creates} events created for 20 calls")
    check(p.returncode == 0, f"nothread: exit {p.returncode}")
    check("could not start the thread that reads GPU timings (pthread_create: " in p.stderr,
          f"nothread: stderr says {p.stderr.strip()[-300:]}")
    check(creates is not None and creates <= 8, f"nothread: {creates} events created for 20 calls")
    check(loop_ms is not None and loop_ms < 20 * 1.5 + 15, f"nothread: the loop took {loop_ms} ms")
    r = square_row(one_table(out), 12)
    check(r is not None and (r["calls"], r["timed_calls"]) == ("20", "20"), f"nothread: {r}")

    # 4b. the poller parks when nothing is in flight (no polls, so a hooked call has no thread to
    # wake while a job keeps the GPU busy), and a call after that wakes it: its timing is read
    # while the job runs, not left to the exit's drain
    out = fresh(os.path.join(a.out, "park"))
    p = capture(out, [a.prog, "park"])
    idle, woken = figures(p.stdout, "idle_queries", "woken_queries")
    print(f"park: {idle} event queries in 200 ms with nothing in flight, {woken} after the next call")
    check(p.returncode == 0, f"park: exit {p.returncode}")
    check(idle == 0, f"park: {idle} event queries with nothing in flight: the poller did not park")
    check(woken is not None and woken >= 1,
          f"park: {woken} event queries after a call to a parked poller: the call did not wake it")
    r = square_row(one_table(out), 24)
    check(r is not None and r["timed_calls"] == "2", f"park: the two 1 ms calls: {r}")

    # 4d. cudaDeviceReset under the capture: the device's events die, the context may keep its
    # handle. The call running at the reset is untimed and says why; the calls after it are
    # timed, where the dead events went back to the pool and every later call took them again.
    # With cuCtxGetId the re-made context has a new id and a pool of its own; without it (a
    # driver before CUDA 12.0) the first refused event drops the pool
    for mode, prog in (("reset", a.prog), ("reset on an old driver", a.prog_old_driver)):
        out = fresh(os.path.join(a.out, mode.replace(" ", "_")))
        p = capture(out, [prog, "reset"])
        check(p.returncode == 0, f"{mode}: exit {p.returncode} {p.stderr.strip()[-300:]}")
        rows = one_table(out)
        before, after = square_row(rows, 8), square_row(rows, 16)
        print(f"{mode}: before {before and (before['calls'], before['timed_calls'])}, after "
              f"{after and (after['calls'], after['timed_calls'], after['note'])}")
        check(before is not None and (before["calls"], before["timed_calls"]) == ("2", "2"),
              f"{mode}: the calls before it: {before}")
        check(after is not None and (after["calls"], after["timed_calls"]) == ("3", "3"),
              f"{mode}: the calls after it: {after}")
        expect_untimed(rows, 12, 1, 0, 0, "the driver refused their timing events")
        # a dead handle given to the driver is undefined behaviour: none where the context's id
        # tells the re-made context apart; without ids, 6: the running call's query and the
        # destroys of its two events, the first call's refused record and the destroys of its two
        # (the pool's last two), after which the calls take new events
        dead, = figures(p.stdout, "dead_handle_calls")
        print(f"{mode}: {dead} driver calls given a dead event")
        check(dead == (0 if mode == "reset" else 6), f"{mode}: {dead} calls with a dead event")

    # 5. a kernel that never ends: the next call, fork() and exit do not wait for it
    out = fresh(os.path.join(a.out, "hang"))
    t0 = time.time()
    try:
        p = capture(out, [a.prog, "hang"], timeout=60)
    except subprocess.TimeoutExpired:
        check(False, "hang: the program under the capture did not end (a call, fork or exit "
                     "waited for the operation that never ends)")
        return
    took = time.time() - t0
    call_ms, fork_ms, child = figures(p.stdout, "call_ms", "fork_ms", "child_exit")
    print(f"hang: the call behind it took {call_ms} ms, fork {fork_ms} ms, the child exited "
          f"{child}; the job ended {took:.1f} s after it started")
    check(p.returncode == 0 and child == 7, f"hang: exit {p.returncode}, child {child}")
    # the child's exit makes no driver call (CUDA cannot be used after fork; the stand-in says
    # when it is)
    check("called in a forked child" not in p.stderr,
          f"hang: the forked child called the driver: {p.stderr.strip()[-300:]}")
    expect_untimed(one_table(out), 4, 1, 0, 0, "still running on the GPU when the process ended")


def bench_gemm_mode(a):
    out = fresh(a.out)
    report = os.path.join(out, "report")
    cap = os.path.join(out, "capture")
    p = capture(cap, [a.bench_gemm, "--backend", a.backend, "--m", "256", "--n", "128", "--k",
                      "64", "--layout", "NN", "--dtype", a.dtype, "--warmup", "2",
                      "--min-samples", "5", "--max-samples", "5", "--report-dir-path", report])
    check(p.returncode == 0, f"bench_gemm under the capture exited {p.returncode}")
    expected, bench_us = None, None
    jsonl = os.path.join(report, "gemm_sweep.jsonl")
    if check(os.path.exists(jsonl), f"no {jsonl}"):
        row = json.loads(open(jsonl).readline())
        m = row.get("measurement", {})
        samples = row["metrics"].get("samples")
        if check(samples is not None, f"bench_gemm's row has no samples: {row.get('status')}: "
                                      f"{row.get('note')}"):
            expected = m.get("warmup_runs", 0) + samples * (row.get("launches_per_sample") or 1)
        bench_us = row["metrics"].get("time_us")
    calls, in_job = 0, None
    for path in files(cap):
        for r in read_rows(path):
            if (r["kind"] == "gemm" and (r["m"], r["n"], r["k"], r["layout"]) == ("256", "128", "64", "NN")
                    and r["dtype"] == a.dtype):
                calls += int(r["calls"])
                in_job = float(r["avg_us"]) if r["avg_us"] else None
    print(f"bench_gemm {a.backend} {a.dtype} 256x128x64 NN: captured {calls} calls, bench_gemm ran "
          f"{expected} (warm-up + samples x launches); in-job avg {in_job} us, bench_gemm {bench_us} us")
    check(calls > 0, "the capture holds no 256x128x64 NN GEMM of bench_gemm's")
    if a.backend == "cpu":
        check(calls == expected, f"captured {calls} calls, bench_gemm ran {expected}")
    with open(os.path.join(out, "check.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["status", "note", "captured_calls", "expected_calls", "in_job_us", "bench_us"])
        w.writerow(["ok" if not problems else "failed", "; ".join(problems)[:300], calls, expected,
                    in_job if in_job is not None else "", bench_us if bench_us is not None else ""])


def replay_gemm_mode(a):
    out = fresh(a.out)
    data = os.path.join(ROOT, "tests", "data", "capture_replay")
    quick = ["--backend", "cpu", "--max-samples", "3", "--min-samples", "3", "--warmup", "1"]
    cases = [([], {("sgemm_", "fp32"): (16, 23.75, "ok"), ("cublasLtMatmul", "bf16"): (4, 100.0, "skipped")}),
             (["--rank", "1"], {("sgemm_", "fp32"): (6, 30.0, "ok")})]
    for extra, expected in cases:
        report = os.path.join(out, "rank" + (extra[1] if extra else "all"))
        p = run([a.bench_gemm, "--capture-path", data, "--report-dir-path", report] + quick + extra)
        print(p.stdout[-600:], p.stderr[-600:])
        check(p.returncode == 0, f"bench_gemm --capture-path {' '.join(extra)} exited {p.returncode}")
        path = os.path.join(report, "gemm_capture.csv")
        if not check(os.path.exists(path), f"no {path}"):
            continue
        rows = read_rows(path)
        got = {(r["gemm"], r["dtype"]): r for r in rows}
        check(set(got) == set(expected), f"{' '.join(extra) or 'merged'}: rows {sorted(got)}, "
              f"expected {sorted(expected)}")
        for key, (calls, in_job, status) in expected.items():
            r = got.get(key)
            if r is None:
                continue
            print(f"  {key}: status {r['status']}, captured_calls {r['captured_calls']}, in_job_us "
                  f"{r['in_job_us']}, time_us {r['time_us']}, in_job_ratio {r['in_job_ratio']}")
            check(r["status"] == status, f"{key}: status {r['status']}, expected {status}")
            check(int(r["captured_calls"]) == calls, f"{key}: captured_calls {r['captured_calls']}")
            check(abs(float(r["in_job_us"]) - in_job) < 1e-6, f"{key}: in_job_us {r['in_job_us']}")
            check((r["m"], r["n"], r["k"]) == (("64", "48", "32") if key[0] == "sgemm_"
                                               else ("128", "256", "64")), f"{key}: shape")
            if status == "ok":
                ratio = in_job / float(r["time_us"])
                check(abs(float(r["in_job_ratio"]) - ratio) <= 1e-3 * ratio,
                      f"{key}: in_job_ratio {r['in_job_ratio']}, in_job_us / time_us = {ratio}")
                check(r["transa"] == "N" and r["transb"] == "T", f"{key}: layout")
            else:
                check(r["in_job_ratio"] == "" and r["note"] != "", f"{key}: a skipped row has a "
                      f"reason and no ratio ({r['note']!r}, {r['in_job_ratio']!r})")
    # plot_report.py draws a capture table and its replay
    plot = run([PY, os.path.join(ROOT, "scripts", "plot_report.py"),
                os.path.join(data, "capture-node1-rank0.csv"),
                os.path.join(out, "rankall", "gemm_capture.csv"), "--out", os.path.join(out, "plots")])
    pngs = sorted(f for f in os.listdir(os.path.join(out, "plots")) if f.endswith(".png")) if plot.returncode == 0 else []
    print("plot_report.py:", plot.returncode, pngs, plot.stderr.strip())
    check(pngs == ["capture-node1-rank0_capture.png", "gemm_capture_capture_replay.png"],
          f"plot_report.py wrote {pngs}")
    q = run([a.bench_gemm, "--capture-path", data, "--rank", "7", "--dry-run"])
    print("--rank 7:", q.stderr.strip())
    check(q.returncode == 2 and "--rank 7: no table of that rank in --capture-path" in q.stderr,
          f"--rank 7: exit {q.returncode}, {q.stderr.strip()}")


def replay_ccl_mode(a):
    out = fresh(a.out)
    # bench_ccl -w 0 still makes its first call untimed (as nccl-tests does: NCCL sets up its
    # connections at a communicator's first call): 1 + 2 samples x 3 calls of all_reduce on
    # 1024 fp32 a rank in each placement, which the capture counts (6 before, the first call a
    # sample's)
    first = os.path.join(out, "first_call")
    p = capture(first, [a.mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", "2",
                        a.bench_ccl, "--backend", "mpi", "--op", "all_reduce", "-b", "4096",
                        "-e", "4096", "-n", "3", "-w", "0", "-c", "0", "--min-samples", "2",
                        "--max-samples", "2", "--report-dir-path", os.path.join(out, "first_rep")])
    check(p.returncode == 0, f"bench_ccl -w 0 under the capture exited {p.returncode}")
    for path in files(first):
        calls = {r["placement"]: int(r["calls"]) for r in read_rows(path)
                 if r["api"] == "MPI_Allreduce" and r["count"] == "1024"}
        print(f"  -w 0: {os.path.basename(path)}: MPI_Allreduce calls of 1024 fp32 {calls}")
        check(calls == {"out_of_place": 7, "in_place": 7},
              f"-w 0: {calls} calls of the measured all_reduce, expected 1 + 2 x 3 each placement")
    check(len(files(first)) == 2, f"-w 0: capture files {files(first)}")
    data = os.path.join(ROOT, "tests", "data", "capture_replay")
    # captured_calls per rank, as in_job_us: 5 on each of the 2 ranks (issue 44: the merged run
    # said 10, the ranks' calls summed)
    for extra, (calls, in_job) in (([], (5, 11.0)), (["--rank", "1"], (5, 12.0))):
        report = os.path.join(out, "rank" + (extra[1] if extra else "all"))
        p = run([a.mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", "2", a.bench_ccl,
                 "--backend", "mpi", "--capture-path", data, "--report-dir-path", report,
                 "-n", "5", "-w", "1", "-c", "1"] + extra)
        print(p.stdout[-400:], p.stderr[-400:])
        check(p.returncode == 0, f"bench_ccl --capture-path {' '.join(extra)} exited {p.returncode}")
        path = os.path.join(report, "ccl_all_reduce.csv")
        if not check(os.path.exists(path), f"no {path}"):
            continue
        rows = read_rows(path)
        check(len(rows) == 2, f"{path}: {len(rows)} rows, expected out and in place")
        for r in rows:
            print(f"  {r['label']} {r['placement']} {r['size_bytes']} B: captured_calls "
                  f"{r['captured_calls']}, in_job_us {r['in_job_us']}, time_us {r['time_us']}, "
                  f"in_job_ratio {r['in_job_ratio']}, status {r['status']}")
            check(r["label"] == "MPI_Allreduce" and r["size_bytes"] == "4096" and r["count"] == "1024"
                  and r["dtype"] == "fp32" and r["redop"] == "sum", f"row {r}")
            check(r["status"] == "ok" and r.get("check", "") in ("", "passed"), f"status {r['status']}")
            check(int(r["captured_calls"]) == calls, f"captured_calls {r['captured_calls']}, expected {calls}")
            check(abs(float(r["in_job_us"]) - in_job) < 1e-6, f"in_job_us {r['in_job_us']}")
            ratio = in_job / float(r["time_us"])
            check(abs(float(r["in_job_ratio"]) - ratio) <= 1e-3 * ratio,
                  f"in_job_ratio {r['in_job_ratio']}, in_job_us / time_us = {ratio}")
    # A capture that says each call's placement: each runs as the job called it, with its own
    # calls and time (tests/data/capture_placed: 5 in place at 10 us, 1 out of place at 30 us,
    # per rank); an MPI_IN_PLACE call was keyed with the out-of-place one before
    report = os.path.join(out, "placed")
    p = run([a.mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", "2", a.bench_ccl,
             "--backend", "mpi", "--capture-path", os.path.join(ROOT, "tests", "data", "capture_placed"),
             "--report-dir-path", report, "-n", "5", "-w", "1", "-c", "1"])
    check(p.returncode == 0, f"bench_ccl --capture-path capture_placed exited {p.returncode}")
    path = os.path.join(report, "ccl_all_reduce.csv")
    if check(os.path.exists(path), f"no {path}"):
        got = {r["placement"]: (int(r["captured_calls"]), float(r["in_job_us"])) for r in read_rows(path)}
        print("  placed:", got)
        check(got == {"in_place": (5, 10.0), "out_of_place": (1, 30.0)},
              f"{path}: {got}, expected in_place (5, 10 us) and out_of_place (1, 30 us)")
    check("leaves out" not in p.stderr, f"--placement both left a placement out: {p.stderr[-300:]}")
    # --placement that leaves out the one the job called: that collective is named, not dropped
    for placement, dropped in (("out_of_place", "in_place"), ("in_place", "out_of_place")):
        q = run([a.bench_ccl, "--backend", "mpi", "--capture-path",
                 os.path.join(ROOT, "tests", "data", "capture_placed"), "--placement", placement,
                 "--dry-run", "--world-size", "2"])
        said = ("warning: --capture-path: left out MPI_Allreduce all_reduce 4096 B: the job called "
                f"it {dropped}, which --placement leaves out")
        print(f"  --placement {placement}:", q.returncode, q.stderr.strip())
        check(q.returncode == 0 and said in q.stderr and "1 cases on 2 ranks" in q.stdout,
              f"--placement {placement}: exit {q.returncode}, expected one case and '{said}': "
              f"{q.stdout[-300:]} {q.stderr[-300:]}")
    # A replayed call whose check failed keeps its time but has no ratio: capture_summary.py
    # --replay leaves it out (it listed it as a call run in another dtype, '-')
    failed = os.path.join(out, "failed")
    p = run([a.mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", "2", a.bench_ccl,
             "--backend", "mpi", "--capture-path", data, "--report-dir-path", failed,
             "-n", "5", "-w", "1", "-c", "1", "--test-corrupt-rank", "1", "--placement", "in_place"])
    rows = read_rows(os.path.join(failed, "ccl_all_reduce.csv")) if p.returncode == 1 else []
    check(len(rows) == 1 and rows[0]["status"] == "failed" and rows[0]["time_us"] != ""
          and rows[0]["in_job_ratio"] == "",
          f"a corrupted replay: exit {p.returncode}, rows {rows}, {p.stderr[-300:]}")
    q = run([PY, SUMMARY, data, "--replay", failed])
    print("  summary of the failed replay:", [l for l in q.stdout.splitlines() if "replayed" in l])
    check(q.returncode == 0 and "replayed alone (0 shapes with a time in the job)" in q.stdout,
          f"capture_summary.py --replay on a failed row: exit {q.returncode}, {q.stdout[-400:]}")


def replay_strided_mode(a):
    """A job whose groups are not consecutive ranks, captured and replayed: bench_ccl --model tiny
    --tp 2 --pp 2 on 4 ranks sends between pipeline stages 2 ranks apart (ranks 0 and 2, 1 and
    3). The capture must say so (comm_stride 2 on those calls, 1 on the world's), and the replay
    must run them 2 apart again (group_stride 2): it ran every captured group on consecutive
    ranks, which on several nodes measures the link inside a node where the job crossed nodes."""
    out = fresh(a.out)
    mpirun = [a.mpiexec, "--allow-run-as-root", "--oversubscribe", "--mca", "mpi_yield_when_idle",
              "1", "-np", "4", a.bench_ccl, "--backend", "mpi"]
    job = os.path.join(out, "job")
    # fp32: MPI has no bf16, whose bytes move as uint16, a dtype bench_ccl does not replay
    p = capture(job, mpirun + ["--model", "tiny", "--tp", "2", "--pp", "2", "--op", "send_recv",
                               "--model-dtype", "fp32", "-n", "2", "-w", "1", "-c", "0", "--min-samples", "2",
                               "--max-samples", "2", "--report-dir-path",
                               os.path.join(out, "job_report")])
    check(p.returncode == 0, f"bench_ccl --model under the capture exited {p.returncode}")
    strides = {}  # (op, comm_size) -> the comm_stride cells seen
    for path in files(job):
        for r in read_rows(path):
            if r["kind"] in ("collective", "p2p"):
                strides.setdefault((r["op"], r["comm_size"]), set()).add(r["comm_stride"])
    print("  captured (op, comm_size) -> comm_stride:", strides)
    check(strides.get(("send_recv", "2")) == {"2"},
          f"the pipeline's send_recv pairs: comm_stride {strides.get(('send_recv', '2'))}, expected 2")
    world = {s for (op, size), cells in strides.items() if size == "4" for s in cells}
    check(world == {"1"}, f"calls over all 4 ranks: comm_stride {world}, expected 1")
    replay = os.path.join(out, "replay")
    p = run(mpirun + ["--capture-path", job, "--report-dir-path", replay,
                      "-n", "2", "-w", "1", "-c", "1"])
    print(p.stdout[-300:], p.stderr[-300:])
    check(p.returncode == 0, f"bench_ccl --capture-path exited {p.returncode}: {p.stderr[-300:]}")
    path = os.path.join(replay, "ccl_send_recv.csv")
    rows = [r for r in read_rows(path) if r["group_size"] == "2"] if os.path.exists(path) else []
    print("  replayed pairs:", [(r["size_bytes"], r["group_size"], r["group_stride"], r["status"])
                                for r in rows])
    check(rows and all(r["group_stride"] == "2" and r["status"] == "ok" for r in rows),
          f"{path}: the replayed pairs' group_stride, expected 2 (ok): {rows}")
    # two ranks cannot hold a pair 2 apart: consecutive, and a warning says so
    q = run([a.bench_ccl, "--backend", "mpi", "--capture-path", job, "--dry-run",
             "--world-size", "2"])
    said = ("the job's groups of 2 ranks were 2 ranks apart, which takes 2 x 2 ranks; this launch "
            "has 2: run on consecutive ranks instead")
    print("  --world-size 2:", q.returncode, [l for l in q.stderr.splitlines() if said in l][:1])
    check(q.returncode == 0 and said in q.stderr,
          f"--dry-run --world-size 2: exit {q.returncode}, expected '{said}': {q.stderr[-400:]}")


def free_port():
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http_get(url):
    import urllib.request
    with urllib.request.urlopen(url, timeout=2) as r:
        return r.read().decode()


def prometheus_mode(a):
    for tool in ("prometheus", "promtool"):
        if shutil.which(tool) is None:
            print(f"{tool} is not installed (scripts/setup.sh installs Debian's prometheus): skipped")
            sys.exit(77)
    out = fresh(a.out)
    port, prom_port = free_port(), free_port()
    # periodic writes: the program is ended with SIGTERM, which skips the exit write
    env = dict(os.environ, OPBENCH_CAPTURE_DIR=out, OPBENCH_CAPTURE_INTERVAL="0.5",
               OPBENCH_CAPTURE_PORT=str(port), LD_PRELOAD=a.lib)
    for name in ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"):
        env.pop(name, None)  # the port is the base port + the local rank: 0 here
    prog = subprocess.Popen([a.prog, "loop", "60"], env=env, stdout=subprocess.DEVNULL)
    prom = None
    try:
        body, deadline = "", time.time() + 20
        while time.time() < deadline and "cblas_sgemm" not in body:
            time.sleep(0.2)
            try:
                body = http_get(f"http://127.0.0.1:{port}/metrics")
            except OSError:
                pass
        if not check("cblas_sgemm" in body, f"no series at http://127.0.0.1:{port}/metrics"):
            return
        lint = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True,
                              text=True)
        print("promtool check metrics (live):", lint.returncode, (lint.stdout + lint.stderr).strip())
        check(lint.returncode == 0 and not (lint.stdout + lint.stderr).strip(),
              "promtool check metrics rejects /metrics")
        with open(os.path.join(out, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: capture\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{port}']\n")
        prom = subprocess.Popen(
            ["prometheus", f"--config.file={out}/prometheus.yml", f"--storage.tsdb.path={out}/tsdb",
             f"--web.listen-address=127.0.0.1:{prom_port}"],
            stdout=open(os.path.join(out, "prometheus.log"), "w"), stderr=subprocess.STDOUT)
        result, deadline = [], time.time() + 60
        query = (f"http://127.0.0.1:{prom_port}/api/v1/query?query="
                 "opbench_capture_calls_total%7Bapi%3D%22cblas_sgemm%22%7D")
        while time.time() < deadline and not result:
            time.sleep(0.5)
            try:
                result = json.loads(http_get(query)).get("data", {}).get("result", [])
            except (OSError, ValueError):
                pass
        print("Prometheus query result:", json.dumps(result)[:400])
        if check(len(result) == 1, f"Prometheus returned {len(result)} series for the query"):
            labels, value = result[0]["metric"], float(result[0]["value"][1])
            check(labels.get("shape") == "64x64x64 NN" and labels.get("dtype") == "fp32"
                  and labels.get("job") == "capture", f"labels {labels}")
            check(value > 0, f"calls {value}")
    finally:
        for p in (prom, prog):
            if p is not None:
                p.terminate()
                p.wait()
    # the textfile written at exit passes promtool too
    found = [f[:-3] + "prom" for f in files(out)]
    if check(len(found) == 1, f"expected one textfile, found {found}"):
        with open(found[0]) as f:
            lint = subprocess.run(["promtool", "check", "metrics"], stdin=f, capture_output=True,
                                  text=True)
        print("promtool check metrics (textfile):", lint.returncode, (lint.stdout + lint.stderr).strip())
        check(lint.returncode == 0 and not (lint.stdout + lint.stderr).strip(),
              f"promtool check metrics rejects {found[0]}")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=["torch", "numpy", "mpi", "threads", "fork", "killed",
                                    "stuckexit", "nested", "baddir", "gpu", "gpu-async", "pyfork", "pyterm", "bench-gemm", "replay-gemm", "prometheus", "replay-ccl",
                                    "replay-strided", "gpu-comms"])
    p.add_argument("--out", required=True)
    p.add_argument("--prog")
    p.add_argument("--prog-old-driver", help="gpu-async: --prog linked to a stand-in driver "
                   "without cuCtxGetId")
    p.add_argument("--lib")
    p.add_argument("--mpiexec", default="mpirun")
    p.add_argument("--bench-gemm")
    p.add_argument("--bench-ccl")
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--backend", default="cpu")
    p.add_argument("--dtype", default="fp32")
    a = p.parse_args(argv)
    if a.lib:
        os.environ["OPBENCH_CAPTURE_LIB"] = a.lib
    globals()[a.mode.replace("-", "_") + "_mode"](a)
    for message in problems:
        print("FAIL:", message)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
