#!/usr/bin/env python3
"""Times torch.matmul on the GPU the way bench_gemm's cuBLASLt provider times a GEMM: warm-up,
then CUDA-event samples until the relative standard error of the mean is under 1% (or --max-time
passes), reporting the mean. Row-major layouts as bench_gemm's (NT: C = A · Bᵀ, B stored n x k).
Needs PyTorch with CUDA (not installable on the CPU machines; run it where torch is).
Prints one line: torch m n k layout dtype mean_us tflops samples.

Usage: bench/peers/torch_gemm.py M N K [--layout NT] [--dtype bf16|fp16|fp32]
"""
import argparse
import statistics
import time

import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("m", type=int)
    parser.add_argument("n", type=int)
    parser.add_argument("k", type=int)
    parser.add_argument("--layout", default="NN", choices=["NN", "NT", "TN", "TT"])
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    parser.add_argument("--max-time", type=float, default=1.0)
    args = parser.parse_args()
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    m, n, k = args.m, args.n, args.k
    a = torch.empty((k, m) if args.layout[0] == "T" else (m, k), dtype=dtype, device="cuda").uniform_(-1, 1)
    b = torch.empty((n, k) if args.layout[1] == "T" else (k, n), dtype=dtype, device="cuda").uniform_(-1, 1)
    a = a.t() if args.layout[0] == "T" else a
    b = b.t() if args.layout[1] == "T" else b
    c = torch.empty((m, n), dtype=dtype, device="cuda")
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    begin = time.perf_counter()
    while time.perf_counter() - begin < 0.1:
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    samples = []
    begin = time.perf_counter()
    while True:
        start.record()
        torch.matmul(a, b, out=c)
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) * 1e3)
        elapsed = time.perf_counter() - begin
        if len(samples) >= 10 and elapsed >= 0.1:
            if statistics.stdev(samples) / len(samples) ** 0.5 / statistics.mean(samples) < 0.01:
                break
        if (elapsed >= args.max_time and len(samples) >= 3) or len(samples) >= 10000:
            break
    mean_us = statistics.mean(samples)
    print(f"torch {m} {n} {k} {args.layout} {args.dtype} mean_us={mean_us:.2f} "
          f"tflops={2 * m * n * k / mean_us / 1e6:.1f} samples={len(samples)}")


if __name__ == "__main__":
    main()
