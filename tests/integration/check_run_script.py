#!/usr/bin/env python3
"""Runs scripts/run_script.sh and scripts/report.sh the way a user would, from a directory of
their own, and checks where their files land, what they print and how they exit.

Usage (WORK is emptied first; every check prints what it found):
  check_run_script.py help SCRIPT FIRST_LINE
      `bash <relative path>/SCRIPT --help` from the folder above the source tree: exit 0, and the
      help text (starting with FIRST_LINE), not lines of the script
  check_run_script.py relative SCRIPT WORK BENCH_CCL
      a sweep at 2 and 3 ranks run from WORK with --out sweep_rel and --hostfile hosts
      (`localhost slots=4`): WORK/sweep_rel/<op>_np<N>.csv with 6 rows each (1K, 2K, 4K, in and
      out of place), nothing written beside the script
  check_run_script.py report SCRIPT WORK BUILD
      QUICK=1 report.sh rel_suite from WORK, BUILD given relative to WORK: WORK/rel_suite/summary.md
      and its 4 PNGs
  check_run_script.py installed SCRIPT WORK CMAKE BUILD
      `cmake --install BUILD --prefix WORK/prefix`; the installed run_script.sh finds
      WORK/prefix/bin/bench_ccl with no BENCH_CCL and no bench_ccl on PATH, and once that is
      removed, says so naming every place it looked (exit 2)
  check_run_script.py failure SCRIPT WORK BENCH_CCL
      a run that bench_ccl refuses (an unknown flag after --): exit 1, and the failure line quotes
      bench_ccl's error, which is in the run's log too
  check_run_script.py mpirun-args SCRIPT WORK FAKE_MPIRUN
      --mpirun-arg, --launch-agent, --iface, --job-timeout and MPIRUN_ARGS reach mpirun (a fake that prints its
      arguments) as the words they should be; NCCL_SOCKET_IFNAME only with the nccl backend
"""
import csv
import os
import shutil
import subprocess
import sys


def fresh(work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)


