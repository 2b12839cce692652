#!/usr/bin/python3
"""Writes the GPU-shaped report fixtures bench_step's README example and tests project from.

NOT MEASURED. No eight-GPU machine has been lent to this project; these rows stand in for the reports
bench_gemm, bench_attention, bench_memops and bench_ccl would write on 8 H100 SXM GPUs, so that
the projection path (bench_step --from-reports) can be shown and tested end to end. Every time
is made from the operator's own FLOPs or bytes at a rate assumed from public figures:

  GEMM (bf16)        max(2mnk / (989.4 TFLOPS x 0.72), bytes / (3350 GB/s x 0.90)):
                     cuBLAS reaches about 700-750 TFLOPS on large bf16 GEMMs on H100 SXM
  attention (bf16)   FlashAttention-3 convention FLOPs (causal halved) at 600 TFLOPS forward
                     and 450 TFLOPS backward (FA3 paper, hdim 128, long causal sequences)
  memory-bound       bytes / (3350 GB/s x 0.80) + 4 us
  collectives        15 us + size x busbw factor / 350 GB/s (NVLink/NVSwitch, nccl-tests-like
                     busbw); send_recv at 370 GB/s

Input: the operator list of `bench_step --dry-run --operators-csv-path FILE` (its `family` and
`args` columns). Output: gemm_h100.csv, attention_h100.csv, memops_h100.csv, ccl_h100.csv in
--out, every row's note saying it is a fixture.

  build/step/bench_step --model llama3.1-70b --tp 8 --grad-accum 8 --dtype bf16 --dry-run \\
      --operators-csv-path /tmp/ops.csv
  tests/data/step_h100/make_fixture.py /tmp/ops.csv --out tests/data/step_h100
"""
import argparse
import csv
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "integration"))
from check_memops_reports import expected_bytes  # noqa: E402  (the memops byte formulas)

DEVICE = "NVIDIA H100 80GB HBM3"
NOTE = "fixture: not measured (tests/data/step_h100/make_fixture.py: rate assumed from public figures)"
PEAK_BF16, HBM = 989.4e12, 3350e9
SIZE = {"bf16": 2, "fp16": 2, "fp32": 4}
BUS_FACTOR = {"all_gather": lambda n: (n - 1) / n, "reduce_scatter": lambda n: (n - 1) / n,
              "all_to_all": lambda n: (n - 1) / n, "all_reduce": lambda n: 2 * (n - 1) / n,
              "send_recv": lambda n: 1.0}


def gemm_row(args):
    m = re.match(r"m(\d+) n(\d+) k(\d+) ([NT])([NT]) (\w+)$", args)
    M, N, K, ta, tb, dt = int(m[1]), int(m[2]), int(m[3]), m[4], m[5], m[6]
    flops, io = 2 * M * N * K, (M * K + K * N + M * N) * SIZE[dt]
    t = max(flops / (PEAK_BF16 * 0.72), io / (HBM * 0.90)) * 1e6
    return {"m": M, "n": N, "k": K, "batch": 1, "transa": ta, "transb": tb, "dtype": dt,
            "out_dtype": dt, "backend": "cuda", "provider": "cublaslt", "device": DEVICE,
            "time_us": f"{t:.7g}", "flops": flops, "tflops": f"{flops / t / 1e6:.7g}", "impl": "",
            "status": "ok", "note": NOTE}


def attention_row(args):
    m = re.match(r"(fwd|bwd) b(\d+) s(\d+)/(\d+) h(\d+)/(\d+) d(\d+)/(\d+)( causal)? (\w+)$", args)
    p, B, Sq, Skv, Hq, Hkv, Dqk, Dv = m[1], *map(int, m.groups()[1:8])
    causal, dt = bool(m[9]), m[10]
    s_avg = (max(0, Skv - Sq) + Skv) / 2 if causal else Skv
    fwd = 2 * B * Hq * Sq * s_avg * (Dqk + Dv)
    flops = fwd if p == "fwd" else 2.5 * fwd
    t = flops / (600e12 if p == "fwd" else 450e12) * 1e6
    return {"model": "llama3.1-70b", "batch_size": B, "seqlen_q": Sq, "seqlen_kv": Skv,
            "num_head_q": Hq, "num_head_kv": Hkv, "head_dim_qk": Dqk, "head_dim_v": Dv,
            "causal": "true" if causal else "false", "dtype": dt, "pass": p, "backend": "cuda",
            "provider": "cudnn", "device": DEVICE, "time_us": f"{t:.7g}", "flops": int(flops),
            "status": "ok", "note": NOTE}


def memop_row(args):
    op, p, rest = args.split(" ", 2)
    dims, dt = rest.rsplit(" ", 1)
    r = {"op": op, "pass": p, "dtype": dt, "heads": "", "kv_heads": "", "head_dim": "", "vocab": ""}
    if op == "rope":
        m = re.match(r"t(\d+) h(\d+)/(\d+) d(\d+)$", dims)
        r.update(rows=int(m[1]), heads=int(m[2]), kv_heads=int(m[3]), head_dim=int(m[4]))
        r["cols"] = (r["heads"] + r["kv_heads"]) * r["head_dim"]
    else:
        m = re.match(r"(\d+)x(\d+)(?: of (\d+))?$", dims)
        r.update(rows=int(m[1]), cols=int(m[2]))
        if m[3]:
            r["vocab"] = int(m[3])
    read, write = expected_bytes({k: str(v) for k, v in r.items()})
    t = (read + write) / (HBM * 0.80) * 1e6 + 4
    r.update(model="llama3.1-70b", backend="cuda", provider="cuda", device=DEVICE,
             time_us=f"{t:.7g}", io_bytes=read + write, status="ok", note=NOTE)
    return r


def ccl_row(args):
    m = re.match(r"(\w+) (\d+) B over (\d+) ranks (\w+)$", args)
    op, size, n, dt = m[1], int(m[2]), int(m[3]), m[4]
    busbw = 370e9 if op == "send_recv" else 350e9
    t = 15 + size * BUS_FACTOR[op](n) / busbw * 1e6
    return {"op": op, "world_size": 8, "group_size": n, "backend": "nccl", "dtype": dt,
            "placement": "out_of_place", "size_bytes": size, "time_us": f"{t:.7g}",
            "busbw_gbps": f"{size * BUS_FACTOR[op](n) / t / 1e3:.7g}", "status": "ok", "note": NOTE}


MAKERS = {"gemm": ("gemm_h100.csv", gemm_row), "attention": ("attention_h100.csv", attention_row),
          "memop": ("memops_h100.csv", memop_row), "collective": ("ccl_h100.csv", ccl_row)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("operators_csv")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rows = {family: {} for family in MAKERS}
    with open(a.operators_csv, newline="") as f:
        for op in csv.DictReader(f):
            if op["family"] not in MAKERS:
                print(f"error: {a.operators_csv}: family {op['family']} has no fixture maker", file=sys.stderr)
                return 2
            rows[op["family"]].setdefault(op["args"], MAKERS[op["family"]][1](op["args"]))
    for family, (name, _) in MAKERS.items():
        made = list(rows[family].values())
        if not made:
            continue
        with open(os.path.join(a.out, name), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(made[0]), lineterminator="\n")
            w.writeheader()
            w.writerows(made)
        print(f"{os.path.join(a.out, name)}: {len(made)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
