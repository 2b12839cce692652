#!/usr/bin/python3
"""Runs real programs under scripts/capture.sh (libopbench_capture.so) and checks the captured
tables against counts worked out by hand (tests/integration/capture.cmake runs each mode).

  check_capture.py torch   --out DIR --bench-gemm BIN [--seq-len S] [--steps N]
      bench/peers/torch_train_step.py (the tiny model, fp32, 1 thread, no warm-up, N steps) under
      capture.sh. Expected sgemm_ calls = N x the GEMMs `bench_gemm --model tiny --dry-run`
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
  check_capture.py nested  --out DIR --prog BIN
  check_capture.py baddir  --out DIR --prog BIN --lib LIB

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
import subprocess
import sys
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
CAPTURE_SH = os.path.join(ROOT, "scripts", "capture.sh")
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
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


def capture(out, cmd, env=None, interval="0"):
    p = run(["bash", CAPTURE_SH, "--out", out, "--interval", interval, "--"] + cmd, env=env)
    sys.stdout.write(p.stdout)
    sys.stdout.write(p.stderr)
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


def compare(what, captured, expected):
    print(f"{what}: {'shape (m n k layout)':<28}{'captured':>10}{'expected':>10}")
    for key in sorted(set(captured) | set(expected)):
        mark = "" if captured.get(key, 0) == expected.get(key, 0) else "   <-- differs"
        print(f"  {' '.join(map(str, key)):<36}{captured.get(key, 0):>10}{expected.get(key, 0):>10}{mark}")
    check(captured == expected, f"{what}: captured calls differ from the expected ones (table above)")
    print(f"  total: captured {sum(captured.values())} calls, expected {sum(expected.values())}")


def checksum_lines(text):
    return sorted(line for line in text.splitlines() if "checksum" in line)


# ---------------------------------------------------------------- torch

def model_entry(name):
    with open(os.path.join(ROOT, "configs", "models.json")) as f:
        return next(m for m in json.load(f) if m["model"] == name)


def derived_gemms(bench_gemm, model, seq_len):
    """bench_gemm's dry-run table: (gemm, pass, m, n, k, layout, calls) per row."""
    p = run([bench_gemm, "--model", model, "--seq-len", str(seq_len), "--micro-batch", "1",
             "--backend", "cpu", "--dtype", "fp32", "--dry-run"])
    if not check(p.returncode == 0, f"bench_gemm --dry-run failed: {p.stderr.strip()}"):
        return []
    rows = []
    for line in p.stdout.splitlines():
        f = line.split()
        if len(f) >= 10 and f[0] == model and f[2] in ("fprop", "dgrad", "wgrad"):
            # model gemm pass [impl] batch m n k layout dtype calls gflop
            nums = f[3:]
            if not nums[0].isdigit():
                nums = nums[1:]
            batch, m, n, k, layout, _dtype, calls = nums[:7]
            rows.append((f[1], f[2], int(m), int(n), int(k), layout, int(calls)))
    return rows


