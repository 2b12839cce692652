#!/usr/bin/env python3
"""One flag vocabulary: a concept has one spelling in every binary that has it (issue 30 item 5).

Usage: check_flag_vocabulary.py BUILD_DIR

For each concept of the table below, every binary that has the concept shows its one spelling in
--help, and no binary shows another spelling of it there (old spellings and nccl-tests' names stay
accepted, listed in docs/inputs.md, hidden from --help or named as the alias). Then the old
spellings are shown to mean the same: a dry run with them prints what it prints with the new ones.
"""
import os
import re
import subprocess
import sys
from report_check import verdict

BINARIES = {"bench_gemm": "gemm/bench_gemm", "bench_attention": "attention/bench_attention",
            "bench_memops": "memops/bench_memops", "bench_ccl": "collectives/bench_ccl",
            "bench_fsdp": "fsdp/bench_fsdp", "bench_step": "step/bench_step"}
ALL = set(BINARIES)
# concept: (the spelling, the binaries that have the concept, spellings no --help may show)
CONCEPTS = {
    "data type": ("--dtype", {"bench_gemm", "bench_attention", "bench_memops", "bench_ccl", "bench_step"},
                  []),
    "reduction": ("--redop", {"bench_ccl", "bench_fsdp"}, ["--reduce-op"]),
    "HSDP shard group": ("--shard-group", {"bench_fsdp", "bench_step"}, ["--shard-group-size"]),
    "gradient reduction dtype": ("--grad-dtype", {"bench_fsdp", "bench_step"}, ["--reduce-dtype"]),
    "sharding": ("--sharding", {"bench_fsdp", "bench_step"}, []),
    "model": ("--model", ALL, []),
    "models file": ("--model-config-path", ALL, []),
    "tensor parallelism": ("--tp", {"bench_gemm", "bench_attention", "bench_memops", "bench_ccl", "bench_step"}, []),
    "report folder": ("--report-dir-path", ALL, []),
    "summary": ("--summary-path", ALL, []),
    "dry run": ("--dry-run", ALL, []),
    "backend": ("--backend", ALL, []),
}


def flags_of(help_text):
    """The long flags --help shows."""
    return set(re.findall(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*)", help_text))


def main():
    build = sys.argv[1]
    exe = {name: os.path.join(build, path) for name, path in BINARIES.items()}
    shown = {}
    for name, path in exe.items():
        proc = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=60)
        shown[name] = flags_of(proc.stdout)
    problems = []
    for concept, (spelling, have, old) in CONCEPTS.items():
        for name in sorted(have):
            if spelling not in shown[name]:
                problems.append(f"{name} --help does not show {spelling} ({concept})")
        for name in sorted(ALL):
            for other in old:
                if other in shown[name]:
                    problems.append(f"{name} --help shows {other}, another spelling of {spelling} ({concept})")
    # The old spellings still mean the same.
    same = [
        ("bench_fsdp", ["--model", "tiny", "--world-size", "4", "--dry-run", "--grad-dtype", "bf16",
                        "--redop", "sum", "--shard-group", "2"],
         ["--model", "tiny", "--world-size", "4", "--dry-run", "--reduce-dtype", "bf16",
          "--reduce-op", "sum", "--shard-group-size", "2"]),
        ("bench_ccl", ["--dry-run", "--world-size", "2", "--op", "all_reduce", "-b", "1K", "-e", "1K",
                       "--dtype", "bf16"],
         ["--dry-run", "--world-size", "2", "--op", "all_reduce", "-b", "1K", "-e", "1K", "-d", "bf16"]),
    ]
    for name, new, old in same:
        a = subprocess.run([exe[name]] + new, capture_output=True, text=True, timeout=60)
        b = subprocess.run([exe[name]] + old, capture_output=True, text=True, timeout=60)
        if a.returncode or b.returncode or a.stdout != b.stdout:
            problems.append(f"{name}: {' '.join(old)} does not do what {' '.join(new)} does "
                            f"(exit {a.returncode}, {b.returncode}): {a.stderr[-300:]} {b.stderr[-300:]}")
    both = subprocess.run([exe["bench_fsdp"], "--model", "tiny", "--world-size", "4", "--dry-run",
                           "--redop", "sum", "--reduce-op", "avg"], capture_output=True, text=True, timeout=60)
    if both.returncode != 2 or "--redop and --reduce-op are one flag" not in both.stderr:
        problems.append(f"a flag given under both spellings is not refused: {both.stderr[-300:]}")
    return verdict(problems, None, f"{len(CONCEPTS)} concepts over {len(BINARIES)} binaries: ok")


if __name__ == "__main__":
    sys.exit(main())
