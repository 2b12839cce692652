#!/usr/bin/env python3
"""Stops (SIGSTOP) one rank of a real 3-rank bench_ccl job inside its timed sample, with the
watchdog of rank 1 made to expire first (--test-lead-rank 1, as happens in a real job when one
long sample's deadlines differ between ranks), and checks that the first rank whose deadline
expires names the stopped rank with its host and says how long the case had run, before the job
ends — not only "a rank stopped inside the operation or a link failed":

  relay: rank 2 is stopped; rank 1 asks rank 0 to probe, and its line names rank 2 ("does not
         answer rank 0"); rank 0 repeats the reason and the report's last row carries it.
  rank0: rank 0 itself is stopped; rank 1 gets no reply from it and names rank 0 ("does not
         answer rank 1").

Usage: check_stopped_rank_named.py MPIEXEC BENCH_CCL OUT_DIR relay|rank0
"""
import csv
import os
import re
import signal
import subprocess
import sys
import time


def main() -> int:
    mpiexec, bench, out, mode = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    victim_rank = 2 if mode == "relay" else 0
    cmd = [mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", "3", bench, "--backend", "mpi", "--quiet",
           "-b", "64K", "-e", "64K", "-n", "20", "--op", "all_reduce", "--timeout", "2",
           # A case of minutes in short samples, however fast the ranks are: --min-time alone
           # ended at the profile's 100 samples (0.2 s on a quiet machine), before the SIGSTOP.
           "--min-samples", "100000", "--max-samples", "100000", "--max-time", "600",
           "--test-lead-rank", "1", "--report-dir-path", out]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    victim = None
    for line in proc.stdout:  # rank 0 prints every rank's pid first
        m = re.match(rf"#\s+Rank\s+{victim_rank} Group\s+\d+ Pid\s+(\d+)", line)
        if m:
            victim = int(m.group(1))
            break
    if victim is None:
        proc.kill()
        print(f"no pid of rank {victim_rank} in the rank table")
        return 1
    time.sleep(0.5)  # let the timed sample start
    os.kill(victim, signal.SIGSTOP)
    struck = time.time()
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        print(f"the job was still running 30 s after rank {victim_rank} got SIGSTOP")
        return 1
    finally:
        try:
            os.kill(victim, signal.SIGKILL)  # never leave a stopped process behind
        except ProcessLookupError:
            pass
    elapsed = time.time() - struck
    problems = []
    if proc.returncode == 0:
        problems.append("the job exited 0 although a rank was stopped")
    said = "rank 2 (" if mode == "relay" else "rank 0 ("
    answer = "does not answer rank 0" if mode == "relay" else "does not answer rank 1"
    first = next((l for l in err.splitlines() if l.startswith("error: timeout: rank 1 (")), None)
    if first is None or said not in first or answer not in first:
        problems.append(f"rank 1's timeout line does not name {said}...) with {answer!r}:\n{err}")
    elif not re.search(r"; the case had run [\d.]+ s", first):
        problems.append(f"rank 1's timeout line does not say how long the case had run: {first}")
    if "a rank stopped inside the operation or a link failed" in err:
        problems.append(f"a rank still says only that a rank stopped:\n{err}")
    if mode == "relay":
        csv_path = os.path.join(out, "ccl_all_reduce.csv")
        last = list(csv.DictReader(open(csv_path, newline="")))[-1:] if os.path.exists(csv_path) else []
        if not last or last[0]["status"] != "failed" or answer not in last[0]["note"]:
            problems.append(f"{csv_path}: the last row is not the running case, failed, with the reason: {last}")
    if problems:
        print("\n".join(problems))
        return 1
    print(f"ok: the job ended {elapsed:.1f} s after rank {victim_rank} got SIGSTOP, exit {proc.returncode}: {first}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
