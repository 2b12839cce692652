#!/usr/bin/env python3
"""Three simulated nodes on one machine: bench_ccl and bench_fsdp under Open MPI across them,
then faults injected mid-run.

Each node is a Linux network namespace (opbn-node1..3) with a veth pair onto a bridge in the root
namespace (subnet 10.77.0.0/24, mpirun at 10.77.0.254), and its own host name through a UTS
namespace made by the launch agent. mpirun runs here, in the root namespace, and reaches the
nodes through a small plm_rsh_agent script (`AGENT IP COMMAND...` -> `ip netns exec NODE unshare
--uts ...`); the hostfile lists the nodes by IP address, so nothing needs /etc/hosts.

1. Healthy runs (bench_ccl 3 nodes x 2 ranks: the whole world, --group-size 2 and 3, a model's
   pipeline messages at tp 3, pp 2, whose neighbour stages are 3 ranks apart and so on two nodes
   each; bench_fsdp, and with HSDP, whose replica groups span the nodes and shard groups do not):
   exit 0, rows ok, world_size 6, nodes 3, ranks_per_node 2, the layout
   columns where the build has them, and the rank map of environment.json.
2. Faults, each on a long bench_ccl sweep once its first row is written: node3's link taken down,
   rank 3 (on node2) killed, rank 3 stopped; and node3's link taken down between two cases, while
   rank 4 (on node3) is held after the first case (--test-stall-at between), so that the ranks'
   agreement to start the next case is where the loss is met. The job must end, non-zero, within bench_ccl's
   --timeout + 30 s (--fault-bound) — with a lost link, within the job limit (mpirun --timeout,
   counted from the start), since mpirun waits for the lost node's daemon until then — and every
   row written is whole. With --require-culprit an
   opbench error line of another rank (mpirun --tag-output tells who spoke) must also name the
   culprit rank and its host: rank 3 on node2, or rank 4 or 5 on node3 for the link. A Markdown
   table of the faults ends the output.

Everything made (namespaces, veths, bridge, processes inside the namespaces, temp files) is
removed at the end, even on failure, and leftovers of an earlier crashed run (the opbn- prefix)
at the start. Exit 77 (ctest: skipped) where this machine cannot make namespaces.

   With --capture-lib, the pipeline job also runs under the capture (LD_PRELOAD for the ranks
   only), whose tables must say its pairs were 3 ranks apart (comm_stride), and is replayed
   from them (bench_ccl --capture-path): the replayed pairs must cross nodes as the job's did.

Usage: multinode.py --bench-ccl PATH --bench-fsdp PATH [--mpirun PATH] --out DIR
                    [--keep] [--require-culprit] [--fault-bound S] [--only healthy|faults]
                    [--capture-lib PATH]
"""
import argparse
import csv
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter

from lowest_priority import lowest_priority

RANKS_PER_NODE = 2


def configure(prefix, subnet, nodes):
    """The nodes' layout: namespaces and links named PREFIXnode<i>, PREFIXh<i> (the veth end on
    the bridge), PREFIXc<i> (the end in the node), addresses SUBNET.<i>, mpirun at SUBNET.254 on
    the bridge PREFIXbr; RANKS_PER_NODE ranks on each of `nodes` nodes. This test uses opbn- and
    10.77.0 for three nodes; a run beside it (multinode_hang_table.py) takes another prefix and
    subnet, so that neither's cleanup removes the other's namespaces."""
    global PREFIX, SUBNET, CIDR, ROOT_IP, BRIDGE, NODES, WORLD
    PREFIX, SUBNET = prefix, subnet
    CIDR, ROOT_IP, BRIDGE = f"{SUBNET}.0/24", f"{SUBNET}.254", PREFIX + "br"
    NODES = [{"name": f"{PREFIX}node{i}", "ip": f"{SUBNET}.{i}", "outer": f"{PREFIX}h{i}", "inner": f"{PREFIX}c{i}"}
             for i in range(1, nodes + 1)]
    WORLD = RANKS_PER_NODE * len(NODES)


configure("opbn-", "10.77.0", 3)
SKIP = 77
LOCK_NAME = b"\0opbn-multinode"  # an abstract socket: released when the process ends, leaves no file

CCL_TIMEOUT = 10      # bench_ccl --timeout in the fault runs
MPIRUN_TIMEOUT = 45   # mpirun --timeout in every run: the job limit that ends a job with a lost node
HARD_LIMIT = MPIRUN_TIMEOUT + 15  # the test kills an mpirun still running this long after start (or fault)
FIRST_ROW_LIMIT = 30  # a fault run must write its first row within this many seconds
BETWEEN_STALL = 6     # rank 4 held after the first case: the link goes down meanwhile
BUDGET = 240          # no new run starts after this many seconds (ctest's TIMEOUT is above the worst case)
ROW_STATUSES = {"ok", "skipped", "failed"}


class Skip(Exception):
    pass


