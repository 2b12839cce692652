#!/usr/bin/python3
"""Where a memory-bound operator's time goes, kernel by kernel: bench_memops run once per case
under Nsight Compute (ncu), which times every kernel it launches alone (gpu__time_duration), so
that an operator under its target (issue 41: 85% of the copy rate) shows which of its kernels
falls short, or which fixed cost (a sort, a second pass, a column reduction) eats its time.

  scripts/kernel_times.py --bench-memops BIN --out DIR [--ncu NCU] [--shapes-json-path FILE]
                          [--dtype bf16]

One table row per kernel of each case: its launches, mean µs, its time per call of the operator
and its share of the operator's kernel time; then per case the kernels' sum per call and the GB/s
the operator's bytes (the report's io_bytes) would move in that time, against the report's copy
rate. The case's calls are the smallest launch count above one that divides every larger one:
every kernel of the operator runs once a call or a whole number of times (a sort's passes), while
a kernel that sets the operands up (cross-entropy's wide logits scaled once, a backward's forward
run once to derive its inputs) runs fewer times; such kernels are listed as set-up, outside the
operator's sum. Kernels the run launches around the operator by name (fills of the operands, the
clock probe, the stream blocker) are left out. ncu serialises the kernels and times each alone:
the sum leaves out the gaps between launches that the event-timed figures include. Each case's
ncu output is kept in DIR/<case>.ncu.log.

Without ncu, or where it cannot read the GPU's counters (gVisor), it prints why and exits 0:
a diagnostic that could not run fails nothing. Where ncu times nothing under the environment it
was given, it is tried once more with its own library folders first on LD_LIBRARY_PATH (a
PyTorch wheel's CUPTI folder there holds other builds of libnvperf): beside the ncu it runs, or
in the newest install under /opt/nvidia/nsight-compute. Exit 2 for bad arguments.
"""
import argparse
import csv
import glob
import io
import json
import os
import re
import shutil
import subprocess
import sys

# The cases of issue 41's tables that stayed under the target on an H200 (2026-11-28), at Llama
# 3.1 8B's shapes and 8192 tokens.
CASES = [
    {"name": "embedding-bwd", "op": "embedding", "pass": "bwd", "rows": 8192, "cols": 4096,
     "vocab": 128256},
    {"name": "cross-entropy", "op": "cross_entropy", "rows": 8192, "cols": 128256},
    {"name": "rmsnorm-bwd", "op": "rmsnorm", "pass": "bwd", "rows": 8192, "cols": 4096},
    {"name": "layernorm-fwd", "op": "layernorm", "pass": "fwd", "rows": 8192, "cols": 4096},
    {"name": "layernorm-bwd", "op": "layernorm", "pass": "bwd", "rows": 8192, "cols": 4096},
]
# What the run launches around the operator (common/cuda: fill.cu, clock_probe.cu; memops'
# index fill); the stream blocker (spin_until_released) is no "kernel" by name and never timed.
AROUND = ("fill_kernel", "fill_indices_kernel", "spin_kernel")
NS_PER = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6,
          "second": 1e9, "s": 1e9}


def find_ncu(given):
    if given:
        return given if os.access(given, os.X_OK) else None
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu",
                    "/usr/local/cuda/nsight-compute*/ncu"):
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[-1]
    return None


def ncu_library_path(ncu):
    """Nsight Compute's own library folders (host/ and target/ beside the ncu it runs, else in
    the installs under /opt/nvidia/nsight-compute and CUDA's nsight-compute*, which a wrapper
    script such as /usr/local/cuda/bin/ncu starts), joined for LD_LIBRARY_PATH; "" when there
    are none (a stand-in)."""
    roots = [os.path.dirname(os.path.realpath(ncu))]
    if not glob.glob(os.path.join(roots[0], "host", "*")):
        roots = sorted(glob.glob("/opt/nvidia/nsight-compute/*") +
                       glob.glob("/usr/local/cuda/nsight-compute*"))[-1:]
    found = sorted(d for root in roots for sub in ("host", "target")
                   for d in glob.glob(os.path.join(root, sub, "*")))
    return ":".join(d for d in found if os.path.isdir(d))


