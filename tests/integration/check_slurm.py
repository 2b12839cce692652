#!/usr/bin/env python3
"""bench_ccl launched by Slurm's srun with PMIx, no mpirun: how most GPU clusters start a job.

A throwaway single-node Slurm cluster is made on this machine, apart from any other: a private
munged (its own key and socket) and slurmctld + slurmd run in the foreground from a slurm.conf
in a temp dir, on free ports; every Slurm command gets SLURM_CONF pointing at it (/etc/slurm is
not read or touched), and inherited SLURM_* variables (a ctest run inside a Slurm job) are
dropped. Then:

1. `srun --mpi=pmix -n 2 bench_ccl --backend mpi ...` must exit 0; OUT/pmix/ccl_all_reduce.csv
   has rows, every one world_size 2 and status ok (two singletons would say 1); environment.json
   has 2 `ranks` where it has that key, and the SLURM_ variables of the step. Its `launcher` is
   printed: under srun the parent of a rank is slurmstepd, so null is expected.
2. (unless --no-time-limit) `srun --time=1` ends a bench_ccl (one rank) that would sample for
   10 minutes: the job must end non-zero after at least 55 s, stopped by Slurm for its time limit (srun says
   so and scontrol shows JobState=TIMEOUT), and OUT/time_limit/ccl_all_reduce.csv must hold the
   case that was running as a failed row whose note starts with `interrupted:` (bench_ccl writes
   it on Slurm's SIGTERM, before the SIGKILL that follows KillWait, 2 s in this cluster, later).
   Slurm counts limits in whole minutes and its controller looks at them every 30 s from its
   start, so the kill comes about 90 s after the cluster starts: this part takes most of the
   test's time.

The daemons, every process they started (found by a marker variable in their environment) and
the temp dir are removed at the end, even on failure; the daemon logs are copied to OUT/logs.
Exit 77 (ctest: skipped), with `SKIP: reason`, where the cluster cannot be made: not root,
Slurm or munge not installed, no PMIx plugin, munged or the daemons not coming up.

Usage: check_slurm.py --bench-ccl PATH --out DIR [--no-time-limit] [--keep]
"""
import argparse
import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from lowest_priority import lowest_command

SKIP = 77
TOOLS = ["munged", "munge", "unmunge", "slurmctld", "slurmd", "srun", "sinfo", "scontrol", "scancel"]
MARKER = "OPBENCH_SLURM_TEST"   # set in the environment of everything started here, with the temp dir
UP_LIMIT = 60                   # seconds for munged and the node to come up
PMIX_LIMIT = 60                 # the srun of part 1 is killed after this many seconds
TIME_LIMIT_MIN = 1              # srun --time of part 2, minutes
TIME_LIMIT_KILL = 120           # the srun of part 2 is killed after this many seconds: a failure
OVERALL = 230                   # the script gives up, cleaning up, after this (ctest TIMEOUT is above)


class Skip(Exception):
    pass


class Fail(Exception):
    pass


class Terminated(Exception):
    pass


def log(msg=""):
    print(msg, flush=True)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path, lines=15):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return f"({path} not readable)\n"