class Terminated(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def run(cmd, timeout=20, check=True, **kw):
    """A short command with a hard limit; returns the CompletedProcess."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{' '.join(cmd)}: still running after {timeout} s")
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
    return p


# ---------------------------------------------------------------- namespaces and cleanup

def our_namespaces():
    p = run(["ip", "netns", "list"], check=False)
    names = [line.split()[0] for line in p.stdout.splitlines() if line.strip()]
    return [n for n in names if n.startswith(PREFIX)]


def our_links():
    p = run(["ip", "-o", "link", "show"], check=False)
    links = []
    for line in p.stdout.splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            name = parts[1].strip().split("@")[0]
            if name.startswith(PREFIX):
                links.append(name)
    return links


def pids_in(ns):
    p = run(["ip", "netns", "pids", ns], check=False)
    return [int(x) for x in p.stdout.split() if x.isdigit()]


def kill_pids_in(ns):
    """SIGCONT then SIGKILL to every process in the namespace; returns their names."""
    pids = pids_in(ns)
    names = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass
    for sig in (signal.SIGCONT, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + 5
    while pids_in(ns) and time.monotonic() < deadline:
        time.sleep(0.1)
    return names


def cleanup_network():
    """Removes every namespace and link with our prefix, and the processes inside them."""
    problems = []
    for ns in our_namespaces():
        kill_pids_in(ns)
        p = run(["ip", "netns", "del", ns], check=False)
        if p.returncode != 0:
            problems.append(f"ip netns del {ns}: {p.stderr.strip()}")
    for link in our_links():
        if link in our_links():  # deleting one veth end removes its peer
            p = run(["ip", "link", "del", link], check=False)
            if p.returncode != 0 and link in our_links():
                problems.append(f"ip link del {link}: {p.stderr.strip()}")
    left = our_namespaces() + our_links()
    if left:
        problems.append("still present after cleanup: " + ", ".join(left))
    return problems


def kill_orphans():
    """Kills mpirun (and agent) processes of an earlier run killed outright: their command line
    names one of our temp directories. Returns how many."""
    tmp = tempfile.gettempdir().rstrip("/") + "/opbn-multinode-"
    n = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if any(a.startswith(tmp) for a in argv):
            try:
                os.kill(int(entry), signal.SIGKILL)
                n += 1
            except ProcessLookupError:
                pass
    return n


def cleanup_stale_tempdirs():
    tmp = tempfile.gettempdir()
    for name in os.listdir(tmp):
        if name.startswith("opbn-multinode-"):
            shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)


def probe():
    """Raises Skip with the reason when this machine cannot make the nodes."""
    for tool in ("ip", "unshare"):
        if shutil.which(tool) is None:
            raise Skip(f"'{tool}' is not installed")
    ns = PREFIX + "probe"
    p = run(["ip", "netns", "add", ns], check=False)
    if p.returncode != 0:
        raise Skip(f"cannot create a network namespace (ip netns add: {p.stderr.strip()}); "
                   "needs root or CAP_NET_ADMIN/CAP_SYS_ADMIN")
    try:
        p = run(["ip", "netns", "exec", ns, "unshare", "--uts", "--", "sh", "-c",
                 "hostname opbn-probe && hostname"], check=False)
        if p.returncode != 0 or p.stdout.strip() != "opbn-probe":
            raise Skip(f"cannot create a UTS namespace inside a network namespace "
                       f"(unshare --uts: exit {p.returncode}: {p.stderr.strip()})")
    finally:
        run(["ip", "netns", "del", ns], check=False)


def setup_network():
    def must(cmd, what):
        p = run(cmd, check=False)
        if p.returncode != 0:
            raise Skip(f"cannot {what} ({' '.join(cmd)}: {p.stderr.strip()})")

    must(["ip", "link", "add", BRIDGE, "type", "bridge"], "create a bridge")
    must(["ip", "addr", "add", f"{ROOT_IP}/24", "dev", BRIDGE], "address the bridge")
    must(["ip", "link", "set", BRIDGE, "up"], "bring the bridge up")
    for n in NODES:
        must(["ip", "netns", "add", n["name"]], "create a network namespace")
        must(["ip", "link", "add", n["outer"], "type", "veth", "peer", "name", n["inner"]],
             "create a veth pair")
        must(["ip", "link", "set", n["inner"], "netns", n["name"]], "move a veth into a namespace")
        must(["ip", "link", "set", n["outer"], "master", BRIDGE], "attach a veth to the bridge")
        must(["ip", "link", "set", n["outer"], "up"], "bring a veth up")
        inside = ["ip", "netns", "exec", n["name"]]
        must(inside + ["ip", "link", "set", "lo", "up"], "bring lo up in a namespace")
        must(inside + ["ip", "addr", "add", f"{n['ip']}/24", "dev", n["inner"]], "address a veth")
        must(inside + ["ip", "link", "set", n["inner"], "up"], "bring a veth up in a namespace")


def write_agent(tmp):
    """The plm_rsh_agent: called by mpirun as `AGENT HOST COMMAND...` like ssh, it runs the
    command line through sh in HOST's network namespace, with the node's host name."""
    cases = "\n".join(f"  {n['ip']}|{n['name']}) node={n['name']} ;;" for n in NODES)
    path = os.path.join(tmp, "agent.sh")
    with open(path, "w") as f:
        f.write(f"""#!/bin/sh
host=$1
shift
case "$host" in
{cases}
  *) echo "opbn agent: unknown host '$host'" >&2; exit 255 ;;
