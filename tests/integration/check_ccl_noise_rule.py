#!/usr/bin/env python3
"""check_ccl_reports.py's noise rule on rows written at the CSV's 7 significant digits.

CI once failed a world-size-1 run whose reduce_scatter row read "rse 0.01" without "noisy":
its rse was under 1% by less than the written precision, and the runner is right to compare
the unrounded value. Here: that row passes, a row clearly over or under the limit is judged.
"""
import sys

from check_ccl_reports import noise_problems

CASES = [  # (rse as written, note, problems expected)
    ("0.01", "", 0),                       # 0.0099999996 written as 0.01: not noisy is right
    ("0.01", "noisy (rse 1.0% > 1.0% after 100 samples of 20 calls)", 0),  # 0.0100000004
    ("0.01000002", "", 1),                 # over the limit beyond rounding: must say noisy
    ("0.009999980", "noisy (rse 1.0% > 1.0% after 3 samples of 20 calls)", 1),
    ("0.25", "noisy (rse 25.0% > 1.0% after 100 samples of 20 calls)", 0),
    ("0.003", "", 0),
]

failed = 0
for rse, note, expected in CASES:
    got = noise_problems("row", rse, note)
    if len(got) != expected:
        failed += 1
        print(f"FAIL: rse {rse} note {note!r}: {len(got)} problems, expected {expected}: {got}")
print("ok" if not failed else f"{failed} failed")
sys.exit(1 if failed else 0)
