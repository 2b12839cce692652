#!/usr/bin/env python3
"""SIGTERM (or SIGINT), as a Slurm time limit or a Ctrl-C sends it, while a 2-rank bench_ccl or
bench_fsdp runs under mpirun, must end the job within seconds and leave the running case in the
report.

Where the signal goes (`to`):
- `ranks`: to every rank, as Slurm delivers it to the tasks of an srun step. The job must end
  with 128 + the signal number (mpirun passes on the first non-zero status of a rank).
- `mpirun`: to mpirun alone. Open MPI 4.1's mpirun sends the ranks SIGCONT at once, SIGTERM 1 s
  later (odls_base_sigkill_timeout) and SIGKILL 1 s after that (SIGTERM whatever signal it got),
  and exits 1 itself, so only a non-zero status is asked for.
- `mpirun-twice`: to mpirun, and again 0.2 s later: a second signal within 5 s makes mpirun exit
  at once, passing nothing on, and the ranks are SIGKILLed about 1 s later; the ranks must take
  their launcher's end for the interrupt (its stderr is gone: the files must tell).
- `timeout`: the job under `timeout -s SIGNAL 8` (the README's `timeout 60 mpirun ...`), which
  signals mpirun and then its process group, so either of the two above may happen.

Every run must be closed whichever way it ends (issue 42 item 5): environment.json has its
end_time and an `outcome` starting `interrupted`, and --summary-path's page is written; where
mpirun still forwards the ranks' stderr (`ranks`, `mpirun`), the closing `interrupted after` line
is there too. The files are read once every rank has ended.

What runs (`mode`):
- `long`: one case of 100,000,000 calls per sample, which would run for hours. It does not end
  within the runner's 0.5 s grace after the signal, so rank 0 writes it as one failed row whose
  note starts with `interrupted:` and names the signal and Slurm's SIGTERM-then-SIGKILL; the job
  ends within 15 s of the signal.
- `short` (bench_ccl only): a sweep of short cases. The case the signal catches ends within the
  grace: every row is a whole, ok row (none `interrupted:`, no case twice), and the run stops
  between cases, as before the grace existed.
- `held` (bench_ccl only): two short cases, rank 1 held after the first (--test-stall-at between,
  as a rank lost between two cases would be), so the signal finds rank 0 waiting in the ranks'
  agreement to start the second. That wait is timed by --timeout (300 s here), but the signal
  must not wait for it: the first case's ok row, then the second as one failed `interrupted:`
  row, and the job ends within 15 s of the signal.

Usage: check_interrupt_collective.py MPIEXEC BENCH OUT_DIR ccl|fsdp long|short|held
       ranks|mpirun|mpirun-twice|timeout [SIGTERM|SIGINT]
"""
import csv
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

SIGNAL_AFTER = 3  # seconds after the rank table, well inside the first (long) case
TIMEOUT_AFTER = 8  # `timeout` mode: seconds after the start (the rank table comes in 1-3 s)
EXIT_WITHIN = 15  # seconds after the signal: the grace, rank 0's row, mpirun's teardown
RANKS_END_WITHIN = 5  # seconds after mpirun: ranks whose launcher ended at once are killed in ~1


def command(mpiexec, bench, out, tool, mode):
    cmd = [mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", "2", bench, "--backend", "mpi",
           "--quiet", "--report-dir-path", out, "--summary-path", os.path.join(out, "summary.md")]
    if tool == "fsdp":  # the tiny model's first all-gather, 100 M calls per sample
        return cmd + ["--model", "tiny", "-n", "100000000"]
    if mode == "long":
        return cmd + ["--op", "all_reduce", "-b", "8", "-e", "8", "-n", "100000000"]
    if mode == "held":  # out of place, then in place: rank 1 sleeps between the two
        return cmd + ["--op", "all_reduce", "-b", "8", "-e", "8", "--test-stall-rank", "1", "--test-stall-at",
                      "between", "--test-stall-seconds", "600"]
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


def zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def closing_problems(out, err, to):
    """What the run's close left out: environment.json's end_time and outcome, the summary page,
    and the closing line where mpirun still forwarded stderr."""
    problems = []
    env_path = os.path.join(out, "environment.json")
    env = json.load(open(env_path)) if os.path.exists(env_path) else {}
    if not env.get("end_time"):
        problems.append(f"{env_path}: no end_time: {env.get('end_time')!r}")
    if not str(env.get("outcome")).startswith("interrupted"):
        problems.append(f"{env_path}: outcome {env.get('outcome')!r}, expected 'interrupted: ...'")
    if not os.path.exists(os.path.join(out, "summary.md")):
        problems.append("no summary.md (--summary-path)")
    if to in ("ranks", "mpirun") and "interrupted after" not in err:
        problems.append("no closing 'interrupted after ... cases' line on stderr")
    return problems


def main() -> int:
    mpiexec, bench, out, tool, mode, to = sys.argv[1:7]
    sig = getattr(signal, sys.argv[7] if len(sys.argv) > 7 else "SIGTERM")
    shutil.rmtree(out, ignore_errors=True)
    cmd = command(mpiexec, bench, out, tool, mode)
    if to == "timeout":
        cmd = ["timeout", "-s", sig.name, str(TIMEOUT_AFTER)] + cmd
    print("$ " + " ".join(cmd), flush=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    pids = []
    for line in proc.stdout:  # rank 0 prints the rank table, with pids, once every rank is up
        m = re.match(r"#\s+Rank\s+(\d+) .*Pid\s+(\d+)", line)
        if m:
            pids.append(int(m.group(2)))
        if len(pids) == 2:
            break
    if to == "timeout":
        time.sleep(max(0.0, TIMEOUT_AFTER - (time.monotonic() - started)))
    else:
        time.sleep(SIGNAL_AFTER)
    if to in ("mpirun", "mpirun-twice"):
        proc.send_signal(sig)
        if to == "mpirun-twice":
            time.sleep(0.2)
            proc.send_signal(sig)
    elif to == "ranks":
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
    # A rank whose mpirun ended at once still writes its files until it is killed.
    deadline = time.monotonic() + RANKS_END_WITHIN
    while any(os.path.exists(f"/proc/{pid}") and not zombie(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)

    problems = closing_problems(out, err, to)
    if proc.returncode == 0:
        problems.append(f"exit 0 after {sig.name}")
    if to == "ranks" and proc.returncode != 128 + sig:
        problems.append(f"exit {proc.returncode}, expected mpirun to pass on the ranks' {128 + sig}")
    rows = rows_of(out)
    interrupted = [(f, r) for f, r in rows if r.get("note", "").startswith("interrupted:")]
    if mode in ("long", "held"):
        if not interrupted:
            problems.append(f"no row with a note starting 'interrupted:' in {out}: {rows}")
        for f, r in interrupted:
            note = r["note"]
            print(f"{f}: status {r['status']}: {note}")
            if r["status"] != "failed":
                problems.append(f"{f}: the interrupted row's status is {r['status']!r}, not failed")
            # mpirun passes on SIGTERM whatever it got; ended at once, it passes nothing on
            causes = {"ranks": [sig.name], "mpirun": ["SIGTERM"], "mpirun-twice": ["the end of its launcher"],
                      "timeout": ["SIGTERM", "the end of its launcher"]}[to]
            if not any(note.startswith(f"interrupted: {c}") for c in causes):
                problems.append(f"{f}: the note does not start with 'interrupted: ' and one of {causes}")
            for needed in ("s into the case", "mpirun", "scheduler", "Slurm", "SIGKILL"):
                if needed not in note:
                    problems.append(f"{f}: the note lacks {needed!r}")
        if mode == "long" and tool == "ccl" and len(rows) != 1:
            problems.append(f"{len(rows)} rows for the one case, expected 1: {rows}")
        if mode == "held" and [r.get("status") for _, r in rows] != ["ok", "failed"]:
            problems.append(f"expected the first case's ok row and the second's interrupted row, got "
                            f"{[(r.get('placement'), r.get('status')) for _, r in rows]}")
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