esac
exec ip netns exec "$node" unshare --uts -- /bin/sh -c 'hostname "$0" || exit 255; exec /bin/sh -c "$*"' "$node" "$@"
""")
    os.chmod(path, 0o755)
    hostfile = os.path.join(tmp, "hostfile")
    with open(hostfile, "w") as f:
        for n in NODES:
            f.write(f"{n['ip']} slots={RANKS_PER_NODE}\n")
    return path, hostfile


# ---------------------------------------------------------------- running jobs

class Job:
    """mpirun across the nodes, in its own session, output to files, bounded by mpirun's
    --timeout and by the test's own hard limit."""

    def __init__(self, args, tmp, agent, hostfile, out_dir, binary, bench_args, rank_env=()):
        os.makedirs(out_dir, exist_ok=True)
        self.out_dir = out_dir
        # variables for the ranks only (-x NAME=VALUE): LD_PRELOAD must not reach mpirun's daemons
        exported = [a for pair in rank_env for a in ("-x", pair)]
        self.cmd = [args.mpirun, "--allow-run-as-root", "--oversubscribe"] + exported + [
                    "--hostfile", hostfile, "-np", str(WORLD), "--map-by", "slot", "--bind-to", "none",
                    "--timeout", str(MPIRUN_TIMEOUT), "--tag-output",
                    "--mca", "plm_rsh_agent", agent, "--mca", "plm_rsh_no_tree_spawn", "1",
                    "--mca", "orte_tmpdir_base", tmp,
                    "--mca", "pml", "ob1", "--mca", "btl", "tcp,self",
                    "--mca", "btl_tcp_if_include", CIDR, "--mca", "oob_tcp_if_include", CIDR,
                    "--mca", "mpi_yield_when_idle", "1",
                    binary] + bench_args
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        self.stdout_path = os.path.join(out_dir, "mpirun.stdout")
        self.stderr_path = os.path.join(out_dir, "mpirun.stderr")
        with open(os.path.join(out_dir, "command.txt"), "w") as f:
            f.write(" ".join(self.cmd) + "\n")
        self.start = time.monotonic()
        with open(self.stdout_path, "w") as out, open(self.stderr_path, "w") as err:
            self.proc = subprocess.Popen(self.cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                         env=env, start_new_session=True)
        self.hung = False

    def wait(self, limit):
        """Waits up to `limit` s; a job still running then is killed (process group) and
        marked hung. Returns the exit code."""
        try:
            self.proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            self.hung = True
            self.kill()
        self.end = time.monotonic()
        return self.proc.returncode

    def kill(self):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(timeout=5)
                return
            except subprocess.TimeoutExpired:
                pass

    def stderr(self):
        with open(self.stderr_path, errors="replace") as f:
            return f.read()


