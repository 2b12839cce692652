#!/usr/bin/env python3
"""What a new user meets on a first run, checked on the real binaries (one check per call):

  reuse BENCH_GEMM DIR          a report folder used again without --resume keeps the earlier
                                reports in DIR/earlier-<date>-<time>/ and says so
  noisy BENCH_GEMM DIR          rows that stopped noisy show as `noisy` in the table, the
                                closing lines and summary.md
  nothing BENCH_GEMM DIR        every case skipped (bf16 on the CPU): exit 3, and the last line
                                says nothing ran
  units BENCH_GEMM BENCH_ATTENTION DIR
                                progress lines write times and rates the same way in both
  environment MPIEXEC BENCH_CCL DIR
                                environment.json holds the run's NCCL_*/OMP_* variables, the rank
                                map and the mpirun command line
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

from report_check import verdict


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


def rows(path):
    with open(path) as f:
        return len(f.read().splitlines()) - 1


def reuse(gemm, out):
    shutil.rmtree(out, ignore_errors=True)
    cmd = [gemm, "--backend", "cpu", "--m", "64", "--n", "64", "--k", "64", "--max-time", "0.02",
           "--report-dir-path", out, "--quiet"]
    first = run(cmd)
    second = run(cmd[:-1] + ["--dtype", "fp32,fp64"])
    problems = []
    if first.returncode or second.returncode:
        problems.append(f"exit codes {first.returncode}, {second.returncode}: {second.stderr}")
    earlier = glob.glob(os.path.join(out, "earlier-*"))
    if len(earlier) != 1:
        problems.append(f"expected one earlier-* folder in {out}, found {earlier}")
    else:
        kept = os.path.join(earlier[0], "gemm_sweep.csv")
        if not os.path.exists(kept) or rows(kept) != 1:
            problems.append(f"{kept}: the first run's one row is not there")
        if not os.path.exists(os.path.join(earlier[0], "environment.json")):
            problems.append("the first run's environment.json was not kept")
        if f"held files of an earlier opbench run: moved them to {earlier[0]}" not in second.stderr:
            problems.append(f"no line says where the earlier reports went: {second.stderr}")
    if rows(os.path.join(out, "gemm_sweep.csv")) != 2:
        problems.append("the second run's CSV does not hold its own 2 rows")
    return problems


def noisy(gemm, out):
    shutil.rmtree(out, ignore_errors=True)
    summary = os.path.join(out, "summary.md")
    # A noise target no sampling can reach within 20 ms: every row stops noisy.
    p = run([gemm, "--backend", "cpu", "--m", "64,96", "--n", "64", "--k", "64", "--max-noise", "1e-6",
             "--max-time", "0.02", "--report-dir-path", out, "--summary-path", summary])
    problems = [] if p.returncode == 0 else [f"exit {p.returncode}: {p.stderr}"]
    table = [line for line in p.stdout.splitlines() if re.match(r"sweep ", line)]
    if len(table) != 2 or not all(line.rstrip().endswith("noisy") for line in table):
        problems.append(f"the table does not show both rows as noisy:\n{p.stdout}")
    if "2 of 2 cases: 2 ok (2 noisy), 0 skipped, 0 failed" not in p.stderr or "2 noisy rows" not in p.stderr:
        problems.append(f"the closing lines do not count the noisy rows:\n{p.stderr}")
    with open(summary) as f:
        text = f.read()
    if "2 ok (2 noisy)" not in text or text.count(" (noisy) |") != 2:
        problems.append(f"summary.md does not mark the noisy rows:\n{text}")
    return problems


def nothing(gemm, out):
    p = run([gemm, "--backend", "cpu", "--model", "tiny", "--dtype", "bf16", "--report-dir-path", out, "--quiet"])
    problems = [] if p.returncode == 3 else [f"exit {p.returncode}, expected 3 (nothing ran)"]
    last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
    if not last.startswith("nothing ran: every case was skipped"):
        problems.append(f"the last line does not say nothing ran: {last!r}")
    return problems


def units(gemm, attention, out):
    problems = []
    figure = re.compile(r"  \d+\.\d (us|ms) +\d+\.\d (GFLOPS|TFLOPS)")
    for cmd in ([gemm, "--backend", "cpu", "--m", "64", "--n", "64", "--k", "64"],
                [attention, "--backend", "cpu", "--model", "tiny", "--seq-len", "64", "--pass", "fwd"]):
        p = run(cmd + ["--max-time", "0.05", "--report-dir-path", out])
        done = [line for line in p.stderr.splitlines() if line.startswith("[1/")]
        if len(done) != 1 or not figure.search(done[0]):
            problems.append(f"{os.path.basename(cmd[0])}: the progress line does not read "
                            f"'<time> us|ms  <rate> GFLOPS|TFLOPS': {done}")
        if "1 of 1 cases: 1 ok" not in p.stderr:
            problems.append(f"{os.path.basename(cmd[0])}: closing line: {p.stderr}")
    return problems


def environment(mpiexec, ccl, out):
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, NCCL_DEBUG="WARN", OMP_NUM_THREADS="1")
    p = run([mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", "2", "-x", "NCCL_DEBUG", "-x", "OMP_NUM_THREADS",
             ccl, "--backend", "mpi", "--op", "all_reduce", "-b", "1K", "-e", "1K", "-n", "2", "-w", "1",
             "--max-time", "0.05", "--report-dir-path", out, "--quiet"], env=env)
    problems = [] if p.returncode == 0 else [f"exit {p.returncode}: {p.stderr}"]
    with open(os.path.join(out, "environment.json")) as f:
        e = json.load(f)
    if e.get("env", {}).get("NCCL_DEBUG") != "WARN" or e["env"].get("OMP_NUM_THREADS") != "1":
        problems.append(f"env lacks NCCL_DEBUG / OMP_NUM_THREADS: {e.get('env')}")
    ranks = e.get("ranks", [])
    if [r.get("rank") for r in ranks] != [0, 1] or not all(r.get("host") and "local_rank" in r for r in ranks):
        problems.append(f"ranks is not a map of both ranks to host and local rank: {ranks}")
    if "mpirun" not in (e.get("launcher") or "") and "mpiexec" not in (e.get("launcher") or ""):
        problems.append(f"launcher is not the mpirun command line: {e.get('launcher')}")
    return problems


def main() -> int:
    checks = {"reuse": reuse, "noisy": noisy, "nothing": nothing, "units": units, "environment": environment}
    name, args = sys.argv[1], sys.argv[2:]
    problems = checks[name](*args)
    return verdict(problems, None, f"ok: {name}")


if __name__ == "__main__":
    sys.exit(main())
