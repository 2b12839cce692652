#!/usr/bin/env python3
"""Kills (SIGKILL) or stops (SIGSTOP) one rank of a real 3-rank bench_ccl job inside its timed
samples and checks that the others do not hang: the whole job ends, with a non-zero exit, well
within its limit, and an error line names the culprit with its host, not only "a rank stopped
inside the operation or a link failed":

  kill:  rank 2 is killed; rank 0 says "ended without finishing" at once, over the liveness channel.
  stop:  rank 2 is stopped; when --timeout fires, rank 0 names it: "does not answer rank 0".
  stop_long: the same inside a sample of 100,000 calls (minutes of work): the guard acts on
         progress, so the job must end within --timeout + the probe + 10 s of the stop, not once
         the sample's time has passed (issue 42 item 1: 554 s with -n 3000).
  relay: rank 2 is stopped and rank 1's watchdog expires first (--test-lead-rank 1, as happens in
         a real job when one long sample's deadlines differ between ranks): rank 1 asks rank 0 to
         probe, and its line names rank 2 ("does not answer rank 0") and how long the case had run.
  rank0: rank 0 itself is stopped; rank 1 gets no reply from it and names rank 0 ("does not
         answer rank 1").

Except with rank0 stopped, the report's last row is the running case, failed, with the reason.

Usage: check_rank_fault.py MPIEXEC BENCH_CCL OUT_DIR kill|stop|stop_long|relay|rank0
"""
import csv
import os
import re
import signal
import subprocess
import sys
import time

from report_check import verdict

LONG_SAMPLE_BOUND = 16  # stop_long: --timeout 3 s, the liveness probe's 3 s, 10 s for mpirun and a loaded machine

# mode: (victim rank, signal, bench_ccl's own flags, the reason the error line gives)
MODES = {
    "kill": (2, signal.SIGKILL, ["-b", "1M", "-e", "1M", "-n", "2000", "--timeout", "60"], "ended without finishing"),
    "stop": (2, signal.SIGSTOP, ["-b", "1M", "-e", "1M", "-n", "100", "--timeout", "3"], "does not answer rank 0"),
    "stop_long": (2, signal.SIGSTOP, ["-b", "1M", "-e", "1M", "-n", "100000", "--timeout", "3"],
                  "does not answer rank 0"),
    "relay": (2, signal.SIGSTOP, ["-b", "64K", "-e", "64K", "-n", "20", "--timeout", "2", "--test-lead-rank", "1"],
              "does not answer rank 0"),
    "rank0": (0, signal.SIGSTOP, ["-b", "64K", "-e", "64K", "-n", "20", "--timeout", "2", "--test-lead-rank", "1"],
              "does not answer rank 1"),
}


def error_line(mode, err, victim_rank, said):
    """The line that must name the culprit: rank 1's timeout line where rank 1 speaks first, else
    any error line naming the victim with the reason."""
    if mode in ("relay", "rank0"):
        return next((l for l in err.splitlines() if l.startswith("error: timeout: rank 1 (")), None)
    return next((l for l in err.splitlines()
                 if l.startswith("error:") and f"rank {victim_rank} (" in l and said in l), None)


def main() -> int:
    mpiexec, bench, out, mode = sys.argv[1:5]
    victim_rank, sig, flags, said = MODES[mode]
    # A case of minutes in short samples, however fast the ranks are: the collective profile's
    # 100 samples alone can end a 64 KiB case in 0.2 s, before the signal.
    cmd = [mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", "3", bench, "--backend", "mpi", "--quiet",
           "--op", "all_reduce", "--min-samples", "100000", "--max-samples", "100000", "--max-time", "600",
           "--report-dir-path", out] + flags
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
    time.sleep(0.5)  # let the timed samples start
    os.kill(victim, sig)
    struck = time.time()
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        print(f"the job was still running 30 s after rank {victim_rank} got {sig.name}")
        return 1
    finally:
        try:
            os.kill(victim, signal.SIGKILL)  # never leave a stopped process behind
        except ProcessLookupError:
            pass
    elapsed = time.time() - struck
    problems = []
    if mode == "stop_long" and elapsed > LONG_SAMPLE_BOUND:
        problems.append(f"the job ended {elapsed:.1f} s after the stop, more than {LONG_SAMPLE_BOUND} s "
                        "(--timeout 3 + the probe's 3 + 10): the guard waited for the sample, not for progress")
    if proc.returncode == 0:
        problems.append(f"the job exited 0 although rank {victim_rank} got {sig.name}")
    first = error_line(mode, err, victim_rank, said)
    if first is None or f"rank {victim_rank} (" not in first or said not in first:
        problems.append(f"no error line names rank {victim_rank} and its host with {said!r}:\n{err}")
    elif mode in ("relay", "rank0") and not re.search(r"; the case had run [\d.]+ s", first):
        problems.append(f"rank 1's timeout line does not say how long the case had run: {first}")
    if "a rank stopped inside the operation or a link failed" in err:
        problems.append(f"a rank still says only that a rank stopped:\n{err}")
    if mode != "rank0":
        csv_path = os.path.join(out, "ccl_all_reduce.csv")
        last = list(csv.DictReader(open(csv_path, newline="")))[-1:] if os.path.exists(csv_path) else []
        if not last or last[0]["status"] != "failed" or said not in last[0]["note"]:
            problems.append(f"{csv_path}: the last row is not the running case, failed, with the reason: {last}")
    return verdict(problems, None, f"ok: the job ended {elapsed:.1f} s after rank {victim_rank} got {sig.name}, exit {proc.returncode}: {first}")


if __name__ == "__main__":
    sys.exit(main())
