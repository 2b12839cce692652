#!/usr/bin/env python3
"""Runs bench_attention --dry-run --device-profile PROFILE (no GPU needed) over every shape of
configs/attention_shapes.json and every model of configs/models.json, forward and backward, bf16
and fp16, and fails when cuDNN refuses a graph inside cuDNN's documented support surface, or
refuses one without saying why.

The support surface (cuDNN 9.19; NVIDIA's cuDNN frontend documentation, "Scaled Dot Product
Attention", support matrix, and cudnn-frontend's sdpa support checks):
  - head dims multiples of 8; Hq a multiple of Hkv; causal (bottom-right) needs Sq <= Skv;
  - forward: d_qk, d_v <= 256 on sm80, sm90 and sm100 (cuDNN 9.10 and later);
  - backward: d <= 256 on sm90; on sm100 d <= 128, or d_qk = 192 with d_v = 128 (9.11 and
    later); d <= 128 on sm80.

Usage: check_cudnn_support.py BENCH_ATTENTION OUT_DIR PROFILE CONFIG_DIR [SAMPLE_SHAPES]

With SAMPLE_SHAPES (tests/data/attention_survey_sample.json), only those shapes are surveyed
instead of every shape and model: the headline GQA shape, MHA at d 64, MLA's 192/128, causal with
Sq < Skv, and d 256 (outside the backward surface on sm80 and sm100, so a refusal with its reason
is checked too). The default test run samples three of the four profiles this way.
"""
import csv
import json
import re
import subprocess
import sys
from pathlib import Path

from report_check import verdict

COMPUTE_CAPABILITY = {"a100": 80, "h100": 90, "h200": 90, "b200": 100}
HEADLINE = {"batch_size": "1", "seqlen_q": "8192", "seqlen_kv": "8192", "num_head_q": "32",
            "num_head_kv": "8", "head_dim_qk": "128", "head_dim_v": "128", "causal": "true",
            "dtype": "bf16"}


def inside_surface(cc: int, row: dict) -> bool:
    dqk, dv = int(row["head_dim_qk"]), int(row["head_dim_v"])
    hq, hkv = int(row["num_head_q"]), int(row["num_head_kv"])
    sq, skv = int(row["seqlen_q"]), int(row["seqlen_kv"])
    if dqk % 8 or dv % 8 or hq % hkv or (row["causal"] == "true" and sq > skv):
        return False
    if row["pass"] == "fwd":
        return max(dqk, dv) <= 256
    if cc // 10 == 9:
        return max(dqk, dv) <= 256
    if cc // 10 == 10:
        return (dqk == 192 and dv == 128) or max(dqk, dv) <= 128
    return max(dqk, dv) <= 128


def main() -> int:
    bench, out_dir, profile, config_dir = sys.argv[1], Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
    sample = Path(sys.argv[5]) if len(sys.argv) > 5 else None
    cc = COMPUTE_CAPABILITY[profile]
    shapes_path = sample or config_dir / "attention_shapes.json"
    survey = ["--shapes-json-path", str(shapes_path)]
    if not sample:
        survey += ["--model-config-path", str(config_dir / "models.json")]
    cmd = [bench, "--dry-run", "--device-profile", profile] + survey + [
           "--dtype", "bf16,fp16", "--pass", "fwd,bwd", "--engines-per-graph", "1",
           "--report-dir-path", str(out_dir)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"FAIL: exit code {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        return 1
    rows = list(csv.DictReader(open(out_dir / "attention_engines.csv", newline="")))
    problems = []
    inside = accepted = outside_refused = 0
    headlines = set()
    for r in rows:
        label = f"{r['model']} {r['dims']} {r['dtype']} {r['pass']}"
        if inside_surface(cc, r):
            inside += 1
            if r["status"] != "ok" or int(r["accepted"]) < 1 or not r["engines"]:
                problems.append(f"{label}: inside cuDNN's documented surface, refused: {r['note']}")
        if r["status"] == "ok":
            accepted += 1
        else:
            outside_refused += 1
            if "logged no reason" in r["note"] or not r["note"]:
                problems.append(f"{label}: refused without cuDNN's reason: {r['note']!r}")
        if all(r[k] == v for k, v in HEADLINE.items()) and r["pass"] not in headlines:
            headlines.add(r["pass"])
            print(f"headline {r['dims']} {r['dtype']} {r['pass']}: {r['first_engine']} "
                  f"({r['offered']} configurations offered)")
    shapes = len(json.load(open(shapes_path)))
    models = 0 if sample else sum(1 for m in json.load(open(config_dir / "models.json")) if "model" in m)
    expected = (shapes + models) * 2 * 2
    if len(rows) != expected:
        problems.append(f"{len(rows)} graphs checked; expected {expected}: ({shapes} shapes + "
                        f"{models} models) x 2 dtypes x 2 passes")
    # A graph repeated by several models is judged once and its verdict repeated: the closing
    # line counts the distinct graphs, and every copy of a graph carries the same verdict.
    distinct = {}
    for r in rows:
        key = (r["dims"], r["dtype"], r["pass"])
        judged = (r["status"], r["engines"], r["note"])
        if distinct.setdefault(key, judged) != judged:
            problems.append(f"{key}: two verdicts for one graph: {distinct[key]} and {judged}")
    said = re.search(r"graphs on \S+ \((\d+) distinct\)", proc.stderr)
    if not said or int(said.group(1)) != len(distinct):
        problems.append(f"the closing line should count {len(distinct)} distinct graphs: "
                        f"{said.group(0) if said else proc.stderr[-300:]!r}")
    print(f"{profile} (sm{cc}): {len(rows)} graphs ({len(distinct)} distinct), {accepted} accepted, {outside_refused} refused "
          f"(all outside the documented surface), {inside} inside the surface")
    return verdict(problems, None, "ok")


if __name__ == "__main__":
    sys.exit(main())