class Cluster:
    """munged, slurmctld and slurmd of a one-node cluster, all under one temp dir."""

    def __init__(self, keep):
        self.keep = keep
        self.dir = tempfile.mkdtemp(prefix="opbench-slurm-")
        os.chmod(self.dir, 0o700)
        self.node = socket.gethostname().split(".")[0]
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.socket = os.path.join(self.dir, "munge", "munge.socket.2")
        self.procs = {}  # name -> Popen
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        self.env.update({"SLURM_CONF": self.conf, MARKER: self.dir,
                         "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def run(self, cmd, timeout=20):
        try:
            return subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Fail(f"{' '.join(cmd)}: no answer in {timeout} s")

    def spawn(self, name, cmd):
        out = open(self.path(f"{name}.out"), "w")
        self.procs[name] = subprocess.Popen(cmd, env=self.env, stdin=subprocess.DEVNULL, stdout=out,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        out.close()

    def dead(self, name):
        """None while the daemon runs, else why it stopped with the end of its logs."""
        rc = self.procs[name].poll()
        if rc is None:
            return None
        return (f"{name} exited with {rc}:\n" + tail(self.path(f"{name}.out")) +
                (tail(self.path(f"{name}.log")) if os.path.exists(self.path(f"{name}.log")) else ""))

    def start_munge(self):
        os.makedirs(self.path("munge"), mode=0o700)
        key = self.path("munge", "munge.key")
        with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400), "wb") as f:
            f.write(os.urandom(1024))
        self.spawn("munged", ["munged", "--foreground", "--force", f"--socket={self.socket}",
                              f"--key-file={key}", f"--pid-file={self.path('munge', 'munged.pid')}",
                              f"--log-file={self.path('munged.log')}",
                              f"--seed-file={self.path('munge', 'munged.seed')}"])
        deadline = time.monotonic() + UP_LIMIT
        while True:
            why = self.dead("munged")
            if why:
                raise Skip(f"munged did not start: {why}")
            if os.path.exists(self.socket):
                cred = self.run(["munge", "-n", "-S", self.socket])
                if cred.returncode == 0:
                    try:
                        back = subprocess.run(["unmunge", "-S", self.socket], input=cred.stdout,
                                              capture_output=True, text=True, timeout=20)
                    except subprocess.TimeoutExpired:
                        raise Skip("munged: unmunge got no answer in 20 s")
                    if back.returncode == 0:
                        return
                    raise Skip(f"munged: a credential does not decode: {back.stderr.strip()}")
            if time.monotonic() > deadline:
                raise Skip(f"munged: no working socket at {self.socket} after {UP_LIMIT} s")
            time.sleep(0.2)

    def write_conf(self):
        for sub in ("state", "spool", "tmp"):
            os.makedirs(self.path(sub), mode=0o700)
        cpus = max(2, os.cpu_count() or 1)  # config_overrides: Slurm takes these over the hardware
        conf = {
            "ClusterName": "opbench",
            "SlurmctldHost": f"{self.node}(127.0.0.1)",
            "SlurmctldPort": free_port(),
            "SlurmdPort": free_port(),
            "SlurmUser": "root",
            "SlurmdUser": "root",
            "AuthType": "auth/munge",
            "CredType": "cred/munge",
            "AuthInfo": f"socket={self.socket}",
            "StateSaveLocation": self.path("state"),
            "SlurmdSpoolDir": self.path("spool"),
            "TmpFS": self.path("tmp"),  # the PMIx plugin's per-job dirs
            "MailProg": "/bin/true",
            "SlurmctldPidFile": self.path("slurmctld.pid"),
            "SlurmdPidFile": self.path("slurmd.pid"),
            "SlurmctldLogFile": self.path("slurmctld.log"),
            "SlurmdLogFile": self.path("slurmd.log"),
            "SlurmctldDebug": "info",
            "SlurmdDebug": "info",
            "ProctrackType": "proctrack/linuxproc",
            "TaskPlugin": "task/none",
            "JobAcctGatherType": "jobacct_gather/none",
            "AccountingStorageType": "accounting_storage/none",
            "JobCompType": "jobcomp/none",
            "SelectType": "select/cons_tres",
            "SelectTypeParameters": "CR_Core",
            "SchedulerType": "sched/builtin",
            "MpiDefault": "pmix",
            "ReturnToService": 2,
            "SlurmdParameters": "config_overrides",
            "KillWait": 2,
            "InactiveLimit": 0,
            "MinJobAge": 300,
        }
        lines = [f"{k}={v}" for k, v in conf.items()] + [
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1000 State=UNKNOWN",
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
        ]
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")

    def start_slurm(self):
        self.spawn("slurmctld", ["slurmctld", "-D", "-c", "-f", self.conf])
        self.started = time.monotonic()
        self.spawn("slurmd", ["slurmd", "-D", "-N", self.node, "-f", self.conf])
        deadline = time.monotonic() + UP_LIMIT
        state = ""
        while time.monotonic() < deadline:
            for name in ("slurmctld", "slurmd"):
                why = self.dead(name)
                if why:
                    raise Skip(f"{why}")
            p = self.run(["sinfo", "-h", "-N", "-o", "%N %T"])
            state = (p.stdout + p.stderr).strip()
            if p.returncode == 0 and state.split()[-1:] == ["idle"]:
                return
            time.sleep(0.5)
        raise Skip(f"node {self.node} not idle after {UP_LIMIT} s (sinfo: {state!r}); slurmd.log:\n"
                   + tail(self.path("slurmd.log")))

    def marked_pids(self):
        """Processes started here (the daemons, slurmstepd, the ranks): the marker in their environment."""
        needle = f"{MARKER}={self.dir}".encode()
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if needle in f.read().split(b"\0"):
                        pids.append(int(entry))
            except OSError:
                pass
        return pids

    def stop(self, logs_to):
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            try:
                self.run(["scancel", "--quiet", "--user", "root"], timeout=10)
                deadline = time.monotonic() + 15
                while time.monotonic() < deadline:
                    q = self.run(["squeue", "-h", "-o", "%i"], timeout=10)
                    if q.returncode != 0 or not q.stdout.strip():
                        break
                    time.sleep(0.5)
            except Fail as e:
                log(f"cleanup: {e}")
        for name in ("slurmd", "slurmctld", "munged"):
            p = self.procs.get(name)
            if p and p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=10)
        for sig, wait in ((signal.SIGTERM, 3), (signal.SIGKILL, 3)):
            pids = self.marked_pids()
            if not pids:
                break
            log(f"cleanup: {len(pids)} leftover processes (pids {pids}), {signal.Signals(sig).name}")
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and self.marked_pids():
                time.sleep(0.2)
        if logs_to:
            os.makedirs(logs_to, exist_ok=True)
            for name in ("slurm.conf", "munged.log", "slurmctld.log", "slurmd.log",
                         "munged.out", "slurmctld.out", "slurmd.out"):
                if os.path.exists(self.path(name)):
                    shutil.copy(self.path(name), logs_to)
        if self.keep:
            log(f"kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


def check_prerequisites():
    if os.geteuid() != 0:
        raise Skip("not root: the test cluster runs slurmd, slurmctld and munged as root (SlurmUser=root)")
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing:
        raise Skip(f"not installed: {', '.join(missing)} (Debian: munge slurmctld slurmd slurm-client "
                   "slurm-wlm-basic-plugins; scripts/setup.sh installs them)")


def srun(cluster, args, limit):
    """Runs srun ARGS, killed after LIMIT seconds; returns (returncode or None, stdout, stderr, seconds)."""
    cmd = ["srun"] + args
    log("$ " + " ".join(cmd))
    start = time.monotonic()
    p = subprocess.Popen(cmd, env=cluster.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=limit)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate(timeout=10)
        rc = None
    except BaseException:  # stopped by a signal: srun goes first, then the cleanup cancels its job
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
        raise
    took = time.monotonic() - start
    for line in (out + err).splitlines()[-20:]:
        log("  | " + line)
    return rc, out, err, took


def check_pmix(cluster, bench, out):
    """Part 1: a 2-rank job started by srun --mpi=pmix; the problems found."""
    report = os.path.join(out, "pmix")
    rc, _, err, took = srun(cluster, [
        "--mpi=pmix", "-n", "2", "--time=2", "--job-name=opbench-pmix",
        bench, "--backend", "mpi", "--op", "all_reduce", "-b", "1K", "-e", "64K", "-f", "8",
        "-n", "5", "-w", "1", "--max-time", "0.2", "--report-dir-path", report, "--quiet"], PMIX_LIMIT)
    log(f"part 1: exit {rc} after {took:.1f} s")
    problems = []
    if rc is None:
        return [f"srun --mpi=pmix still running after {PMIX_LIMIT} s, killed"]
    if rc != 0:
        problems.append(f"srun --mpi=pmix exited {rc}")
    path = os.path.join(report, "ccl_all_reduce.csv")
    rows = list(csv.DictReader(open(path, newline=""))) if os.path.exists(path) else []
    if not rows:
        problems.append(f"{path}: missing or no rows")
    for i, row in enumerate(rows):
        if row.get("world_size") != "2" or row.get("status") != "ok":
            problems.append(f"{path} row {i + 1}: world_size {row.get('world_size')!r}, "
                            f"status {row.get('status')!r} (note {row.get('note')!r}); expected 2, ok")
    log(f"part 1: {len(rows)} rows in {path}")
    env_path = os.path.join(report, "environment.json")
    try:
        with open(env_path) as f:
            env = json.load(f)
    except (OSError, ValueError) as e:
        problems.append(f"{env_path}: {e}")
        return problems
    log(f"part 1: environment.json launcher: {json.dumps(env.get('launcher'))}"
        " (null expected: the parent of a rank is slurmstepd)")
    if "ranks" in env:
        ranks = env["ranks"]
        log(f"part 1: environment.json ranks: {json.dumps(ranks)}")
        if len(ranks) != 2:
            problems.append(f"{env_path}: {len(ranks)} entries in ranks, expected 2")
    else:
        log("part 1: environment.json has no 'ranks' key (not checked)")
    slurm = {k: v for k, v in env.get("env", {}).items() if k.startswith("SLURM_")}
    for name in ("SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_NTASKS"):
        if name not in slurm:
            problems.append(f"{env_path}: env lacks {name}: not started by srun?")
    log(f"part 1: SLURM_JOB_ID {slurm.get('SLURM_JOB_ID')}, SLURM_NTASKS {slurm.get('SLURM_NTASKS')}, "
        f"SLURM_MPI_TYPE {slurm.get('SLURM_MPI_TYPE')}")
    if slurm.get("SLURM_NTASKS", "2") != "2":
        problems.append(f"{env_path}: SLURM_NTASKS {slurm['SLURM_NTASKS']}, expected 2")
    return problems


def check_time_limit(cluster, bench, out):
    """Part 2: srun --time ends a job that would run for 10 minutes; the problems found."""
    report = os.path.join(out, "time_limit")
    name = "opbench-time-limit"
    rc, _, err, took = srun(cluster, [
        # One rank: the limit is the job's, and a second rank spinning for the ~90 s the test
        # waits would take the other core from the tests running beside this one.
        "--mpi=pmix", "-n", "1", f"--time={TIME_LIMIT_MIN}", f"--job-name={name}"] +
        # It only has to be inside its case when the limit comes: at the lowest priority its
        # minute of sampling leaves the cores to the tests running beside this one. Samples of
        # 10,000 calls: with -n 20 a minute stored millions of samples (hundreds of MB, kept by
        # the MPI binaries' allocator, common/host_allocator), and a process that large took
        # longer to exit at nice 19 on a loaded machine than this cluster's KillWait of 2 s.
        lowest_command([
            bench, "--backend", "mpi", "--op", "all_reduce", "-b", "1K", "-e", "1K", "-n", "10000",
            "--min-time", "600", "--max-time", "600", "--max-samples", "100000000", "--timeout", "0",
            "--report-dir-path", report, "--quiet"]), TIME_LIMIT_KILL)
    since_start = time.monotonic() - cluster.started
    log(f"part 2: exit {rc} after {took:.1f} s ({since_start:.0f} s after slurmctld started)")
    problems = []
    if rc is None:
        return [f"srun --time={TIME_LIMIT_MIN} still running after {TIME_LIMIT_KILL} s: "
                "the time limit did not end the job"]
    # srun's exit code is the step's only when srun saw the step end: on a loaded machine a rank
    # at nice 19 can take longer than srun's wait (KillWait + 2 s) to write its row and exit,
    # and srun then says "Timed out waiting for job step to complete" and exits 0 on its own
    # account (seen once in CI beside the multinode test). The job's end by its limit is then
    # shown by the rest: JobState=TIMEOUT, "DUE TO TIME LIMIT" and the interrupted row.
    srun_gave_up = "Timed out waiting for job step to complete" in err
    if rc == 0 and srun_gave_up:
        log("part 2: srun gave up waiting for the step's end, so its exit 0 is its own")
    elif rc == 0:
        problems.append("exit 0, expected the job to be ended by its time limit")
    if took < TIME_LIMIT_MIN * 60 - 5:
        problems.append(f"ended after {took:.1f} s, before its time limit of {TIME_LIMIT_MIN} min: "
                        "not by the limit")
    if "DUE TO TIME LIMIT" not in err:
        problems.append("srun's stderr lacks 'DUE TO TIME LIMIT'")
    state = None
    deadline = time.monotonic() + 20  # COMPLETING while slurmd cleans up, then TIMEOUT
    while time.monotonic() < deadline:
        show = cluster.run(["scontrol", "-o", "show", "job"])
        lines = [line for line in show.stdout.splitlines() if f" JobName={name} " in line]
        state = next((w.split("=", 1)[1] for w in (lines[0].split() if lines else [])
                      if w.startswith("JobState=")), None)
        if state != "COMPLETING":
            break
        time.sleep(0.5)
    log(f"part 2: scontrol: JobState={state}")
    path = os.path.join(report, "ccl_all_reduce.csv")
    rows = list(csv.DictReader(open(path, newline=""))) if os.path.exists(path) else []
    log(f"part 2: {len(rows)} rows in {path}" +
        (f", the last {rows[-1].get('status')!r}: {rows[-1].get('note')!r}" if rows else ""))
    # The one case never ends on its own: Slurm's SIGTERM must leave it as an interrupted row.
    if not any(r.get("status") == "failed" and r.get("note", "").startswith("interrupted:")
               for r in rows):
        problems.append(f"{path}: no failed row whose note starts with 'interrupted:' "
                        f"(rows: {[(r.get('status'), r.get('note')) for r in rows]})")
    if state != "TIMEOUT":
        problems.append(f"scontrol shows JobState={state} for {name}, expected TIMEOUT")
    return problems


def on_signal(signum, _frame):
    raise Terminated(signal.Signals(signum).name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench-ccl", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--no-time-limit", action="store_true", help="skip part 2 (about 90 s)")
    parser.add_argument("--keep", action="store_true", help="keep the cluster's temp dir")
    a = parser.parse_args()
    bench = os.path.abspath(a.bench_ccl)
    out = os.path.abspath(a.out)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM):
        signal.signal(sig, on_signal)
    signal.alarm(OVERALL)
    start = time.monotonic()
    cluster = None
    problems = []
    try:
        check_prerequisites()
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        cluster = Cluster(a.keep)
        cluster.start_munge()
        cluster.write_conf()
        cluster.start_slurm()
        log(f"cluster up in {time.monotonic() - start:.1f} s: node {cluster.node}, conf {cluster.conf}")
        mpi = cluster.run(["srun", "--mpi=list"])
        if "pmix" not in mpi.stdout + mpi.stderr:
            raise Skip(f"srun --mpi=list shows no pmix plugin: {(mpi.stdout + mpi.stderr).strip()!r}")
        problems += check_pmix(cluster, bench, out)
        if a.no_time_limit:
            log("part 2 (srun --time ends a long job): not run, --no-time-limit")
        else:
            problems += check_time_limit(cluster, bench, out)
    except Skip as e:
        log(f"SKIP: {e}")
        return SKIP
    except (Fail, Terminated) as e:
        problems.append(f"stopped: {e}")
    finally:
        signal.alarm(0)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM):
            signal.signal(sig, signal.SIG_IGN)  # the cleanup runs to its end
        if cluster:
            cluster.stop(os.path.join(out, "logs") if os.path.isdir(out) else None)
    log(f"took {time.monotonic() - start:.1f} s")
    if problems:
        log("FAIL:\n" + "\n".join("  " + p for p in problems) + f"\n(daemon logs in {out}/logs)")
        return 1
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
