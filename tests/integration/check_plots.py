#!/usr/bin/env python3
"""Runs scripts/plot_report.py on reports from real runs and checks every PNG it writes: it
exists, is a valid PNG (signature and IHDR), is at least 10 KB (a chart, not an empty canvas),
and the plot kind matches the report.

Usage: check_plots.py PLOT_SCRIPT OUT_DIR REPORT:KIND ...
"""
import os
import shutil
import struct
import subprocess
import sys

from report_check import verdict


def main() -> int:
    script, out, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
    shutil.rmtree(out, ignore_errors=True)
    reports = [s.rsplit(":", 1)[0] for s in specs]
    proc = subprocess.run([sys.executable, script, *reports, "--out", out], capture_output=True, text=True, timeout=300)
    problems = [] if proc.returncode == 0 else [f"exit {proc.returncode}: {proc.stderr}"]
    written = proc.stdout.split()
    for spec, png in zip(specs, written):
        kind = spec.rsplit(":", 1)[1]
        if not png.endswith(f"_{kind}.png"):
            problems.append(f"{spec}: plotted as {png}")
        if not os.path.exists(png):
            problems.append(f"{png}: missing")
            continue
        data = open(png, "rb").read()
        if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
            problems.append(f"{png}: not a PNG")
        width, height = struct.unpack(">II", data[16:24])
        if len(data) < 10_000 or width < 400 or height < 300:
            problems.append(f"{png}: too small ({len(data)} bytes, {width}x{height})")
    if len(written) != len(specs):
        problems.append(f"{len(written)} PNGs for {len(specs)} reports")
    return verdict(problems, None, "ok: " + " ".join(written))


if __name__ == "__main__":
    sys.exit(main())
