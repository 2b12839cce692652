#!/usr/bin/env python3
"""How soon a hung collective job ends, measured on two namespaced nodes of this machine: the
table of issue 42 item 1. Not a ctest (it runs for tens of minutes); run it by hand as root.

Two nodes (network namespaces opbh-node1, opbh-node2 on a bridge, subnet 10.78.0.0/24, a host
name each; multinode.py's helpers, under a prefix and subnet of their own so that the multinode
test may run beside it), two ranks each, `bench_ccl --backend mpi --op all_reduce -b 4M -e 4M -n N
--timeout 5` under mpirun, with CPU hogs (`yes`) running beside the job the whole time. Kinds of
run, taken in turn until the runs or the time budget are used up:

- stop N: rank 3 (on opbh-node2) gets SIGSTOP 3 s after the rank table is printed;
- link N: opbh-node2's link goes down at that moment (its veth end on the bridge);
- healthy: no fault, one sample of -n 3000 (`--placement out_of_place --max-samples 1`).

For -n 50 the case samples for 60 s (`--min-time 60 --max-time 60`), so that the fault lands
inside it. A fault run counts as named correctly when an opbench error line of a rank off
opbh-node1 says that exactly the culprits do not answer (rank 3; for the link, ranks 2 and 3)
with the host opbh-node2; its time is from the fault to mpirun's exit, and to that first naming
line. With a link down, mpirun itself waits for the cut-off node's daemon until its job limit:
Open MPI 4.1's mpirun orders that daemon to kill its ranks and waits for the reply, and TCP
keepalive (oob_tcp_keepalive_*) never probes a connection with data in flight, so it does not end
the wait either (tried: 10 s, 2 s, 3 probes). There the end is the last bench_ccl rank's, on
either node, and mpirun is killed 5 s later (the table counts those runs). A healthy run is a false alarm when it exits non-zero or prints an
opbench `timeout:` line.

Usage: multinode_hang_table.py --bench-ccl PATH [--mpirun PATH] --out DIR [--runs 10]
       [--budget-min 40] [--hogs 2] [--kinds stop50,stop3000,link50,link3000,healthy3000]
"""
import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import multinode as mn

PREFIX, SUBNET = "opbh-", "10.78.0"
LOCK_NAME = b"\0opbh-hang-table"
TMP_PREFIX = "opbh-hang-"
FAULT_AFTER = 3   # seconds after the rank table
JOB_LIMIT = 600   # mpirun --timeout: no run may hold the machine longer
WAIT_LIMIT = 120  # seconds after the fault (or start, healthy: 400) before the test kills mpirun
KINDS = {  # name: (fault, -n)
    "stop50": ("stop", 50), "stop3000": ("stop", 3000),
    "link50": ("link", 50), "link3000": ("link", 3000),
    "healthy3000": (None, 3000),
}


def log(msg):
    print(msg, flush=True)


def fmt_s(seconds):
    return "-" if seconds is None else f"{seconds:.1f}"


def bench_args(fault, n, report_dir):
    args = ["--backend", "mpi", "--op", "all_reduce", "-b", "4M", "-e", "4M", "-n", str(n), "--timeout", "5",
            "--report-dir-path", report_dir]
    if fault and n < 1000:
        args += ["--min-time", "60", "--max-time", "60", "--max-samples", "1000000"]
    if not fault:
        args += ["--placement", "out_of_place", "--min-samples", "1", "--max-samples", "1"]
    return args


def silent_ranks(text):
    """The ranks a line says do not answer: "rank 2 (h), rank 3 (h) do not answer rank 0"."""
    m = re.search(r"((?:rank \d+ \([^)]*\)(?:, | and )?)+) (?:does|do) not answer rank", text)
    return {int(x) for x in re.findall(r"rank (\d+)", m.group(1))} if m else set()


def named(stderr, fault):
    """Whether an opbench error line of a rank on node 1 says that exactly the culprits (rank 3;
    both ranks of node 2 for its link) do not answer, with node 2's name."""
    culprits = {2, 3} if fault == "link" else {3}
    return any(rank not in (2, 3) and text.startswith("error:") and silent_ranks(text) == culprits
               and mn.NODES[1]["name"] in text
               for rank, text in mn.opbench_lines(stderr))


