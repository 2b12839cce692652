#!/usr/bin/env python3
"""Kills (SIGKILL) or stops (SIGSTOP) rank 2 of a real 3-rank bench_ccl job mid-run and checks
that the others do not hang: the whole job ends, with a non-zero exit, well within the time
limit, and rank 0's error line names the culprit with its host — "ended without finishing" for a
killed rank (at once, over the liveness channel), "does not answer rank 0" for a stopped one
(when --timeout fires) — and the report's last row is the running case, failed, with that reason.

Usage: check_rank_killed.py MPIEXEC BENCH_CCL OUT_DIR [KILL|STOP]
"""
import csv
import re
import signal
import subprocess
import sys
import time
import os


def main() -> int:
    mpiexec, bench, out = sys.argv[1], sys.argv[2], sys.argv[3]
    how = sys.argv[4] if len(sys.argv) > 4 else "KILL"
    timeout = "60" if how == "KILL" else "3"  # a killed rank is seen at once; a stopped one at --timeout
    cmd = [mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", "3", bench, "--backend", "mpi", "--quiet",
           "-b", "1M", "-e", "1M", "-n", "2000" if how == "KILL" else "100", "--op", "all_reduce", "--timeout", timeout,
           "--report-dir-path", out]
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
    os.kill(victim, signal.SIGKILL if how == "KILL" else signal.SIGSTOP)
    struck = time.time()
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        print(f"the job was still running 30 s after rank 2 got SIG{how}")
        return 1
    finally:
        if how == "STOP":  # never leave a stopped process behind
            try:
                os.kill(victim, signal.SIGKILL)
            except ProcessLookupError:
                pass
    elapsed = time.time() - struck
    problems = []
    if proc.returncode == 0:
        problems.append(f"the job exited 0 although rank 2 got SIG{how}")
    said = "ended without finishing" if how == "KILL" else "does not answer rank 0"
    line = next((l for l in err.splitlines() if l.startswith("error:") and "rank 2 (" in l and said in l), None)
    if line is None:
        problems.append(f"no error line names rank 2 and its host with {said!r}:\n{err}")
    csv_path = os.path.join(out, "ccl_all_reduce.csv")
    last = list(csv.DictReader(open(csv_path, newline="")))[-1:] if os.path.exists(csv_path) else []
    if not last or last[0]["status"] != "failed" or said not in last[0]["note"]:
        problems.append(f"{csv_path}: the last row is not the running case, failed, with the reason: {last}")
    if problems:
        print("\n".join(problems))
        return 1
    print(f"ok: the job ended {elapsed:.1f} s after rank 2 got SIG{how}, exit {proc.returncode}: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