def torch_mode(a):
    e = model_entry("tiny")
    H, Hq, Hkv = e["hidden_size"], e["num_attention_heads"], e["num_key_value_heads"]
    d, I, L = e.get("head_dim", H // Hq), e["intermediate_size"], e["num_hidden_layers"]
    S, steps = a.seq_len, a.steps
    out = fresh(a.out)
    p = capture(out, [PY, os.path.join(ROOT, "bench", "peers", "torch_train_step.py"), "--model",
                      "tiny", "--seq-len", str(S), "--warmup", "0", "--steps", str(steps),
                      "--threads", "1"])
    check(p.returncode == 0, f"torch_train_step.py under the capture exited {p.returncode}")
    found = files(out)
    if not check(len(found) == 1, f"expected one capture file (one process), found {found}"):
        return
    rows = read_rows(found[0])
    captured = gemm_counts(rows, "sgemm_")
    check(all(r["api"] == "sgemm_" for r in rows), "rows of another API than sgemm_: "
          + ", ".join(sorted({r["api"] for r in rows})))

    # the split torch.nn makes of bench_gemm's fused layers: output widths of the parts
    split = {"attn_qkv": [Hq * d, Hkv * d, Hkv * d], "mlp_gate_up": [I, I]}
    expected = Counter()
    derived = derived_gemms(a.bench_gemm, "tiny", S)
    check(len(derived) == 15, f"bench_gemm derived {len(derived)} rows for tiny, expected 15")
    for gemm, pas, m, n, k, layout, calls in derived:
        for part in split.get(gemm, [None]):
            mm, nn, kk = m, n, k
            if part is not None:  # N is n in fprop, k in dgrad, m in wgrad
                if pas == "fprop":
                    nn = part
                elif pas == "dgrad":
                    kk = part
                else:
                    mm = part
            expected[(mm, nn, kk, layout)] += calls * steps
    # torch 1.13's math attention: per layer, per head (batch 1), per step
    per = Hq * L * steps
    expected[(S, S, d, "NT")] += 2 * per   # S = Q·Kᵀ forward, dP = dO·Vᵀ backward
    expected[(S, d, S, "NN")] += 2 * per   # O = P·V forward, dQ = dS·K backward
    expected[(S, d, S, "TN")] += per       # dV = Pᵀ·dO
    expected[(d, S, S, "TN")] += per       # dKᵀ = Qᵀ·dS
    # torch_train_step.py's attention-path probe: one forward at sequence 16, Hq heads
    expected[(16, 16, d, "NT")] += Hq
    expected[(16, d, 16, "NN")] += Hq
    compare(f"torch step x {steps} (tiny, seq {S})", captured, expected)
    linear = sum(c for (gemm, *_rest, c) in derived)
    print(f"  per step: {linear} linear-layer GEMMs as bench_gemm derives them "
          f"({sum(c * len(split.get(g, [0])) for (g, *_r, c) in derived)} sgemm_ calls with "
          f"q/k/v and gate/up apart) + {6 * Hq * L} attention products")


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
MPI_EXPECTED = {
    ("MPI_Allreduce", "all_reduce", "fp32", 1024, 4096, "sum"): 5,
    ("MPI_Allreduce", "all_reduce", "fp32", 16, 64, "sum"): 3,
    ("MPI_Allreduce", "all_reduce", "fp64", 8, 64, "max"): 2,
    ("MPI_Allgather", "all_gather", "int32", 256, 2 * 256 * 4, ""): 2,
    ("MPI_Reduce_scatter_block", "reduce_scatter", "fp32", 512, 2 * 512 * 4, "sum"): 4,
    ("MPI_Bcast", "broadcast", "fp64", 100, 800, ""): 4,
    ("MPI_Reduce", "reduce", "fp32", 64, 256, "sum"): 1,
    ("MPI_Alltoall", "all_to_all", "fp32", 128, 2 * 128 * 4, ""): 3,
    ("MPI_Irecv", "recv", "fp32", 200, 800, ""): 6,
    ("MPI_Isend", "send", "fp32", 200, 800, ""): 6,
    ("MPI_Sendrecv", "send_recv", "fp64", 50, 400, ""): 2,
    ("MPI_Iallreduce", "all_reduce", "fp32", 2048, 8192, "sum"): 3,
    ("MPI_Barrier", "barrier", "none", 0, 0, ""): 2,
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
                   r["redop"])
            got[key] = got.get(key, 0) + int(r["calls"])
            check(r["comm_size"] == "2", f"{os.path.basename(path)}: comm_size of {key}")
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
    q = run(["bash", CAPTURE_SH, "--out", "/proc/no-such-folder", "--", a.prog, "threads", "1", "1"])
    print("capture.sh:", q.stderr.strip())
    check(q.returncode == 2 and q.stderr.startswith("error: capture.sh: --out"),
          f"capture.sh --out on an unusable folder: exit {q.returncode}, {q.stderr.strip()}")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=["torch", "numpy", "mpi", "threads", "fork", "killed",
                                    "nested", "baddir"])
    p.add_argument("--out", required=True)
    p.add_argument("--prog")
    p.add_argument("--lib")
    p.add_argument("--mpiexec", default="mpirun")
    p.add_argument("--bench-gemm")
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--steps", type=int, default=2)
    a = p.parse_args(argv)
    if a.lib:
        os.environ["OPBENCH_CAPTURE_LIB"] = a.lib
    globals()[a.mode + "_mode"](a)
    for message in problems:
        print("FAIL:", message)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
