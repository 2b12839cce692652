#!/usr/bin/env python3
"""Kills one rank of a real bench_ccl job with SIGKILL mid-run and checks that the others do not
hang: the whole job ends, with a non-zero exit, well within the time limit.

Usage: check_rank_killed.py MPIEXEC BENCH_CCL
"""
import re
import signal
import subprocess
import sys
import time
import os


def main() -> int:
    mpiexec, bench = sys.argv[1], sys.argv[2]
    cmd = [mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", "3", bench, "--backend", "mpi", "--quiet",
           "-b", "1M", "-e", "1M", "-n", "2000", "--op", "all_reduce", "--timeout", "60",
           "--report-dir-path", sys.argv[3]]
    start = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    victim = None
    for line in proc.stdout:  # rank 0 prints every rank's pid first
        m = re.match(r"#\s+Rank\s+2 Group\s+\d+ Pid\s+(\d+)", line)
        if m:
            victim = int(m.group(1))
            break
    if victim is None:
        print("no pid of rank 2 in the rank table")
        return 1
    time.sleep(0.5)  # let the timed loop start
    os.kill(victim, signal.SIGKILL)
    try:
        proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        print("the job was still running 30 s after rank 2 was killed")
        return 1
    elapsed = time.time() - start
    if proc.returncode == 0:
        print("the job exited 0 although a rank was killed")
        return 1
    print(f"ok: the job ended {elapsed:.1f} s after start with exit {proc.returncode} once rank 2 was killed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
