#!/usr/bin/env python3
"""Times torch.matmul on the GPU the way bench_gemm's cuBLASLt provider times a GEMM: warm-up,
then CUDA-event samples until the relative standard error of the mean is under 1% (or --max-time
passes), reporting the mean. As bench_gemm's samples, the products run back to back (queued
behind a GPU sleep, each between its own events), after --warmup-time (0.5 s) of the same: the
GPU's clock under sustained load is what both measure. On an H100 SXM (700 W) 8192^3 bf16 ran at
785 TFLOPS over 20 back-to-back products and 708 over 200 (bench_gemm: 701-710), the SM clock
falling from 1980 MHz to about 1500; timed one product at a time with a sync between, 745.
Row-major layouts as bench_gemm's (NT: C = A · Bᵀ, B stored n x k).
Needs PyTorch with CUDA (not installable on the CPU machines; run it where torch is).
Prints one line: torch m n k layout dtype mean_us tflops samples.

Usage: bench/peers/torch_gemm.py M N K [--layout NT] [--dtype bf16|fp16|fp32] [--warmup-time S]
"""
import statistics
import time

import torch

from peer_common import gemm_arguments, sample_until_precise


def main() -> None:
    args = gemm_arguments(__doc__, ["bf16", "fp16", "fp32"], max_time=1.0, extra=lambda p: p.add_argument(
        "--warmup-time", type=float, default=0.5))
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    m, n, k = args.m, args.n, args.k
    a = torch.empty((k, m) if args.layout[0] == "T" else (m, k), dtype=dtype, device="cuda").uniform_(-1, 1)
    b = torch.empty((n, k) if args.layout[1] == "T" else (k, n), dtype=dtype, device="cuda").uniform_(-1, 1)
    a = a.t() if args.layout[0] == "T" else a
    b = b.t() if args.layout[1] == "T" else b
    c = torch.empty((m, n), dtype=dtype, device="cuda")
    def back_to_back(count: int) -> list:
        """count products, each between its own pair of events, queued behind a GPU sleep so the
        GPU runs them back to back (bench_gemm's stream blocker); their times in microseconds."""
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(count)]
        torch.cuda._sleep(2_000_000)  # about 1 ms at 2 GHz: the launches below (~20 us each) get ahead
        for start, stop in events:
            start.record()
            torch.matmul(a, b, out=c)
            stop.record()
        events[-1][1].synchronize()
        return [start.elapsed_time(stop) * 1e3 for start, stop in events]

    begin = time.perf_counter()
    while time.perf_counter() - begin < args.warmup_time:
        back_to_back(20)
    samples = sample_until_precise(lambda: back_to_back(20), args.max_time, min_samples=10, min_time=0.1)
    mean_us = statistics.mean(samples)
    print(f"torch {m} {n} {k} {args.layout} {args.dtype} mean_us={mean_us:.2f} "
          f"tflops={2 * m * n * k / mean_us / 1e6:.1f} samples={len(samples)}")


if __name__ == "__main__":
    main()
