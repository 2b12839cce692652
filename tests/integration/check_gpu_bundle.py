#!/usr/bin/python3
"""scripts/gpu_bundle.sh and its wrapper, on the CPU paths: the bundle's binaries load the
bundle's libraries, in a clean environment, with the machine's own copies out of reach.

  check_gpu_bundle.py --build BUILD --out DIR

Packs BUILD into DIR/.gpu (xz at its fastest: the test's time is not the bundle's size), then,
under `env -i DIR/.gpu/run` (unpacking into DIR/unpacked: OPBENCH_GPU_ROOT; the bundle folder
stays under 40 MiB after it; and once more, with a PATH that has no xz program, into
DIR/unpacked-by-python: the same tree, by Python's tarfile):
  - ldd of bench_gemm and bench_ccl resolves fmt, OpenBLAS and Open MPI into the bundle's lib/;
  - bench_gemm --backend cpu on one 64^3 fp32 GEMM writes one ok row;
  - trace_convert converts tests/data/trace's GPU step (7 shapes);
  - the bundle's mpirun (the one on PATH) starts 2 ranks of bench_ccl --backend mpi: all_reduce
    at 1K and 8K, in and out of place, 4 ok rows.
Then, where this process may make a mount namespace (root, `unshare -m`), the same three runs
with the system's copies of every packed library, Open MPI's and PMIx's component trees, help
texts and defaults and orterun hidden (bind-mounted over by /dev/null or an empty folder): what
runs there can only have come from the bundle. Prints which of the two it did.
Exit 0 when everything holds, 1 otherwise.
"""
import argparse
import csv
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
FIXTURE = os.path.join(ROOT, "tests", "data", "trace", "host-a_4242.1700000000000.pt.trace.json")
problems = []


def check(cond, message):
    if not cond:
        problems.append(message)
    return cond


def runs(root, out, tag):
    """The three runs under `env -i run`, as one shell script (so a namespace can wrap it)."""
    b = os.path.join(root, "build")
    d = os.path.join(out, tag)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    q = shlex.quote
    script = f"""
{q(b)}/gemm/bench_gemm --backend cpu --m 64 --n 64 --k 64 --dtype fp32 --max-time 0.05 --quiet \\
  --report-dir-path {q(d)}/gemm > {q(d)}/gemm.log 2>&1; echo "bench_gemm $?"
{q(b)}/trace/trace_convert --trace-path {q(FIXTURE)} --out {q(d)}/tc > {q(d)}/tc.log 2>&1; echo "trace_convert $?"
echo "mpirun $(command -v mpirun)"
timeout 120 mpirun -np 2 --oversubscribe --mca mpi_yield_when_idle 1 {q(b)}/collectives/bench_ccl \\
  --backend mpi --op all_reduce -b 1K -e 8K -f 8 --quiet --report-dir-path {q(d)}/ccl > {q(d)}/ccl.log 2>&1
echo "bench_ccl $?"
"""
    return d, script


def judge(d, output, root, tag):
    print(f"[{tag}]\n{output.strip()}")
    lines = dict(line.split(" ", 1) for line in output.strip().splitlines() if " " in line)
    for what in ("bench_gemm", "trace_convert", "bench_ccl"):
        if not check(lines.get(what) == "0", f"{tag}: {what} exited {lines.get(what)}"):
            log = {"bench_gemm": "gemm.log", "trace_convert": "tc.log", "bench_ccl": "ccl.log"}[what]
            with open(os.path.join(d, log), errors="replace") as f:
                print(f"{what}'s log:\n" + f.read()[-1500:])
    check(lines.get("mpirun", "").startswith(os.path.join(root, "ompi", "bin")),
          f"{tag}: mpirun is {lines.get('mpirun')}, not the bundle's")
    for path, want in ((os.path.join(d, "gemm", "gemm_sweep.csv"), 1),
                       (os.path.join(d, "ccl", "ccl_all_reduce.csv"), 4)):
        rows = []
        if os.path.exists(path):
            with open(path, newline="") as f:
                rows = list(csv.DictReader(f))
        check(len(rows) == want and all(r["status"] == "ok" for r in rows),
              f"{tag}: {path}: {len(rows)} rows ({[r.get('status') for r in rows]}), expected {want} ok")
    tables = [f for f in os.listdir(os.path.join(d, "tc"))] if os.path.isdir(os.path.join(d, "tc")) else []
    check(any(t.endswith(".csv") for t in tables), f"{tag}: trace_convert wrote no table")


def can_unshare():
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True)
    return p.returncode == 0


def hide_commands(bundle):
    """Shell lines that bind-mount away the system's copies of what the bundle packs."""
    empty = tempfile.mkdtemp(prefix="empty_")
    lines = []
    with open(os.path.join(bundle, "MANIFEST")) as f:
        packed = [l.split("\t")[1] for l in f if l.split("\t")[1].startswith("lib/")]
    for so in packed:
        name = so[len("lib/"):]
        for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu/pmix2/lib",
                  "/usr/lib/x86_64-linux-gnu/openmpi/lib"):
            p = os.path.join(d, name)
            if os.path.exists(p):
                lines.append(f"mount --bind /dev/null {shlex.quote(os.path.realpath(p))}")
    for d in ("/usr/lib/x86_64-linux-gnu/openmpi", "/usr/lib/x86_64-linux-gnu/pmix2",
              "/usr/share/openmpi", "/etc/openmpi"):
        if os.path.isdir(d):
            lines.append(f"mount --bind {shlex.quote(empty)} {d}")
    orterun = shutil.which("orterun")
    if orterun:
        lines.append(f"mount --bind /dev/null {shlex.quote(os.path.realpath(orterun))}")
    return lines