def read_csv_rows(path):
    """(header, rows) of a CSV; an empty file gives ([], [])."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        return [], []
    return rows[0], rows[1:]


def report_csvs(report_dir, binary):
    if not os.path.isdir(report_dir):
        return []
    names = sorted(n for n in os.listdir(report_dir) if n.endswith(".csv"))
    if binary == "fsdp":
        names = [n for n in names if n == "fsdp.csv"] or names
    return [os.path.join(report_dir, n) for n in names]


def truthy_span(value):
    v = value.strip().lower()
    if v in ("yes", "true", "1"):
        return "yes"
    if v in ("no", "false", "0"):
        return "no"
    if v == "some":
        return "some"
    return None


def check_healthy(name, job, rc, report_dir, binary, spans):
    """Problems of a healthy run (empty list when it is right), and a one-line summary."""
    problems, notes = [], []
    if job.hung:
        problems.append(f"hung: still running after {HARD_LIMIT} s, killed")
    elif rc != 0:
        problems.append(f"exit code {rc}")
    rows_total = 0
    csvs = report_csvs(report_dir, binary)
    if not csvs:
        problems.append(f"no CSV in {report_dir}")
    for path in csvs:
        header, rows = read_csv_rows(path)
        base = os.path.basename(path)
        if not header:
            continue  # an op with no cases writes an empty file
        rows_total += len(rows)
        col = {c: i for i, c in enumerate(header)}
        expect = {"world_size": str(WORLD), "nodes": str(len(NODES)), "ranks_per_node": str(RANKS_PER_NODE)}
        for c in expect:
            if c not in col:
                problems.append(f"{base}: no column '{c}'")
        optional = {"ranks_per_node_min": str(RANKS_PER_NODE), "ranks_per_node_max": str(RANKS_PER_NODE)}
        for i, row in enumerate(rows, 1):
            if len(row) != len(header):
                problems.append(f"{base} row {i}: {len(row)} fields, header has {len(header)}")
                continue
            if row[col["status"]] != "ok":
                problems.append(f"{base} row {i}: status {row[col['status']]!r} ({row[col.get('note', 0)]})")
            for c, want in list(expect.items()) + list(optional.items()):
                if c in col and row[col[c]] != want:
                    problems.append(f"{base} row {i}: {c} = {row[col[c]]!r}, expected {want}")
            if "group_spans_nodes" in col:
                got = truthy_span(row[col["group_spans_nodes"]])
                want = spans.get(row[col["op"]]) if isinstance(spans, dict) else spans
                if got != want:
                    problems.append(f"{base} row {i}: group_spans_nodes = "
                                    f"{row[col['group_spans_nodes']]!r}, expected {want}")
        missing = [c for c in list(optional) + ["group_spans_nodes"] if c not in col]
        if missing:
            notes.append(f"NOTE: {base} has no column {', '.join(missing)} (not checked)")
    if csvs and rows_total == 0:
        problems.append("no rows")
    env_path = os.path.join(report_dir, "environment.json")
    hosts_summary = ""
    if not os.path.exists(env_path):
        problems.append("no environment.json")
    else:
        with open(env_path) as f:
            env = json.load(f)
        if "ranks" not in env:
            notes.append("NOTE: environment.json has no 'ranks' (the rank map is not checked)")
        else:
            ranks = env["ranks"]
            hosts = {}
            for entry in ranks:
                hosts[entry.get("rank")] = entry.get("host")
            want = {r: NODES[r // RANKS_PER_NODE]["name"] for r in range(WORLD)}
            if hosts != want:
                problems.append(f"environment.json ranks: rank -> host {hosts}, expected {want}")
            local = {entry.get("rank"): entry.get("local_rank") for entry in ranks}
            want_local = {r: r % RANKS_PER_NODE for r in range(WORLD)}
            if "local_rank" in (ranks[0] if ranks else {}) and local != want_local:
                problems.append(f"environment.json ranks: local ranks {local}, expected {want_local}")
            count = Counter(hosts.values())
            hosts_summary = ", ".join(f"{h} x{c}" for h, c in sorted(count.items(), key=lambda x: str(x[0])))
        if "nodes" in env and env["nodes"] != len(NODES):
            problems.append(f"environment.json nodes = {env['nodes']}, expected {len(NODES)}")
    took = job.end - job.start
    summary = (f"{name}: exit {rc}, {took:.1f} s, {rows_total} rows"
               + (f", hosts {hosts_summary}" if hosts_summary else ""))
    return problems, notes, summary


def captured_strides(folder):
    """Problems of the pipeline job's capture: every rank's file, its MPI_Sendrecv rows (the pairs
    between stages) comm_stride 3, the calls over all 6 ranks 1."""
    problems = []
    paths = sorted(f for f in os.listdir(folder) if f.startswith("capture-") and f.endswith(".csv")) \
        if os.path.isdir(folder) else []
    if len(paths) != WORLD:
        return [f"{folder}: {len(paths)} capture files, expected one per rank ({WORLD})"]
    for name in paths:
        with open(os.path.join(folder, name), newline="") as f:
            for r in csv.DictReader(f):
                if r["kind"] not in ("collective", "p2p"):
                    continue
                want = "3" if r["api"] == "MPI_Sendrecv" else "1" if r["comm_size"] == str(WORLD) else None
                if want and r.get("comm_stride") != want:
                    problems.append(f"{name}: {r['api']} {r['bytes']} B over {r['comm_size']} ranks: "
                                    f"comm_stride {r.get('comm_stride')!r}, expected {want}")
    return problems


def replayed_strides(report_dir):
    """Problems of the replay: its send_recv rows in pairs 3 ranks apart, as the job's were."""
    path = os.path.join(report_dir, "ccl_send_recv.csv")
    if not os.path.exists(path):
        return [f"no {path}"]
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["group_size"] == "2"]
    if not rows:
        return [f"{path}: no send_recv rows of groups of 2"]
    return [f"{path}: {r['size_bytes']} B: group_stride {r['group_stride']!r}, expected 3"
            for r in rows if r["group_stride"] != "3"]


# ---------------------------------------------------------------- faults

def rows_intact(report_dir):
    """(intact, rows, detail): every CSV row has every column and a known status; every JSON
    line parses."""
    bad, n = [], 0
    if os.path.isdir(report_dir):
        for name in sorted(os.listdir(report_dir)):
            path = os.path.join(report_dir, name)
            if name.endswith(".csv"):
                with open(path, newline="") as f:
                    text = f.read()
                if text and not text.endswith("\n"):
                    bad.append(f"{name}: last line cut short")
                rows = list(csv.reader(io.StringIO(text)))
                if not rows:
                    continue
                header = rows[0]
                st = header.index("status") if "status" in header else None
                for i, row in enumerate(rows[1:], 1):
                    n += 1
                    if len(row) != len(header):
                        bad.append(f"{name} row {i}: {len(row)} of {len(header)} fields")
                    elif st is not None and row[st] not in ROW_STATUSES:
                        bad.append(f"{name} row {i}: status {row[st]!r}")
            elif name.endswith(".jsonl"):
                with open(path) as f:
                    text = f.read()
                if text and not text.endswith("\n"):
                    bad.append(f"{name}: last line cut short")
                for i, line in enumerate(text.splitlines(), 1):
                    try:
                        json.loads(line)
                    except ValueError:
                        bad.append(f"{name} line {i}: not JSON")
    return not bad, n, bad


