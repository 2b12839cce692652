#!/usr/bin/python3
"""bench_step --from-reports names, for each operator no report holds, the command that measures
it. This runs each command it names (on the CPU providers, briefly), then bench_step again over
those reports: every operator must then have a time, so every command measured exactly the row
bench_step looks for. The operators no sweep reproduces (rotary embedding, routed experts) are
named with `bench_step --measure`: those, and only those, may still lack a time.

Usage: check_measure_hints.py OUT BIN_DIR -- BENCH_STEP_ARGS...
(BIN_DIR holds gemm/bench_gemm, attention/bench_attention, memops/bench_memops, step/bench_step.)
Prints "hints-ok N" (N commands run) and exits 0, or a FAIL line and exits 1.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

BINARIES = {"bench_gemm": "gemm", "bench_attention": "attention", "bench_memops": "memops"}
# One short sample a case; bench_memops given a roof (its measured one takes most of a run's
# time, and several times that under the sanitizers).
QUICK = ["--backend", "cpu", "--min-time", "0", "--max-time", "0.01", "--min-samples", "1",
         "--warmup", "1", "--quiet"]
ROOF = {"bench_memops": ["--peak-bw", "20"]}


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def step(bin_dir, args, reports, out):
    return subprocess.run([os.path.join(bin_dir, "step/bench_step"), *args, "--from-reports",
                           ",".join(reports), "--report-dir-path", out],
                          capture_output=True, text=True)


def main():
    out, bin_dir = sys.argv[1], sys.argv[2]
    args = sys.argv[sys.argv.index("--") + 1:]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    # One report to start from (--from-reports wants at least one): a row no operator matches.
    seed = os.path.join(out, "seed")
    subprocess.run([os.path.join(bin_dir, "memops/bench_memops"), *QUICK, *ROOF["bench_memops"],
                    "--op", "copy",
                    "--size", "4096", "--cols", "4096", "--report-dir-path", seed], check=True,
                   capture_output=True)
    first = step(bin_dir, args, [seed], os.path.join(out, "step_before"))
    # Operators with the same arguments share a command (and a row).
    hints = list(dict.fromkeys(re.findall(r"\bmeasure: (.*)$", first.stdout + first.stderr, re.M)))
    if first.returncode != 1 or not hints:
        fail(f"bench_step without the reports: exit {first.returncode}, {len(hints)} hints")
    reports = [seed]
    by_step = [h for h in hints if h.startswith("bench_step --measure")]
    hints = [h for h in hints if h not in by_step]
    for i, hint in enumerate(hints):
        words = shlex.split(hint.split(", FILE holding ")[0])
        if words[0] not in BINARIES:
            fail(f"a hint that is not a command of one of {sorted(BINARIES)}: {hint}")
        if "FILE" in words:  # attention: the entry after "FILE holding", as a shapes file
            path = os.path.join(out, f"shapes{i}.json")
            with open(path, "w") as f:
                json.dump(json.loads(hint.split(", FILE holding ", 1)[1]), f)
            words[words.index("FILE")] = path
        folder = os.path.join(out, f"hint{i}")
        run = subprocess.run([os.path.join(bin_dir, BINARIES[words[0]], words[0]), *words[1:],
                              *QUICK, *ROOF.get(words[0], []), "--report-dir-path", folder],
                             capture_output=True, text=True)
        if run.returncode != 0:
            fail(f"{hint}: exit {run.returncode}: {run.stderr.strip()[-300:]}")
        reports.append(folder)
    again = step(bin_dir, args, reports, os.path.join(out, "step_after"))
    text = again.stdout + again.stderr
    left = re.findall(r"^ +(.*?) \[.*\bmeasure: (.*)$", text, re.M)
    others = [f"{name}: {hint}" for name, hint in left if not hint.startswith("bench_step --measure")]
    if others or (again.returncode != 0) != bool(by_step):
        fail(f"after the {len(hints)} commands, exit {again.returncode}; still missing: "
             f"{others[:3] or [name for name, _ in left][:3]}")
    first_left = len(re.findall(r"\bmeasure: bench_step --measure", first.stdout + first.stderr))
    if len(left) != first_left:
        fail(f"{first_left} operators were named for bench_step --measure, {len(left)} are left")
    print(f"hints-ok {len(hints)}" + (f", {len(left)} for bench_step --measure" if left else ""))


if __name__ == "__main__":
    main()
