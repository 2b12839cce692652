#!/usr/bin/python3
"""Checks docs/architecture.md's dependency rule on the sources: no family reaches into another's
internals.

  check_module_boundaries.py --root ROOT

Reads every #include "dir/file" of the C++ and CUDA sources (tests and build trees aside) and
fails on any of:
  - memops/ including anything under attention/ (cuDNN's shared layer is cudnn/, not attention's);
  - any directory but attention/ including attention's cuDNN files (attention/cudnn_*), step/
    included: step/ may use attention's case lists and runner, never its cuDNN internals;
  - cudnn/ including any family (it stands on common/ alone; the families stand on it).
It also fails when it finds suspiciously few includes, so that a change in layout cannot make it
pass by reading nothing.

Exit 0 when the rule holds, 1 with one line per include that breaks it, 2 on bad usage.
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCES = (".cpp", ".hpp", ".cu", ".cuh", ".h")
FAMILIES = ("gemm", "attention", "collectives", "fsdp", "memops", "step", "capture")


def includes(root):
    """(path relative to root, included path) for every quoted include outside tests and builds."""
    for top in sorted(os.listdir(root)):
        if top in ("tests", ".git") or top.startswith("build"):
            continue
        base = os.path.join(root, top)
        if not os.path.isdir(base):
            continue
        for folder, dirs, files in os.walk(base):
            dirs[:] = [d for d in dirs if not d.startswith("build")]
            for name in sorted(files):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for included in INCLUDE.findall(text):
                    yield os.path.relpath(path, root), included


def problems(root):
    found, bad = 0, []
    for source, included in includes(root):
        found += 1
        top = source.split(os.sep)[0]
        target = included.split("/")[0]
        if top == "memops" and target == "attention":
            bad.append(f"{source}: includes {included}: memops reaches into attention "
                       "(cuDNN's shared layer is cudnn/)")
        elif (target == "attention" and top != "attention"
              and os.path.basename(included).startswith("cudnn_")):
            bad.append(f"{source}: includes {included}: attention's cuDNN internals are its own")
        elif top == "cudnn" and target in FAMILIES:
            bad.append(f"{source}: includes {included}: cudnn/ stands on common/ alone")
    if found < 200:
        bad.append(f"only {found} includes found under {root}: is it the repository root?")
    return bad


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True)
    args = parser.parse_args()
    if not os.path.isdir(os.path.join(args.root, "cudnn")):
        print(f"error: {args.root} has no cudnn/ folder", file=sys.stderr)
        return 2
    bad = problems(args.root)
    for line in bad:
        print(line)
    if not bad:
        print("module boundaries hold")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