def ranks_left(binary):
    """bench_ccl processes still running on the nodes (a stopped one included)."""
    real = os.path.realpath(binary)
    left = 0
    for node in mn.NODES:
        for pid in mn.pids_in(node["name"]):
            try:
                left += os.path.realpath(f"/proc/{pid}/exe") == real
            except OSError:
                pass
    return left


def one_run(args, tmp, agent, hostfile, kind, index):
    fault, n = KINDS[kind]
    out_dir = os.path.join(args.out, f"{kind}_{index}")
    shutil.rmtree(out_dir, ignore_errors=True)
    job = mn.Job(args, tmp, agent, hostfile, out_dir, args.bench_ccl,
                 bench_args(fault, n, os.path.join(out_dir, "reports")))
    res = {"kind": kind, "rc": None, "to_end": None, "to_name": None, "to_ranks_end": None, "mpirun_waited": False,
           "named": False, "alarm": False, "note": ""}
    t_fault = None
    cut = None
    stopped = None
    try:
        deadline = time.monotonic() + 60
        while job.proc.poll() is None and time.monotonic() < deadline:
            with open(job.stdout_path, errors="replace") as f:
                if re.search(r"Rank\s+3\s", f.read()):
                    break
            time.sleep(0.05)
        if fault and job.proc.poll() is None:
            time.sleep(FAULT_AFTER)
            if fault == "stop":
                stopped = mn.find_rank_pid(mn.NODES[1]["name"], 3, args.bench_ccl)
                if stopped is None:
                    res["note"] = "no rank 3 found"
                else:
                    os.kill(stopped, signal.SIGSTOP)
            else:
                cut = mn.NODES[1]["outer"]
                mn.run(["ip", "link", "set", cut, "down"])
            t_fault = time.monotonic()
        limit = WAIT_LIMIT if fault else 400
        start = t_fault or job.start
        while job.proc.poll() is None and time.monotonic() - start < limit:
            if fault and res["to_name"] is None and named(job.stderr(), fault):
                res["to_name"] = time.monotonic() - t_fault
            if t_fault and res["to_ranks_end"] is None and ranks_left(args.bench_ccl) == 0:
                res["to_ranks_end"] = time.monotonic() - t_fault
            # With a node cut off, mpirun waits for that node's daemon until its job limit
            # (docs/scripts.md): 5 s after the last rank ended, it is only that wait.
            if res["to_ranks_end"] is not None and time.monotonic() - t_fault > res["to_ranks_end"] + 5:
                res["mpirun_waited"] = True
                break
            time.sleep(0.1)
        rc = job.wait(1)
    finally:
        if job.proc.poll() is None:
            job.kill()
        if cut:
            mn.run(["ip", "link", "set", cut, "up"], check=False)
        if stopped:
            try:
                os.kill(stopped, signal.SIGCONT)
            except ProcessLookupError:
                pass
        for node in mn.NODES:
            mn.kill_pids_in(node["name"])
    res["rc"] = rc
    err = job.stderr()
    if fault:
        res["to_end"] = job.end - t_fault if t_fault else None
        if res["mpirun_waited"]:
            res["to_end"] = res["to_ranks_end"]
        res["named"] = named(err, fault)
        if res["to_name"] is None and res["named"]:
            res["to_name"] = res["to_end"]
        first = next((t for r, t in mn.opbench_lines(err) if r not in (2, 3) and t.startswith("error:")), "")
        res["note"] = res["note"] or first[:160]
    else:
        res["to_end"] = job.end - job.start
        res["alarm"] = rc != 0 or any("timeout:" in t for _, t in mn.opbench_lines(err))
        if res["alarm"]:
            res["note"] = next((t for _, t in mn.opbench_lines(err) if t.startswith("error:")), f"exit {rc}")[:160]
    return res