def snapshot(path, job):
    """What runs where, for a job that did not get going: each namespace's processes (state,
    wchan, command) and TCP sockets, and mpirun's children, written to `path`; returns a
    one-line summary."""
    lines, summary = [], []
    def procs(pids):
        out = []
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    stat = f.read()
                state = stat[stat.rindex(")") + 2]
                with open(f"/proc/{pid}/wchan") as f:
                    wchan = f.read().strip()
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace")[:160]
                out.append((pid, state, wchan, cmd))
            except OSError:
                pass
        return out
    for n in NODES:
        ps = procs(pids_in(n["name"]))
        summary.append(f"{n['name']}: " + (", ".join(f"{c.split()[0].rsplit('/', 1)[-1]}({st})" for _, st, _, c in ps
                                                       if c) or "nothing"))
        lines.append(f"== {n['name']}")
        lines += [f"{pid} {st} {w} {c}" for pid, st, w, c in ps]
        p = run(["ip", "netns", "exec", n["name"], "ss", "-tanp"], check=False)
        lines.append(p.stdout + p.stderr)
    kids = run(["ps", "-o", "pid,stat,wchan:20,args", "--ppid", str(job.proc.pid)], check=False)
    lines += ["== children of mpirun", kids.stdout]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return "; ".join(summary)


def data_rows(path):
    try:
        with open(path) as f:
            return max(0, sum(1 for line in f if line.endswith("\n")) - 1)
    except FileNotFoundError:
        return 0


def find_rank_pid(ns, rank, binary):
    """The pid of MPI rank `rank` of our job: a process in namespace `ns` running `binary`
    whose environment has OMPI_COMM_WORLD_RANK=rank."""
    want = f"OMPI_COMM_WORLD_RANK={rank}".encode()
    real = os.path.realpath(binary)
    for pid in pids_in(ns):
        try:
            if os.path.realpath(f"/proc/{pid}/exe") != real:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if want in f.read().split(b"\0"):
                    return pid
        except OSError:
            continue
    return None


def ranks_named(line):
    """Rank numbers a line names: 'rank 3', 'ranks 4, 5', 'ranks 4-5', 'ranks 4 and 5'."""
    out = set()
    for m in re.finditer(r"\branks?\s+(\d+(?:\s*(?:,|-|and|to)\s*\d+)*)", line):
        text = m.group(1)
        for a, b in re.findall(r"(\d+)\s*(?:-|to)\s*(\d+)", text):
            out.update(range(int(a), int(b) + 1))
        out.update(int(x) for x in re.findall(r"\d+", text))
    return out


def speakers(stderr):
    """(rank or None, text) per line: mpirun --tag-output prefixes a rank's lines with
    [jobid,rank]<stderr>:; mpirun's own lines have no prefix."""
    out = []
    for line in stderr.splitlines():
        m = re.match(r"\[\d+,(\d+)\]<std(?:err|out)>:\s?(.*)$", line)
        out.append((int(m.group(1)), m.group(2)) if m else (None, line))
    return out


def opbench_lines(stderr):
    return [(r, t) for r, t in speakers(stderr) if r is not None and t.startswith(("error:", "warning:"))]


def rank_lines(stderr):
    return [(f"[rank {r}] " if r is not None else "") + t for r, t in speakers(stderr)
            if t.startswith("error:") or re.search(r"\brank", t)]


FAULT_ARGS = ["--backend", "mpi", "--op", "all_reduce", "-b", "1M", "-e", "2M", "-f", "1", "-i", "64K",
              "-n", "50", "-w", "1", "--min-time", "0.5", "--max-time", "1", "--timeout", str(CCL_TIMEOUT),
              "--quiet"]


