#!/usr/bin/python3
"""A stand-in for Nsight Compute's CLI in scripts/kernel_times.py's test (no GPU here): prints
what `ncu --csv --print-units base --metrics gpu__time_duration.sum` prints for one
bench_memops case of the embedding's backward, three calls of it (a fill of the operands, a
set-up kernel once, then a call's keys, three onesweep passes of CUB's sort, the segment starts,
the rows), with the
program's own lines around it, and writes the report bench_memops would into --report-dir-path.
Units as older (nsecond, usecond, thousands separators) and newer ncu (ns) write them; names as
ncu's default demangled base writes them (namespaces, an anonymous one as <unnamed>,
template arguments, parameters), whatever --print-kernel-base says: the script copes with both.
FAKE_NCU_CASE=layernorm_bwd: LayerNorm's backward instead, whose column sums run twice a call.
FAKE_NCU_FAIL=1: what ncu prints where it cannot read the GPU's counters, no kernel timed.
"""
import os
import sys

args = sys.argv[1:]
if os.environ.get("FAKE_NCU_FAIL"):
    print("==ERROR== Failed to initialize the profiler: LibraryNotLoaded", file=sys.stderr)
    sys.exit(1)
layernorm = os.environ.get("FAKE_NCU_CASE") == "layernorm_bwd"
report = args[args.index("--report-dir-path") + 1]
os.makedirs(report, exist_ok=True)
with open(os.path.join(report, "memops_shapes.csv"), "w") as f:
    f.write("model,op,pass,io_bytes,copy_rate_gbps,status\n")
    f.write("shapes,layernorm,bwd,294000000,4200,ok\n" if layernorm else
            "shapes,embedding,bwd,1280000000,4200,ok\n")
print("==PROF== Connected to process 4242 (bench_memops)")
print("model        op              pass rows     cols")
header = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
          "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit",
          "Metric Value"]
print(",".join(f'"{h}"' for h in header))
launches = [("void opbench::<unnamed>::fill_kernel<__nv_bfloat16>(T1 *, unsigned long)",
             "nsecond", "1,000,000")] * 2
# a kernel of the set-up, once: an operand derived before the first call
launches += [("void opbench::cuda_memops::<unnamed>::elementwise_kernel<8, 2>(Op, long)",
              "usecond", "50")]
for _ in range(3 if not layernorm else 0):
    launches += [("void opbench::cuda_memops::<unnamed>::embedding_keys_kernel(const long *)",
                  "nsecond", "2,000")]
    launches += [("void cub::CUB_300000_SM_900::DeviceRadixSortOnesweepKernel<Policy>(int)",
                  "nsecond", "4,000")] * 3
    launches += [("embedding_starts_kernel", "usecond", "6")]
    launches += [("void opbench::cuda_memops::embedding_rows_kernel<8, __nv_bfloat16>"
                  "(const T2 *, const unsigned int *)", "ns", "300000")]
# LayerNorm's backward as an H200 ran it (2026-11-28): its forward once to derive the statistics,
# then a call's rows kernel once and its column sums twice (dgamma, dbeta)
for _ in range(3 if layernorm else 0):
    launches += [("norm_bwd_rows_kernel", "ns", "60000")]
    launches += [("sum_partials_kernel", "ns", "5000")] * 2
for i, (name, unit, value) in enumerate(launches):
    row = [str(i), "4242", "bench_memops", "127.0.0.1", name, "1", "7", "(256, 1, 1)",
           "(528, 1, 1)", "0", "9.0", "Command line profiler metrics", "gpu__time_duration.sum",
           unit, value]
    print(",".join(f'"{v}"' for v in row))
print("==PROF== Disconnected from process 4242")