def tree(top):
    """Every path under top with its mode, kind, link target and size."""
    out = []
    for d, dirs, files in os.walk(top):
        for name in dirs + files:
            path = os.path.join(d, name)
            st = os.lstat(path)
            link = os.readlink(path) if os.path.islink(path) else ""
            size = st.st_size if stat.S_ISREG(st.st_mode) else 0
            out.append((os.path.relpath(path, top), st.st_mode, link, size))
    return sorted(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    out = os.path.abspath(a.out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    bundle = os.path.join(out, ".gpu")
    p = subprocess.run(["bash", os.path.join(ROOT, "scripts", "gpu_bundle.sh"), "--build", a.build,
                        "--out", bundle], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, XZ_OPT="-0"))
    print(p.stdout.strip())
    if not check(p.returncode == 0, f"gpu_bundle.sh exited {p.returncode}: {p.stderr[-600:]}"):
        return report()
    for f in ("run", "bundle.tar.xz", "MANIFEST"):
        check(os.path.exists(os.path.join(bundle, f)), f"the bundle has no {f}")
    with open(os.path.join(bundle, "MANIFEST")) as f:
        packed = {l.split("\t")[1] for l in f}
    for want in ("build/gemm/bench_gemm", "build/step/bench_step", "build/trace/trace_convert",
                 "build/capture/libopbench_capture.so", "lib/libfmt.so.9", "lib/libopenblas.so.0",
                 "lib/libmpi.so.40", "ompi/bin/mpirun"):
        check(want in packed, f"MANIFEST lacks {want}")
    run = os.path.join(bundle, "run")
    # the wrapper unpacks outside the bundle folder (what a device call carries stays small)
    unpacked = os.path.join(out, "unpacked")
    p = subprocess.run(["env", "-i", f"OPBENCH_GPU_ROOT={unpacked}", run, "printenv", "OPBENCH_BUILD_DIR"],
                       capture_output=True, text=True, timeout=120)
    check(p.stdout.strip() == os.path.join(unpacked, "build"),
          f"OPBENCH_BUILD_DIR under run: {p.stdout.strip()!r} ({p.stderr[-300:]})")
    # Without the xz program (Debian ranks it "standard", not "required"): Python's tarfile
    # unpacks the very same tree, modes and links included.
    noxz = os.path.join(out, "path-without-xz")
    os.makedirs(noxz)
    for name in os.listdir("/usr/bin"):
        if name not in ("xz", "unxz", "xzcat", "lzma", "unlzma", "lzcat"):
            os.symlink(os.path.join("/usr/bin", name), os.path.join(noxz, name))
    by_python = os.path.join(out, "unpacked-by-python")
    p = subprocess.run(["env", "-i", f"PATH={noxz}", f"OPBENCH_GPU_ROOT={by_python}", run, "true"],
                       capture_output=True, text=True, timeout=300)
    check(p.returncode == 0 and "no xz program: unpacking with python3's tarfile" in p.stderr,
          f"run without xz exited {p.returncode}: {p.stderr[-300:]}")
    check(tree(by_python) == tree(unpacked), "without xz, run unpacked another tree than tar -xJ")
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(bundle) for f in fs)
    check(size < 40 << 20, f"the bundle folder holds {size} bytes after a run, 40 MiB at most")
    root = unpacked
    run = f"OPBENCH_GPU_ROOT={shlex.quote(unpacked)} {shlex.quote(run)}"
    p = subprocess.run(f"env -i {run} ldd {root}/build/gemm/bench_gemm {root}/build/collectives/bench_ccl",
                       shell=True, capture_output=True, text=True, timeout=120)
    lib = os.path.join(root, "lib")
    for name in ("libfmt.so.9", "libopenblas.so.0", "libmpi.so.40"):
        where = [l.split("=>")[1].split()[0] for l in p.stdout.splitlines() if l.strip().startswith(name + " ")]
        check(where and all(w.startswith(lib) for w in where), f"under run, {name} resolves to {where}")

    d, script = runs(root, out, "env -i")
    p = subprocess.run(f"env -i {run} bash -c {shlex.quote(script)}", shell=True, capture_output=True,
                       text=True, timeout=300)
    judge(d, p.stdout, root, "env -i")
    if can_unshare():
        d, script = runs(root, out, "hidden")
        inner = "set -e\n" + "\n".join(hide_commands(bundle)) + "\nset +e\n" + \
            f"exec env -i {run} bash -c {shlex.quote(script)}\n"
        p = subprocess.run(["unshare", "-m", "--propagation", "private", "bash", "-c", inner],
                           capture_output=True, text=True, timeout=300)
        check(p.returncode == 0, f"the hidden run exited {p.returncode}: {p.stderr[-400:]}")
        judge(d, p.stdout, root, "system copies hidden")
    else:
        print("(no mount namespace here: the runs with the system's copies hidden were not made)")
    return report()


def report() -> int:
    for m in problems:
        print("FAIL:", m)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