def run_fault(args, tmp, agent, hostfile, kind, attempt=""):
    """One fault on a long bench_ccl sweep; returns a result dict."""
    name = {"link": "link down (node3)", "link_between": "link down between two cases (node3)",
            "kill": "rank 3 killed (SIGKILL)", "stop": "rank 3 stopped (SIGSTOP)"}[kind]
    lost_link = kind in ("link", "link_between")
    culprit_node = NODES[2] if lost_link else NODES[1]
    culprit_ranks = {4, 5} if lost_link else {3}
    # Our ranks end within --timeout of any fault; a lost node's daemon then holds mpirun until
    # the job's own limit (mpirun --timeout, counted from the job's start), which is the bound
    # that ends a job with a lost node (docs/scripts.md, "Job time limit").
    bound = MPIRUN_TIMEOUT + 5 if lost_link else args.fault_bound
    out_dir = os.path.join(args.out, f"fault_{kind}{attempt}")
    shutil.rmtree(out_dir, ignore_errors=True)
    report_dir = os.path.join(out_dir, "reports")
    res = {"fault": name, "kind": kind, "rc": None, "seconds": None, "message": "", "names_rank": False,
           "names_host": False, "intact": False, "rows": 0, "problems": [], "notes": [], "lines": []}
    # Between two cases: rank 4 wakes after the link is down, and its check-in never reaches
    # rank 0, which waits for it in the agreement to start the second case.
    held = (["--test-stall-rank", "4", "--test-stall-at", "between", "--test-stall-seconds",
             str(BETWEEN_STALL)] if kind == "link_between" else [])
    job = Job(args, tmp, agent, hostfile, out_dir, args.bench_ccl,
              FAULT_ARGS + held + ["--report-dir-path", report_dir])
    csv_path = os.path.join(report_dir, "ccl_all_reduce.csv")
    stopped_pid = None
    link_down = False
    t_fault = None
    try:
        deadline = time.monotonic() + FIRST_ROW_LIMIT
        while data_rows(csv_path) < 1 and job.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if job.proc.poll() is not None:
            res["problems"].append(f"the job ended (exit {job.proc.returncode}) before its first row: "
                                   "no fault injected")
        elif data_rows(csv_path) < 1:
            res["problems"].append(f"no row after {FIRST_ROW_LIMIT} s: no fault injected")
            res["no_start"] = True
            res["notes"].append("running then: " + snapshot(os.path.join(out_dir, "snapshot.txt"), job))
        else:
            res["rows_before"] = data_rows(csv_path)
            if lost_link:
                run(["ip", "link", "set", culprit_node["outer"], "down"])
                link_down = True
            else:
                pid = find_rank_pid(culprit_node["name"], 3, args.bench_ccl)
                if pid is None:
                    res["problems"].append(f"no rank 3 process in {culprit_node['name']}: no fault injected")
                else:
                    res["notes"].append(f"rank 3 is pid {pid}")
                    os.kill(pid, signal.SIGKILL if kind == "kill" else signal.SIGSTOP)
                    if kind == "stop":
                        stopped_pid = pid
            if not res["problems"]:
                t_fault = time.monotonic()
                # From here the ranks mostly spin (yielding) through the timeouts, for most of
                # this test's minute: the cores go to the tests running beside it. Not earlier:
                # a loaded machine then starved the job's start past its first-row limit.
                for n in NODES:
                    lowest_priority(pids_in(n["name"]))
        if t_fault is None:
            job.kill()
            rc = job.wait(5)
        else:
            rc = job.wait(HARD_LIMIT)
    finally:
        if job.proc.poll() is None:
            job.kill()
        if link_down:
            run(["ip", "link", "set", culprit_node["outer"], "up"], check=False)
        if stopped_pid is not None:
            try:
                os.kill(stopped_pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        # A job that lost a node may leave its daemon and ranks there: count and end them.
        left = {n["name"]: kill_pids_in(n["name"]) for n in NODES}
        left = {k: v for k, v in left.items() if v}
        if left:
            res["notes"].append("left running after mpirun ended, killed by the test: "
                                + ", ".join(f"{' '.join(v)} in {k}" for k, v in left.items()))
    res["rc"] = rc
    res["hung"] = job.hung
    if t_fault is not None:
        res["seconds"] = job.end - t_fault
        if job.hung:
            res["problems"].append(f"hung: mpirun still running {HARD_LIMIT} s after the fault "
                                   f"(despite --timeout {MPIRUN_TIMEOUT}), killed by the test")
        elif res["seconds"] > bound:
            res["problems"].append(f"ended {res['seconds']:.1f} s after the fault, more than {bound:g} s")
        if rc == 0:
            res["problems"].append("exit code 0 although a fault was injected")
    stderr = job.stderr()
    ours = opbench_lines(stderr)
    res["lines"] = rank_lines(stderr)[-8:]
    res["message"] = ours[0][1] if ours else "(none)"
    # A culprit's word about itself does not count: a stopped rank speaks only once the teardown
    # sends it SIGCONT, a killed one never; the others must name it.
    # The host counts on a line that names the culprit rank (a neighbour's own host may be the same).
    told = [t for r, t in ours if r not in culprit_ranks and ranks_named(t) & culprit_ranks]
    res["names_rank"] = bool(told)
    res["names_host"] = any(culprit_node["name"] in t for t in told)
    res["names_ip_only"] = not res["names_host"] and any(culprit_node["ip"] in l for l in rank_lines(stderr))
    intact, nrows, bad = rows_intact(report_dir)
    res["intact"], res["rows"] = intact, nrows
    if not intact:
        res["problems"].append("rows not intact: " + "; ".join(bad[:5]))
    if args.require_culprit and t_fault is not None and not (res["names_rank"] and res["names_host"]):
        res["problems"].append(f"no opbench error line names the culprit rank "
                               f"({'/'.join(map(str, sorted(culprit_ranks)))}) and host ({culprit_node['name']})")
    return res


def md_cell(text):
    return text.replace("|", "\\|").strip()


def fault_table(results):
    lines = ["| fault | exit code | seconds to exit | message (first opbench error line) | names rank | "
             "names host | rows intact |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        secs = "-" if r["seconds"] is None else f"{r['seconds']:.1f}"
        if r.get("hung"):
            secs += " (hung, killed)"
        lines.append(f"| {r['fault']} | {r['rc']} | {secs} | {md_cell(r['message'])} | "
                     f"{'yes' if r['names_rank'] else 'no'} | {'yes' if r['names_host'] else 'no'} | "
                     f"{'yes' if r['intact'] else 'NO'} ({r['rows']} rows) |")
    return "\n".join(lines)


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench-ccl", required=True)
    ap.add_argument("--bench-fsdp", required=True)
    ap.add_argument("--mpirun", default=shutil.which("mpirun") or "mpirun")
    ap.add_argument("--out", required=True, help="directory for the reports and logs")
    ap.add_argument("--keep", action="store_true", help="leave the report directories (else removed on success)")
    ap.add_argument("--require-culprit", action="store_true",
                    help="fail unless an opbench error line names the culprit rank and its host")
    ap.add_argument("--only", choices=["healthy", "faults"], help="run one half only")
    ap.add_argument("--capture-lib", help="libopbench_capture.so: also capture the pipeline job and "
                    "replay it from its tables (bench_ccl --capture-path), its pairs across nodes")
    ap.add_argument("--fault-bound", type=float, default=CCL_TIMEOUT + 30,
                    help="seconds from a fault to the end of mpirun, at most (default: %(default)s)")
    args = ap.parse_args()
    args.bench_ccl = os.path.abspath(args.bench_ccl)
    args.bench_fsdp = os.path.abspath(args.bench_fsdp)
    args.out = os.path.abspath(args.out)
    for b in (args.bench_ccl, args.bench_fsdp):
        if not os.access(b, os.X_OK):
            log(f"FAIL: {b} is not an executable")
            return 1

    def on_signal(signum, frame):
        raise Terminated(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    lock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    deadline = time.monotonic() + 120
    while True:  # one run at a time on this machine: the cleanup removes every opbn- namespace
        try:
            lock.bind(LOCK_NAME)
            break
        except OSError:
            if time.monotonic() > deadline:
                log("FAIL: another multinode test held the lock for 120 s")
                return 1
            time.sleep(1)

    t_start = time.monotonic()
    failures, results = [], []
    tmp = None
    try:
        leftovers = our_namespaces() + our_links()
        if leftovers:
            log(f"removing leftovers of an earlier run: {', '.join(leftovers)}")
        orphans = kill_orphans()
        if orphans:
            log(f"killed {orphans} processes left by an earlier run")
        for p in cleanup_network():
            log(f"warning: {p}")
        cleanup_stale_tempdirs()
        try:
            probe()
            setup_network()
        except Skip as e:
            log(f"SKIP: {e}")
            return SKIP
        tmp = tempfile.mkdtemp(prefix="opbn-multinode-")
        agent, hostfile = write_agent(tmp)
        os.makedirs(args.out, exist_ok=True)
        log(f"nodes: {', '.join(n['name'] + ' ' + n['ip'] for n in NODES)}; mpirun in the root namespace "
            f"at {ROOT_IP}; {RANKS_PER_NODE} ranks per node")

        if args.only != "faults":
            small = ["--backend", "mpi", "--op", "all_reduce,all_gather", "-b", "1K", "-e", "64K", "-f", "8",
                     "-n", "5", "-w", "1", "--max-time", "0.2", "--quiet", "--timeout", "30"]
            healthy = [
                ("bench_ccl, world of 6", args.bench_ccl, "ccl_world", small, "ccl", "yes"),
                ("bench_ccl --group-size 2", args.bench_ccl, "ccl_group2", small + ["--group-size", "2"], "ccl", "no"),
                ("bench_ccl --group-size 3", args.bench_ccl, "ccl_group3", small + ["--group-size", "3"], "ccl", "yes"),
                ("bench_ccl --model tiny --tp 3 --pp 2 --op send_recv", args.bench_ccl, "ccl_pp",
                 ["--backend", "mpi", "--model", "tiny", "--tp", "3", "--pp", "2", "--op", "send_recv",
                  "-n", "5", "-w", "1", "--max-time", "0.2", "--quiet", "--timeout", "30"], "ccl", "yes"),
                ("bench_fsdp --model tiny", args.bench_fsdp, "fsdp_tiny",
                 ["--model", "tiny", "--backend", "mpi", "-n", "5", "-w", "1", "--max-time", "0.2", "--quiet",
                  "--timeout", "30"], "fsdp", "yes"),
                # HSDP: shards within a node, the replicas' all-reduce one rank of each node
                ("bench_fsdp --model tiny --shard-group 2", args.bench_fsdp, "fsdp_hsdp",
                 ["--model", "tiny", "--shard-group", "2", "--backend", "mpi", "-n", "5", "-w", "1",
                  "--max-time", "0.2", "--quiet", "--timeout", "30"], "fsdp",
                 {"all_reduce": "yes", "all_gather": "no", "reduce_scatter": "no"}),
            ]
            if args.capture_lib:
                # The pipeline job under the capture, then replayed from its tables: the pairs were
                # 3 ranks apart (comm_stride 3), so the replay's pairs must cross nodes as the
                # job's did (it ran them on consecutive ranks, inside a node). fp32: MPI moves bf16
                # as uint16, which bench_ccl does not replay.
                captured = os.path.join(os.path.abspath(args.out), "ccl_pp_captured", "capture")
                healthy += [
                    ("bench_ccl --model tiny --tp 3 --pp 2 under the capture", args.bench_ccl,
                     "ccl_pp_captured",
                     ["--backend", "mpi", "--model", "tiny", "--tp", "3", "--pp", "2", "--op",
                      "send_recv", "--model-dtype", "fp32", "-n", "5", "-w", "1", "--max-time",
                      "0.2", "--quiet", "--timeout", "30"], "ccl", "yes",
                     [f"LD_PRELOAD={os.path.abspath(args.capture_lib)}",
                      f"OPBENCH_CAPTURE_DIR={captured}"]),
                    ("bench_ccl --capture-path of that job", args.bench_ccl, "ccl_pp_replayed",
                     ["--backend", "mpi", "--capture-path", captured, "-n", "5", "-w", "1",
                      "--max-time", "0.2", "--quiet", "--timeout", "30"], "ccl", "yes"),
                ]
            log("\n## healthy runs")
            for title, binary, sub, bench_args, kind, spans, *rank_env in healthy:
                if time.monotonic() - t_start > BUDGET:
                    failures.append(f"{title}: not run, past the {BUDGET} s budget")
                    continue
                out_dir = os.path.join(args.out, sub)
                shutil.rmtree(out_dir, ignore_errors=True)
                report_dir = os.path.join(out_dir, "reports")
                for pair in (rank_env[0] if rank_env else []):  # the capture's folder, made anew
                    if pair.startswith("OPBENCH_CAPTURE_DIR="):
                        os.makedirs(pair.split("=", 1)[1])
                job = Job(args, tmp, agent, hostfile, out_dir, binary,
                          bench_args + ["--report-dir-path", report_dir], *rank_env)
                rc = job.wait(HARD_LIMIT)
                for n in NODES:
                    kill_pids_in(n["name"])
                problems, notes, summary = check_healthy(title, job, rc, report_dir, kind, spans)
                if sub == "ccl_pp_captured":
                    problems += captured_strides(captured)
                if sub == "ccl_pp_replayed":
                    problems += replayed_strides(report_dir)
                log(("ok   " if not problems else "FAIL ") + summary)
                for note in notes:
                    log("     " + note)
                for p in problems[:10]:
                    log("     - " + p)
                if problems:
                    log("     stderr tail:\n" + "\n".join("       " + l for l in job.stderr().splitlines()[-15:]))
                    failures.append(title)

        if args.only != "healthy":
            log(f"\n## faults (bench_ccl --timeout {CCL_TIMEOUT}, mpirun --timeout {MPIRUN_TIMEOUT}; "
                f"each must end within {args.fault_bound:g} s of the fault; a lost link within the job limit)")
            for kind in ("link", "link_between", "kill", "stop"):
                if time.monotonic() - t_start > BUDGET:
                    failures.append(f"fault {kind}: not run, past the {BUDGET} s budget")
                    continue
                r = run_fault(args, tmp, agent, hostfile, kind)
                if r.get("no_start") and time.monotonic() - t_start < BUDGET:
                    # a launch that never got going is not the fault under test: once more
                    first = r
                    log(f"note: {r['fault']}: no row within {FIRST_ROW_LIMIT} s ({'; '.join(r['notes'])}); "
                        f"trying once more (first attempt kept in fault_{kind})")
                    r = run_fault(args, tmp, agent, hostfile, kind, attempt="_retry")
                    r["notes"].append(f"second attempt: the first wrote no row within {FIRST_ROW_LIMIT} s "
                                      f"(exit {first['rc']}; snapshot in fault_{kind}/snapshot.txt)")
                results.append(r)
                secs = "-" if r["seconds"] is None else f"{r['seconds']:.1f} s"
                log(("ok   " if not r["problems"] else "FAIL ") +
                    f"{r['fault']}: exit {r['rc']}, {secs} after the fault, {r['rows']} rows")
                for note in r["notes"]:
                    log("     " + note)
                for l in r["lines"]:
                    log("     > " + l)
                if not (r["names_rank"] and r["names_host"]):
                    extra = " (the culprit's IP appears in an Open MPI line)" if r["names_ip_only"] else ""
                    log(f"     culprit not named by opbench: rank {'yes' if r['names_rank'] else 'no'}, "
                        f"host {'yes' if r['names_host'] else 'no'}{extra}"
                        + ("" if args.require_culprit else " (reported only; --require-culprit fails on it)"))
                for p in r["problems"]:
                    log("     - " + p)
                if r["problems"]:
                    failures.append(r["fault"])
            log("\n" + fault_table(results))
    except Terminated as e:
        log(f"FAIL: stopped by {e}")
        failures.append("terminated")
    finally:
        kill_orphans()
        problems = cleanup_network()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        for p in problems:
            log(f"FAIL: cleanup: {p}")
            failures.append("cleanup")
        lock.close()
    took = time.monotonic() - t_start
    if failures:
        log(f"\nFAIL ({took:.0f} s): {'; '.join(failures)}. Reports and logs kept in {args.out}")
        return 1
    if not args.keep:
        for sub in ("ccl_world", "ccl_group2", "ccl_group3", "ccl_pp", "fsdp_tiny", "fsdp_hsdp", "fault_link", "fault_link_between",
                    "fault_kill", "fault_stop", "fault_link_retry", "fault_link_between_retry", "fault_kill_retry",
                    "fault_stop_retry"):
            shutil.rmtree(os.path.join(args.out, sub), ignore_errors=True)
    log(f"\nPASS ({took:.0f} s)" + (f"; reports in {args.out}" if args.keep else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
