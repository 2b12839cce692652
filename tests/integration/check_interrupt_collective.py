#!/usr/bin/env python3
"""SIGTERM (or SIGINT), as a Slurm time limit or a Ctrl-C sends it, while a 2-rank bench_ccl or
bench_fsdp runs under mpirun, must end the job within seconds and leave the running case in the
report.

Where the signal goes (`to`):
- `ranks`: to every rank, as Slurm delivers it to the tasks of an srun step. The job must end
  with 128 + the signal number (mpirun passes on the first non-zero status of a rank).
- `mpirun`: to mpirun alone. Open MPI 4.1's mpirun does not pass the signal on: it signals the
  ranks 1 s later (odls_base_sigkill_timeout) and kills them 1 s after that, and exits 1 itself,
  so only a non-zero status is asked for.

What runs (`mode`):
- `long`: one case of 100,000,000 calls per sample, which would run for hours. It does not end
  within the runner's 0.5 s grace after the signal, so rank 0 writes it as one failed row whose
  note starts with `interrupted:` and names the signal and Slurm's SIGTERM-then-SIGKILL; the job
  ends within 15 s of the signal.
- `short` (bench_ccl only): a sweep of short cases. The case the signal catches ends within the
  grace: every row is a whole, ok row (none `interrupted:`, no case twice), and the run stops
  between cases, as before the grace existed.

Usage: check_interrupt_collective.py MPIEXEC BENCH OUT_DIR ccl|fsdp long|short ranks|mpirun
       [SIGTERM|SIGINT]
"""
import csv
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time

SIGNAL_AFTER = 3  # seconds after the rank table, well inside the first (long) case
EXIT_WITHIN = 15  # seconds after the signal: the grace, rank 0's row, mpirun's teardown


def command(mpiexec, bench, out, tool, mode):
    cmd = [mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", "2", bench, "--backend", "mpi",
           "--quiet", "--report-dir-path", out]
    if tool == "fsdp":  # the tiny model's first all-gather, 100 M calls per sample
        return cmd + ["--model", "tiny", "-n", "100000000"]
    if mode == "long":
        return cmd + ["--op", "all_reduce", "-b", "8", "-e", "8", "-n", "100000000"]
    # 41 sizes x 2 placements of about 0.1 s each: the signal lands inside one of them, which
    # then ends well within the grace.
    return cmd + ["--op", "all_reduce", "-b", "1K", "-e", "1M", "-i", "25K", "--min-time", "0.05",
                  "--max-time", "0.1"]


def rows_of(out):
    """(file, row) for every row of every report CSV (the plan, if any, left out)."""
    found = []
    for path in sorted(glob.glob(os.path.join(out, "*.csv"))):
        if os.path.basename(path) == "plan.csv":
            continue
        with open(path, newline="") as f:
            found += [(os.path.basename(path), row) for row in csv.DictReader(f)]
    return found


def main() -> int:
    mpiexec, bench, out, tool, mode, to = sys.argv[1:7]
    sig = getattr(signal, sys.argv[7] if len(sys.argv) > 7 else "SIGTERM")
    shutil.rmtree(out, ignore_errors=True)
    cmd = command(mpiexec, bench, out, tool, mode)
    print("$ " + " ".join(cmd), flush=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    pids = []
    for line in proc.stdout:  # rank 0 prints the rank table, with pids, once every rank is up
        m = re.match(r"#\s+Rank\s+(\d+) .*Pid\s+(\d+)", line)
        if m:
            pids.append(int(m.group(2)))
        if len(pids) == 2:
            break
    time.sleep(SIGNAL_AFTER)
    if to == "mpirun":
        proc.send_signal(sig)
    else:
        for pid in pids:
            os.kill(pid, sig)
    struck = time.monotonic()
    try:
        stdout, err = proc.communicate(timeout=EXIT_WITHIN)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, err = proc.communicate()
        print(f"FAIL: still running {EXIT_WITHIN} s after {sig.name}; stderr:\n{err}")
        return 1
    took = time.monotonic() - struck
    print(f"exit {proc.returncode} {took:.1f} s after {sig.name} to {to}")
    for line in err.splitlines()[-8:]:
        print("  | " + line)

    problems = []
    if proc.returncode == 0:
        problems.append(f"exit 0 after {sig.name}")
    if to == "ranks" and proc.returncode != 128 + sig:
        problems.append(f"exit {proc.returncode}, expected mpirun to pass on the ranks' {128 + sig}")
    rows = rows_of(out)
    interrupted = [(f, r) for f, r in rows if r.get("note", "").startswith("interrupted:")]
    if mode == "long":
        if not interrupted:
            problems.append(f"no row with a note starting 'interrupted:' in {out}: {rows}")
        for f, r in interrupted:
            note = r["note"]
            print(f"{f}: status {r['status']}: {note}")
            if r["status"] != "failed":
                problems.append(f"{f}: the interrupted row's status is {r['status']!r}, not failed")
            for needed in (sig.name, "s into the case", "Slurm", "SIGKILL"):
                if needed not in note:
                    problems.append(f"{f}: the note lacks {needed!r}")
        if tool == "ccl" and len(rows) != 1:
            problems.append(f"{len(rows)} rows for the one case, expected 1: {rows}")
    else:
        if interrupted:
            problems.append(f"a short case was written as interrupted: {interrupted}")
        bad = [r for _, r in rows if r.get("status") != "ok"]
        if not rows or bad:
            problems.append(f"expected whole ok rows only, got {len(rows)} rows, not ok: {bad}")
        cases = [(r.get("size_bytes"), r.get("placement")) for _, r in rows]
        if len(cases) != len(set(cases)):
            problems.append(f"a case has two rows: {cases}")
        print(f"{len(rows)} ok rows, the run stopped between cases")
    if problems:
        print("FAIL:\n" + "\n".join("  " + p for p in problems))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