def kernel_rows(text):
    """(kernel name, nanoseconds) of every gpu__time_duration row of ncu's --csv output; the
    program's own lines and ncu's ==PROF== lines around it are passed over."""
    lines = [l for l in text.splitlines() if l.startswith('"')]
    out = []
    for r in csv.DictReader(io.StringIO("\n".join(lines))):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        scale = NS_PER.get((r.get("Metric Unit") or "").strip())
        try:
            value = float((r.get("Metric Value") or "").replace(",", ""))
        except ValueError:
            continue
        if scale is None:
            continue
        out.append((r.get("Kernel Name") or "?", value * scale))
    return out


def short(name):
    """A kernel's name without its namespaces, template arguments and parameters (ncu writes an
    anonymous namespace as <unnamed>::, which must not be taken for template arguments)."""
    for anonymous in ("<unnamed>::", "(anonymous namespace)::"):
        name = name.replace(anonymous, "")
    for cut in ("<", "("):
        if cut in name:
            name = name[:name.index(cut)]
    words = name.split()  # "void ns::kernel": the return type before it
    return (words[-1] if words else name).split("::")[-1] or name


def call_count(counts):
    """The operator's calls, from its kernels' launch counts: the smallest count above one that
    divides every larger count. Each kernel of a call runs once or a whole number of times a call
    (a sort's passes, LayerNorm's two column sums: twice a call, which outnumber no kernel that
    runs once), while a set-up kernel runs once a case; the run makes at least three calls (one
    warm-up, two samples). Where no count fits, the largest (nothing is then set-up)."""
    distinct = sorted(set(counts))
    for n in distinct:
        if n > 1 and all(c % n == 0 for c in distinct if c >= n):
            return n
    return distinct[-1]


def case_table(case, times, report):
    """The rows of one case and its closing line, from its kernels' times and its report row."""
    by = {}
    for name, ns in times:
        if short(name) in AROUND:
            continue
        by.setdefault(short(name), []).append(ns)
    if not by:
        return [], f"{case['name']}: no kernel of the operator was timed"
    calls = call_count([len(v) for v in by.values()])
    setup = {name: v for name, v in by.items() if len(v) < calls}
    by = {name: v for name, v in by.items() if len(v) >= calls}
    total = sum(sum(v) for v in by.values()) / calls
    rows = []
    for name, v in sorted(by.items(), key=lambda kv: -sum(kv[1])):
        per_call = sum(v) / calls
        rows.append(f"| {case['name']} | {name} | {len(v)} | {sum(v) / len(v) / 1e3:.1f} | "
                    f"{per_call / 1e3:.1f} | {100 * per_call / total:.0f}% |")
    for name, v in sorted(setup.items(), key=lambda kv: -sum(kv[1])):
        rows.append(f"| {case['name']} | {name} | {len(v)} | {sum(v) / len(v) / 1e3:.1f} | – | "
                    "set-up |")
    line = f"{case['name']}: its kernels take {total / 1e3:.1f} µs a call ({calls} calls timed)"
    try:
        io_bytes = float(report.get("io_bytes") or 0)
        copy = float(report.get("copy_rate_gbps") or 0)
    except ValueError:
        io_bytes = copy = 0.0
    if io_bytes > 0:
        gbps = io_bytes / total
        line += f": {gbps:.0f} GB/s for its {io_bytes / 1e6:.1f} MB"
        if copy > 0:
            line += f", {100 * gbps / copy:.0f}% of the run's copy rate ({copy:.0f} GB/s)"
    return rows, line


def report_row(folder):
    for path in glob.glob(os.path.join(folder, "memops*.csv")):
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                return r
    return {}


def case_name(case):
    return case.get("name", case.get("op", "case"))