def environment(**changes):
    """This environment without NCCL_* and BENCH_CCL (they would change what is tested), plus changes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NCCL_") and k != "BENCH_CCL"}
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}, **changes)
    return env


def run(command, cwd, env, timeout=120):
    print("$", " ".join(command), f"(in {cwd})")
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    print(f"exit {proc.returncode}\n--- stdout\n{proc.stdout}--- stderr\n{proc.stderr}---")
    return proc


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def check_help(script, first_line):
    source_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(script))))
    relative = os.path.relpath(script, source_parent)
    proc = run(["bash", relative, "--help"], source_parent, environment())
    problems = []
    if proc.returncode != 0:
        problems.append(f"exit {proc.returncode}")
    if not proc.stdout.startswith(first_line):
        problems.append(f"the help does not start with {first_line!r}")
    if "set -euo pipefail" in proc.stdout or proc.stdout.lstrip().startswith("#"):
        problems.append("printed lines of the script, not its help")
    return problems


def check_relative(script, work, bench):
    fresh(work)
    with open(os.path.join(work, "hosts"), "w") as f:
        f.write("localhost slots=4\n")
    proc = run(["bash", script, "--np", "2 3", "--ops", "all_reduce all_gather", "-b", "1K", "-e", "4K",
                "--backend", "mpi", "--hostfile", "hosts", "--out", "sweep_rel",
                # the paths are what this checks, not the figures: short cases (and `--` passing on)
                "--", "--max-time", "0.02"], work, environment(BENCH_CCL=bench))
    problems = [] if proc.returncode == 0 else [f"exit {proc.returncode}"]
    for op in ("all_reduce", "all_gather"):
        for np in (2, 3):
            path = os.path.join(work, "sweep_rel", f"{op}_np{np}.csv")
            if not os.path.exists(path):
                problems.append(f"{path}: missing")
                continue
            found = rows(path)
            worlds = {r["world_size"] for r in found}
            print(f"{path}: {len(found)} rows, world size {worlds}")
            if len(found) != 6 or worlds != {str(np)}:
                problems.append(f"{path}: {len(found)} rows of world size {worlds}, expected 6 of {np}")
    beside = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(script))), "sweep_rel")
    if os.path.exists(beside):
        problems.append(f"{beside}: written beside the script")
    return problems


def check_report(script, work, build):
    fresh(work)
    # A folder of the user's is refused, untouched: report.sh writes only into its own folders.
    mine = os.path.join(work, "mine")
    os.makedirs(os.path.join(mine, "plots"))
    with open(os.path.join(mine, "plots", "chart.png"), "w") as f:
        f.write("my chart")
    refused = run(["bash", script, "mine"], work, environment(QUICK="1", BUILD=os.path.relpath(build, work)))
    problems = []
    if refused.returncode != 2 or "holds files report.sh did not write" not in refused.stderr:
        problems.append(f"report.sh into a user's folder: exit {refused.returncode}: {refused.stderr}")
    if open(os.path.join(mine, "plots", "chart.png")).read() != "my chart" or len(os.listdir(mine)) != 1:
        problems.append(f"report.sh changed the user's folder: {os.listdir(mine)}")
    proc = run(["bash", script, "rel_suite"], work, environment(QUICK="1", BUILD=os.path.relpath(build, work)),
               timeout=300)
    problems += [] if proc.returncode == 0 else [f"exit {proc.returncode}"]
    suite = os.path.join(work, "rel_suite")
    if not os.path.exists(os.path.join(suite, "summary.md")):
        problems.append(f"{suite}/summary.md: missing")
    plots = sorted(f for f in os.listdir(os.path.join(suite, "plots")) if f.endswith(".png")) if os.path.isdir(os.path.join(suite, "plots")) else []
    print("plots:", plots)
    if len(plots) != 8:
        problems.append(f"{len(plots)} PNGs in {suite}/plots, expected 8 (gemm, attention, memops, ccl, fsdp, "
                        "the FSDP plan, the step, the step's operators)")
    beside = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(script))), "rel_suite")
    if os.path.exists(beside):
        problems.append(f"{beside}: written beside the script")
    return problems


def check_installed(script, work, cmake, build):
    fresh(work)
    prefix = os.path.join(work, "prefix")
    install = subprocess.run([cmake, "--install", build, "--prefix", prefix], capture_output=True, text=True)
    if install.returncode != 0:
        return [f"cmake --install failed: {install.stderr}"]
    installed = os.path.join(prefix, "share", "opbench", "scripts", os.path.basename(script))
    bench = os.path.join(prefix, "bin", "bench_ccl")
    # PATH without the build tree: only the installed layout can lead to bench_ccl.
    env = environment(PATH="/usr/bin:/bin")
    proc = run([installed, "--np", "2", "--ops", "all_reduce", "-b", "1K", "-e", "1K", "--backend", "mpi",
                "--out", os.path.join(work, "sweep")], work, env)
    problems = [] if proc.returncode == 0 else [f"exit {proc.returncode} with {bench} in place"]
    csv_path = os.path.join(work, "sweep", "all_reduce_np2.csv")
    if not os.path.exists(csv_path) or len(rows(csv_path)) != 2:
        problems.append(f"{csv_path}: missing or not 2 rows (1K in and out of place)")
    os.remove(bench)
    proc = run([installed, "--np", "2", "--ops", "all_reduce", "--out", os.path.join(work, "none")], work, env)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    if proc.returncode != 2 or len(errors) != 1:
        problems.append(f"without bench_ccl: exit {proc.returncode} and {len(errors)} error lines, expected 2 and 1")
    for place in ("$BENCH_CCL (unset)", bench, "bench_ccl on PATH"):
        if not any(place in line for line in errors):
            problems.append(f"without bench_ccl: the error does not name {place}")
    return problems


def check_failure(script, work, bench):
    fresh(work)
    proc = run(["bash", script, "--np", "2", "--ops", "all_reduce", "-b", "1K", "-e", "1K", "--backend", "mpi",
                "--out", "sweep", "--", "--frobnicate"], work, environment(BENCH_CCL=bench))
    problems = [] if proc.returncode == 1 else [f"exit {proc.returncode}, expected 1 (a run failed)"]
    log = os.path.join("sweep", "all_reduce_np2.txt")
    failure = [line for line in proc.stderr.splitlines() if "all_reduce on 2 ranks failed" in line]
    if not failure:
        problems.append("no 'all_reduce on 2 ranks failed' line")
    elif not (f"log {log}): error: " in failure[0] and "frobnicate" in failure[0]):
        problems.append(f"the failure line does not quote bench_ccl's error: {failure[0]!r}")
    try:
        with open(os.path.join(work, log)) as f:
            if "frobnicate" not in f.read():
                problems.append(f"{log} lacks bench_ccl's error")
    except FileNotFoundError:
        problems.append(f"{os.path.join(work, log)}: missing")
    return problems


def check_mpirun_args(script, work, fake):
    fresh(work)
    problems = []
    for backend, ifname in (("mpi", "(unset)"), ("nccl", "lo")):
        out = os.path.join(work, backend)
        proc = run(["bash", script, "--np", "2", "--ops", "all_reduce", "--backend", backend, "--iface", "lo",
                    "--launch-agent", "ssh -p 2222", "--mpirun-arg", "-x", "--mpirun-arg", "OPBENCH_NOTE=a b",
                    "--out", out] + (["--job-timeout", "42"] if backend == "mpi" else []),
                   work, environment(MPIRUN=fake, BENCH_CCL=fake, MPIRUN_ARGS="--bind-to none"))
        if proc.returncode != 0:
            problems.append(f"{backend}: exit {proc.returncode}")
            continue
        with open(os.path.join(out, "all_reduce_np2.txt")) as f:
            text = f.read()
        # Each argument in brackets, one a line: a sequence of them is a run of adjacent lines.
        for words in (["--mca", "btl_tcp_if_include", "lo"], ["--mca", "oob_tcp_if_include", "lo"],
                      ["--mca", "plm_rsh_agent", "ssh -p 2222"], ["-x", "OPBENCH_NOTE=a b"],
                      ["--bind-to", "none"],
                      # the job limit: as given, or derived (the fake bench_ccl counts no cases:
                      # 300 + 100 x 3 x 300)
                      ["--timeout", "42" if backend == "mpi" else "90300"]):
            if "".join(f"[{w}]\n" for w in words) not in text:
                problems.append(f"{backend}: mpirun did not get {words}")
        if f"NCCL_SOCKET_IFNAME={ifname}\n" not in text:
            problems.append(f"{backend}: NCCL_SOCKET_IFNAME should be {ifname}")
    return problems


CHECKS = {"help": check_help, "relative": check_relative, "report": check_report, "installed": check_installed,
          "failure": check_failure, "mpirun-args": check_mpirun_args}


def main() -> int:
    if len(sys.argv) < 3 or sys.argv[1] not in CHECKS:
        print(__doc__)
        return 2
    problems = CHECKS[sys.argv[1]](*sys.argv[2:])
    if problems:
        print("problems:\n  " + "\n  ".join(problems))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
