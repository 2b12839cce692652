#!/usr/bin/python3
"""gpu_validate_tables.py counts the rows under 85% of the run's copy rate and, among them, those
at 85% or more of a copy of their own bytes (pct_of_copy_same_bytes): three rows worked by hand,
at 90% of the copy (not under), at 60% of the copy and 92% of a copy of its bytes (under, its
size explains it), at 60% and 70% (under, its kernel is short); then the same rows without the
same-bytes column (a report from before it): two under, no count of the sized ones.

Usage: check_validate_under_copy.py GPU_VALIDATE_TABLES; exit 0 when the verdict and the table
say so.
"""
import csv
import os
import subprocess
import sys
import tempfile

from report_check import verdict

COLUMNS = ("model op pass rows cols dtype provider time_us mem_bw_gbps copy_rate_gbps pct_of_copy "
           "pct_of_copy_same_bytes pct_peak_bw status").split()
ROWS = (("90.0", "95.0"), ("60.0", "92.0"), ("60.0", "70.0"))


def verdict_and_table(script, work, same_bytes):
    folder = os.path.join(work, "memops_8b")
    os.makedirs(folder)
    with open(os.path.join(folder, "memops_llama.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for i, (pct, same) in enumerate(ROWS):
            w.writerow(["llama", "rmsnorm", "fwd", 1024 * (i + 1), 8192, "bf16", "cuda", "10.0",
                        "3000.0", "4200.0", pct, same if same_bytes else "", "62.0", "ok"])
    for name, value in (("rc", "0"), ("time", "3"), ("md", ""), ("log", "")):
        with open(os.path.join(work, f"memops_8b.{name}"), "w") as f:
            f.write(value + "\n")
    p = subprocess.run([sys.executable, script, work, "gpu", "0", "memops_8b"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with open(os.path.join(work, "tables.md")) as f:
        return p.stdout, f.read()


def main() -> int:
    failures = []
    with tempfile.TemporaryDirectory() as work:
        said, table = verdict_and_table(sys.argv[1], os.path.join(work, "with"), True)
        want = "3 ok, 0 skipped, 0 failed; 2 under 85% of the copy rate (1 of them not under a copy of their own bytes)"
        if want not in said:
            failures.append(f"verdict: expected '{want}' in\n{said}")
        want = "2 rows under 85% of it (issue 41's target), 1 of them at 85% or more of a copy of their own bytes"
        if want not in table:
            failures.append(f"table: expected '{want}'")
        if "| 60.0 | 92.0 |" not in table:
            failures.append("table: no row with 60.0% of the copy and 92.0% of a copy of its bytes")
        said, table = verdict_and_table(sys.argv[1], os.path.join(work, "without"), False)
        if "2 under 85% of the copy rate\n" not in said.replace(" |", "\n") or "of them" in said:
            failures.append(f"without the column: expected 2 under and no sized count in\n{said}")
    return verdict(failures, None, "under the copy: ok")


if __name__ == "__main__":
    sys.exit(main())