def case_names_problem(cases):
    """Why the cases cannot be run, or None: a list of objects whose names (`name`, else `op`)
    are plain file names, each once (they name the case's files in --out)."""
    if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
        return "expected a list of case objects, as bench_memops' --shapes-json-path takes"
    seen = set()
    for i, case in enumerate(cases):
        name = case_name(case)
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", name):
            return (f"entry {i} name: {json.dumps(name)} is not a plain file name (letters, "
                    "digits, '_', '.', '-'): it names the case's files in --out")
        if name in seen:
            return f"entry {i} name: '{name}' names two cases"
        seen.add(name)
    return None


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-memops", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ncu", default=None, help="Nsight Compute's CLI (default: ncu on the PATH, "
                    "then /usr/local/cuda/bin and /opt/nvidia/nsight-compute)")
    ap.add_argument("--shapes-json-path", default=None,
                    help="the cases, in bench_memops' shapes format (default: issue 41's five)")
    ap.add_argument("--dtype", default="bf16")
    a = ap.parse_args(argv)
    if not os.access(a.bench_memops, os.X_OK):
        print(f"error: kernel_times.py: --bench-memops: {a.bench_memops} is not an executable",
              file=sys.stderr)
        return 2
    cases = CASES
    if a.shapes_json_path:
        try:
            with open(a.shapes_json_path) as f:
                cases = json.load(f)
        except (OSError, ValueError) as e:
            print(f"error: kernel_times.py: --shapes-json-path: {e}", file=sys.stderr)
            return 2
    bad = case_names_problem(cases)
    if bad:
        print(f"error: kernel_times.py: --shapes-json-path {a.shapes_json_path}: {bad}",
              file=sys.stderr)
        return 2
    ncu = find_ncu(a.ncu)
    if ncu is None:
        print("kernel times: not measured: no Nsight Compute (ncu) found")
        return 0
    os.makedirs(a.out, exist_ok=True)
    # Each case's files are this script's (plot_report.py's rule: written only where no file is,
    # or over one an opbench run wrote); its report folder is bench_memops', which keeps an
    # earlier run's reports apart itself.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import plot_report
    for case in cases:  # every case's files, before anything runs
        for suffix in (".json", ".ncu.log"):
            plot_report.claim(os.path.join(a.out, case_name(case) + suffix), "kernel_times.py",
                              "--out")
    lines = []
    for case in cases:
        name = case_name(case)
        folder = os.path.join(a.out, name)
        shapes = os.path.join(a.out, name + ".json")
        log = os.path.join(a.out, name + ".ncu.log")
        with open(shapes, "w") as f:
            json.dump([case], f)
        # Nsight Compute CLI manual: --print-kernel-base function, the name without its
        # parameters and template arguments (the default, demangled, has both);
        # --clock-control none: the clocks as the GPU sets them (the device's METHOD.md);
        # --cache-control none: each kernel finds the cache as the one before it left it, as in
        # the operator's own run. Samples short: each kernel costs ncu milliseconds.
        cmd = [ncu, "--csv", "--print-units", "base", "--print-kernel-base", "function",
               "--clock-control", "none", "--cache-control", "none",
               "--metrics", "gpu__time_duration.sum",
               "--kernel-name", "regex:[Kk]ernel", a.bench_memops, "--backend", "cuda",
               "--provider", "cuda", "--shapes-json-path", shapes, "--dtype", a.dtype,
               "--warmup", "1", "--warmup-time", "0", "--min-samples", "2", "--max-samples", "2",
               "--min-time", "0", "--max-time", "0.001", "--quiet", "--report-dir-path", folder]
        # The C locale: under another, ncu writes 65.77 as "65,77" (a comma this parser would
        # take for a thousands separator).
        env = dict(os.environ, LC_ALL="C")
        result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
        times = kernel_rows(result.stdout)
        own = ncu_library_path(ncu) if not times and not lines else ""
        if own:  # the first case timed nothing: once more with ncu's libraries first
            earlier = os.environ.get("LD_LIBRARY_PATH")
            env["LD_LIBRARY_PATH"] = own + (":" + earlier if earlier else "")
            retry = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, env=env)
            retried = kernel_rows(retry.stdout)
            if retried:
                print(f"kernel times: ncu timed nothing until its own libraries ({own}) came "
                      "first on LD_LIBRARY_PATH")
                result, times = retry, retried
        with open(log, "w") as f:
            f.write(result.stdout + result.stderr)
        refused = [l for l in result.stderr.splitlines() if l.startswith("error:")]
        if not times and result.returncode == 2 and refused:  # bench_memops refused the case
            print(f"error: kernel_times.py: bench_memops refused case {name}: "
                  f"{refused[0][len('error: '):]}", file=sys.stderr)
            return 2
        if not times:
            said = [l for l in (result.stderr + result.stdout).splitlines()
                    if "==ERROR==" in l or "error" in l.lower()]
            print(f"kernel times: not measured: ncu timed no kernel of {name} (exit "
                  f"{result.returncode}{': ' + said[0].strip() if said else ''}; its output: "
                  f"{log})")
            return 0
        rows, line = case_table(dict(case, name=name), times, report_row(folder))
        if not lines:  # the header once something was timed; each case's rows as it ends
            print("| case | kernel | launches | mean µs | µs a call | share |")
            print("|---|---|---:|---:|---:|---:|")
        for r in rows:
            print(r, flush=True)
        lines.append(line)
    print()
    for line in lines:
        print(f"- {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
