#!/usr/bin/env python3
"""Runs a command that must refuse its input: exit code 2 (never a signal), exactly one line on
stderr starting with 'error:', containing every --contains text, and for each --note-contains text
a line starting with 'note:' that contains it (what a refusal adds beside its error).

Usage: expect_error.py [--contains TEXT]... [--note-contains TEXT]... -- COMMAND [ARGS...]
"""
import argparse
import subprocess
import sys


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--contains", action="append", default=[])
    parser.add_argument("--note-contains", action="append", default=[])
    parser.add_argument("--exit-code", type=int, default=2)
    argv = sys.argv[1:]
    if "--" not in argv:
        parser.error("the command follows --")
    split = argv.index("--")
    args = parser.parse_args(argv[:split])
    command = argv[split + 1:]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    problems = []
    if proc.returncode < 0:
        problems.append(f"died on signal {-proc.returncode}")
    elif proc.returncode != args.exit_code:
        problems.append(f"exit code {proc.returncode}, expected {args.exit_code}")
    if len(errors) != 1:
        problems.append(f"{len(errors)} 'error:' lines on stderr, expected 1")
    for text in args.contains:
        if not any(text in line for line in errors):
            problems.append(f"the error line does not contain {text!r}")
    notes = [line for line in proc.stderr.splitlines() if line.startswith("note:")]
    for text in args.note_contains:
        if not any(text in line for line in notes):
            problems.append(f"no 'note:' line on stderr contains {text!r}")
    if problems:
        print("command:", " ".join(command))
        print("stderr:", proc.stderr)
        print("problems:", "; ".join(problems))
        return 1
    print("ok:", errors[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