def table(results, kinds):
    """The Markdown table: per kind, runs, culprit named, named and ended within 30 s, seconds from
    the fault to the end (the last rank's end where mpirun then waited for a cut-off node's
    daemon), to the naming line, and false alarms of the healthy runs."""
    lines = ["| fault | -n | runs | named correctly | named and ended within 30 s | "
             "s from fault to end: min / median / max | s from fault to naming: median | "
             "mpirun left waiting for the cut node | false alarms |",
             "|---|---:|---:|---:|---:|---|---:|---:|---:|"]
    for kind in kinds:
        fault, n = KINDS[kind]
        rs = [r for r in results if r["kind"] == kind]
        if not rs:
            continue
        ends = [r["to_end"] for r in rs if r["to_end"] is not None]
        spread = f"{min(ends):.1f} / {statistics.median(ends):.1f} / {max(ends):.1f}" if ends else "-"
        if fault:
            names = [r["to_name"] for r in rs if r["to_name"] is not None]
            within = sum(r["named"] and r["to_end"] is not None and r["to_end"] <= 30 for r in rs)
            label = "SIGSTOP rank 3" if fault == "stop" else "link down (node 2)"
            lines.append(f"| {label} | {n} | {len(rs)} | {sum(r['named'] for r in rs)} | {within} | {spread} | "
                         f"{f'{statistics.median(names):.1f}' if names else '-'} | "
                         f"{sum(r['mpirun_waited'] for r in rs)} | - |")
        else:
            lines.append(f"| none (healthy) | {n} | {len(rs)} | - | - | run length {spread} | - | - | "
                         f"{sum(r['alarm'] for r in rs)} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench-ccl", required=True)
    ap.add_argument("--mpirun", default=shutil.which("mpirun") or "mpirun")
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=10, help="runs of each kind, at most")
    ap.add_argument("--budget-min", type=float, default=40, help="no run starts after this many minutes")
    ap.add_argument("--hogs", type=int, default=2, help="`yes` processes running beside the jobs")
    ap.add_argument("--kinds", default=",".join(KINDS), help="which kinds of run, in turn")
    args = ap.parse_args()
    args.bench_ccl = os.path.abspath(args.bench_ccl)
    args.out = os.path.abspath(args.out)
    kinds = args.kinds.split(",")
    mn.configure(PREFIX, SUBNET, 2)
    mn.MPIRUN_TIMEOUT = JOB_LIMIT

    def on_signal(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    lock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lock.bind(LOCK_NAME)  # one at a time: the cleanup removes every opbh- namespace
    hogs, results, tmp = [], [], None
    t0 = time.monotonic()
    try:
        for p in mn.cleanup_network():
            log(f"warning: {p}")
        mn.probe()
        mn.setup_network()
        tmp = tempfile.mkdtemp(prefix=TMP_PREFIX)
        agent, hostfile = mn.write_agent(tmp)
        hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(args.hogs)]
        log(f"{len(hogs)} CPU hogs; nodes {', '.join(n['name'] for n in mn.NODES)}; kinds {', '.join(kinds)}; "
            f"mpirun {args.mpirun}")
        for index in range(1, args.runs + 1):
            for kind in kinds:
                if time.monotonic() - t0 > args.budget_min * 60:
                    break
                r = one_run(args, tmp, agent, hostfile, kind, index)
                results.append(r)
                if KINDS[kind][0]:
                    what = (f"named {r['named']}, {fmt_s(r['to_name'])} s to naming, {fmt_s(r['to_end'])} s to end"
                            + (" (the last rank's; mpirun left waiting for node 2's daemon)" if r["mpirun_waited"]
                               else ""))
                else:
                    what = f"{fmt_s(r['to_end'])} s, false alarm {r['alarm']}"
                log(f"{kind} #{index}: exit {r['rc']}, {what}" + (f": {r['note']}" if r["note"] else ""))
    except KeyboardInterrupt as e:
        log(f"stopped: {e}")
    finally:
        for h in hogs:
            h.kill()
            h.wait()
        for node in mn.NODES:
            mn.kill_pids_in(node["name"])
        for p in mn.cleanup_network():
            log(f"FAIL: cleanup: {p}")
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        lock.close()
    log(f"\n{len(results)} runs in {(time.monotonic() - t0) / 60:.1f} min\n")
    log(table(results, kinds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
