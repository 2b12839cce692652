#!/usr/bin/python3
"""Times numpy's matmul (the same OpenBLAS as bench_gemm's CPU provider) the way bench_gemm
times a GEMM: warm-up, then samples until the relative standard error of the mean is under 1%
(or 2 s pass), reporting the mean. Prints one line: m n k dtype mean_us gflops samples.

Usage: bench/peers/numpy_gemm.py M N K [--dtype fp32|fp64]
"""
import argparse
import statistics
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("m", type=int)
    parser.add_argument("n", type=int)
    parser.add_argument("k", type=int)
    parser.add_argument("--dtype", default="fp32", choices=["fp32", "fp64"])
    parser.add_argument("--max-time", type=float, default=2.0)
    args = parser.parse_args()
    dtype = np.float32 if args.dtype == "fp32" else np.float64
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (args.m, args.k)).astype(dtype)
    b = rng.uniform(-1, 1, (args.k, args.n)).astype(dtype)
    c = np.empty((args.m, args.n), dtype=dtype)

    start = time.perf_counter()
    warmups = 0
    while warmups < 2 or time.perf_counter() - start < 0.05:
        np.matmul(a, b, out=c)
        warmups += 1

    samples = []
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        np.matmul(a, b, out=c)
        samples.append((time.perf_counter() - t0) * 1e6)
        elapsed = time.perf_counter() - start
        if len(samples) >= 5 and elapsed >= 0.2:
            rse = statistics.stdev(samples) / len(samples) ** 0.5 / statistics.mean(samples)
            if rse < 0.01:
                break
        if elapsed >= args.max_time and len(samples) >= 3:
            break
    mean_us = statistics.mean(samples)
    gflops = 2 * args.m * args.n * args.k / mean_us / 1e3
    print(f"numpy {args.m} {args.n} {args.k} {args.dtype} mean_us={mean_us:.1f} gflops={gflops:.1f} samples={len(samples)}")


if __name__ == "__main__":
    main()
