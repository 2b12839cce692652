#!/usr/bin/env python3
"""Runs the real binaries on a corpus of bad inputs (tests/data/bad and flag values). Each must
exit 2, never die on a signal, and print exactly one line starting with 'error:' that names what
is wrong (the file, the entry and the key, or the flag). Prints one line per case and a count.

Usage: bad_input_corpus.py BUILD_DIR DATA_DIR SCRATCH_DIR
"""
import os
import subprocess
import sys

build, data, scratch = sys.argv[1], sys.argv[2], sys.argv[3]
bad = os.path.join(data, "bad")
gemm = [os.path.join(build, "gemm/bench_gemm"), "--backend", "cpu", "--quiet", "--report-dir-path", scratch]
attention = [os.path.join(build, "attention/bench_attention"), "--backend", "cpu", "--quiet", "--report-dir-path", scratch]
ccl = [os.path.join(build, "collectives/bench_ccl"), "--backend", "mpi", "--quiet", "--report-dir-path", scratch]
fsdp = [os.path.join(build, "fsdp/bench_fsdp"), "--quiet"]
memops = [os.path.join(build, "memops/bench_memops"), "--backend", "cpu", "--quiet", "--report-dir-path", scratch]
step = [os.path.join(build, "step/bench_step"), "--quiet", "--report-dir-path", scratch]

CASES = [
    # (what, command, text the error line must contain)
    ("empty models file", gemm + ["--model-config-path", f"{bad}/empty.json"], "empty.json: the file is empty"),
    ("binary garbage", gemm + ["--model-config-path", f"{bad}/garbage.json"], "garbage.json:1:1: JSON syntax error"),
    ("NaN in JSON", gemm + ["--model-config-path", f"{bad}/nan.json"], "nan.json:1:"),
    ("a directory for a file", gemm + ["--model-config-path", f"{bad}/a_directory.json"], "a_directory.json: is a directory"),
    ("huge dim", gemm + ["--model-config-path", f"{bad}/models_huge.json"], "entry 0 (\"huge\"): key 'hidden_size': 1e+30 is out of range"),
    ("fractional seqlen", gemm + ["--model-config-path", f"{bad}/models_fraction.json"], "key 'seqlen': expected an integer, got the number 128.5"),
    ("zero heads", gemm + ["--model-config-path", f"{bad}/models_zero_heads.json"], "key 'num_attention_heads': 0 is out of range"),
    ("misspelt key", gemm + ["--model-config-path", f"{bad}/models_unknown_key.json"], "unknown key 'num_hiden_layers'"),
    ("object, not a list", gemm + ["--model-config-path", f"{bad}/models_object.json"], "expected a list of entries"),
    ("number as an entry", gemm + ["--model-config-path", f"{bad}/models_number_entry.json"], "entry 0: expected an object, got the number 42"),
    ("GEMM m = 0", gemm + ["--shapes-json-path", f"{bad}/gemm_zero_m.json"], "entry 0 (\"zero-m\"): key 'm': 0 is out of range"),
    ("GEMM negative k", gemm + ["--shapes-json-path", f"{bad}/gemm_negative_k.json"], "key 'k': -8 is out of range"),
    ("GEMM fractional m", gemm + ["--shapes-json-path", f"{bad}/gemm_fraction.json"], "key 'm': expected an integer"),
    ("GEMM transpose X", gemm + ["--shapes-json-path", f"{bad}/gemm_bad_transpose.json"], "key 'transa': 'x' is not N or T"),
    ("GEMM huge m", gemm + ["--shapes-json-path", f"{bad}/gemm_huge.json"], "key 'm': 99999999999999 is out of range"),
    ("GEMM unknown dtype", gemm + ["--shapes-json-path", f"{bad}/gemm_unknown_dtype.json"], "key 'dtype': unknown dtype 'int4'"),
    ("GEMM huge sweep size", gemm + ["--m", "99999999999T", "--n", "8", "--k", "8"], "--m: '99999999999T' is not a size"),
    ("GEMM fractional tp", gemm + ["--model", "tiny", "--tp", "1.5"], "--tp: '1.5' is not a size"),
    ("GEMM NaN noise", gemm + ["--model", "tiny", "--max-noise", "nan"], "--max-noise: 'nan' is not a valid value"),
    ("GEMM device profile without --dry-run", gemm + ["--model", "tiny", "--device-profile", "h100"], "--device-profile describes a GPU that is not here"),
    ("routing file of the wrong length", gemm + ["--model", "mixtral-8x7b", "--routing", f"{bad}/routing_wrong_length.json"], "routing_wrong_length.json: 3 counts, but the model has 8 routed experts"),
    ("routing file with a negative count", gemm + ["--model", "mixtral-8x7b", "--routing", f"{bad}/routing_negative.json"], "entry 1 (expert 2): -5 tokens is negative"),
    ("routing file with a fraction", gemm + ["--model", "mixtral-8x7b", "--routing", f"{bad}/routing_fraction.json"], "entry 1 (expert 2): expected a whole number of tokens, got 2.5"),
    ("routing zipf:-1", gemm + ["--model", "mixtral-8x7b", "--routing", "zipf:-1"], "--routing zipf:-1: the zipf exponent must be a number above 0"),
    ("routing file that is not there", gemm + ["--model", "mixtral-8x7b", "--routing", f"{bad}/no_such_routing.json"], "no_such_routing.json: no such file"),
    ("--ep not dividing the experts", gemm + ["--model", "mixtral-8x7b", "--ep", "3"], "--ep 3: does not divide the 8 routed experts of model 'mixtral-8x7b'"),
    ("--ep 0", gemm + ["--model", "mixtral-8x7b", "--ep", "0"], "--ep: must be at least 1, got '0'"),
    # A list flag names each item once (issue 32 item 11): an alias or a second spelling repeats it.
    ("a model listed twice", gemm + ["--model", "tiny,TINY", "--dry-run"], "--model: 'TINY' is listed twice"),
    ("a pass and its alias", gemm + ["--model", "tiny", "--pass", "fprop,fwd", "--dry-run"], "--pass: 'fwd' is listed twice"),
    ("a dtype and its alias", gemm + ["--m", "64", "--n", "64", "--k", "64", "--dtype", "fp32,float"], "--dtype: 'float' is listed twice"),
    ("an integer twice", gemm + ["--m", "64,64", "--n", "64", "--k", "64"], "--m: 64 is listed twice"),
    ("a range over a listed value", attention + ["--model", "tiny", "--seq-len", "64,32:128:32"], "--seq-len: 64 is listed twice"),
    ("an op twice", memops + ["--op", "add,rmsnorm,add", "--size", "1M"], "--op: 'add' is listed twice"),
    ("a collective by two names", ccl + ["--op", "all_reduce,allreduce"], "--op: 'allreduce' is listed twice"),
    ("unknown --moe-impl", gemm + ["--model", "mixtral-8x7b", "--moe-impl", "grouped,fused"], "--moe-impl: unknown implementation 'fused'"),
    ("memops unknown operator in a file", memops + ["--shapes-json-path", f"{bad}/memop_unknown_op.json"], "memop_unknown_op.json: entry 0: key 'op': unknown operator 'rmsnrom' (did you mean 'rmsnorm'?)"),
    ("memops zero rows", memops + ["--shapes-json-path", f"{bad}/memop_zero_rows.json"], "entry 0: key 'rows': 0 is out of range"),
    ("memops rope cols not heads x head_dim", memops + ["--shapes-json-path", f"{bad}/memop_rope_cols.json"], "key 'cols': rope: cols must be (heads + kv_heads) x head_dim = 256"),
    ("memops backward of add", memops + ["--shapes-json-path", f"{bad}/memop_add_bwd.json"], "key 'pass': add has no backward pass"),
    ("memops adamw in bf16", memops + ["--shapes-json-path", f"{bad}/memop_adamw_dtype.json"], "key 'dtype': adamw does not take dtype bf16"),
    ("memops misspelt key", memops + ["--shapes-json-path", f"{bad}/memop_unknown_key.json"], "unknown key 'colums'"),
    ("memops unknown --op", memops + ["--op", "softmx", "--size", "1M"], "--op: unknown operator 'softmx' (did you mean 'softmax'?)"),
    ("memops fractional --size", memops + ["--op", "add", "--size", "1.5.5M"], "--size: '1.5.5M' is not a size"),
    ("memops geometric factor 1", memops + ["--op", "add", "--size", "1K:1M:x1"], "--size: range '1K:1M:x1' needs a factor of at least x2"),
    # A sweep that cannot be honoured is refused, not changed (issue 32 item 12).
    ("memops rope --cols off the heads", memops + ["--op", "rope", "--size", "1M", "--cols", "300"], "--cols 300: rope sweeps rotate heads of 128"),
    ("memops --size below a row", memops + ["--op", "add", "--size", "1000"], "--size 1000: below one row of --cols 4096"),
    ("memops two sizes one case", memops + ["--op", "add", "--size", "4096,5000"], "--size 4096 and 5000: both are 1 row of --cols 4096"),
    ("attention fp64 in a shapes file", attention + ["--shapes-json-path", f"{bad}/attention_fp64.json"], "key 'dtype': fp64 is not an attention dtype (fp32, bf16, fp16)"),
    ("attention --dtype fp64", attention + ["--model", "tiny", "--dtype", "fp64"], "--dtype: fp64 is not an attention dtype"),
    ("attention cp not splitting the sequence", attention + ["--model", "tiny", "--cp", "3", "--dry-run"], "--cp 3: does not split the sequence of 128 tokens (model 'tiny') into 2 x 3 equal chunks"),
    ("memops fp8 --dtype", memops + ["--op", "add", "--size", "1M", "--dtype", "fp8"], "--dtype: fp8_e4m3 is not a memops dtype"),
    ("memops nothing to run", memops, "nothing to run: give --model-config-path"),
    ("GEMM unknown fp8 accumulation", gemm + ["--model", "tiny", "--fp8-accum", "slow"], "--fp8-accum: unknown mode 'slow'"),
    ("GEMM zero samples", gemm + ["--model", "tiny", "--min-samples", "0"], "--min-samples: must be >= 1"),
    ("GEMM samples bounds crossed", gemm + ["--model", "tiny", "--min-samples", "9", "--max-samples", "4"], "--max-samples: must be >= --min-samples (9)"),
    ("collectives noise over 1", ccl + ["--op", "all_reduce", "-b", "1K", "-e", "1K", "--max-noise", "2"], "--max-noise: must be in (0, 1)"),
    ("collectives negative time", ccl + ["--op", "all_reduce", "-b", "1K", "-e", "1K", "--max-time", "-1"], "--max-time: must be >= --min-time"),
    ("ccl --op given a reduction", ccl + ["--op", "max"], "reductions go to -o/--redop (try --op all_reduce -o max)"),
    ("ccl -t 2", ccl + ["-t", "2"], "opbench runs one thread and one GPU per rank"),
    ("ccl -z 1", ccl + ["-z", "1"], "-z/--blocking: opbench issues non-blocking calls only"),
    ("ccl -m 4", ccl + ["-m", "4"], "-m/--agg_iters: opbench issues one operation per call"),
    ("ccl -G on the mpi backend", ccl + ["-G", "10", "-b", "1K", "-e", "1K"], "-G/--cudagraph: CUDA-graph mode needs the NCCL backend"),
    ("ccl -r -2", ccl + ["-r", "-2"], "-r/--root: must be >= 0, or -1 for every root"),
    ("attention unknown device profile", attention + ["--model", "tiny", "--dry-run", "--device-profile", "v100"], "--device-profile: 'v100' is neither a profile"),
    ("attention device profile without --dry-run", attention + ["--model", "tiny", "--device-profile", "h100"], "--device-profile describes a GPU that is not here"),
    ("attention device profile missing a key", attention + ["--model", "tiny", "--dry-run", "--device-profile", f"{bad}/device_profile_missing_key.json"], "device_profile_missing_key.json: key 'device': key 'l2CacheSize': missing"),
    ("attention cudnn on the CPU", attention + ["--model", "tiny", "--provider", "cudnn"], "cudnn runs with --backend cuda"),
    ("GEMM unknown pass", gemm + ["--model", "tiny", "--pass", "bprop"], "--pass: unknown pass 'bprop'"),
    ("GEMM unknown layout", gemm + ["--m", "8", "--n", "8", "--k", "8", "--layout", "XY"], "--layout: 'XY' is not one of"),
    ("GEMM resume without a dir", [gemm[0], "--model", "tiny", "--resume"], "--resume needs the --report-dir-path"),
    ("GEMM peak of zero", gemm + ["--model", "tiny", "--peak-tflops", "0"], "--peak-tflops: must be a positive number"),
    ("attention batch 0", attention + ["--shapes-json-path", f"{bad}/attention_zero_batch.json"], "key 'batch_size': 0 is out of range"),
    ("attention causal \"yes\"", attention + ["--shapes-json-path", f"{bad}/attention_causal_string.json"], "key 'causal': expected true or false"),
    ("attention Hkv > Hq", attention + ["--shapes-json-path", f"{bad}/attention_more_kv_heads.json"], "key 'num_head_kv': 16 exceeds num_head_q (8)"),
    ("attention missing dtype", attention + ["--shapes-json-path", f"{bad}/attention_missing_dtype.json"],
     "attention_missing_dtype.json: entry 0 (\"m\"): key 'dtype': missing"),
    ("attention empty file", attention + ["--shapes-json-path", f"{bad}/empty.json"], "empty.json: the file is empty"),
    ("attention causal maybe", attention + ["--model", "tiny", "--causal", "maybe"], "--causal: 'maybe' is not true or false"),
    ("ccl negative size", ccl + ["-b", "-8"], "-b/--minbytes: '-8' is negative"),
    ("ccl factor below 1", ccl + ["-f", "0.5"], "-f/--stepfactor: must be at least 1"),
    ("ccl zero iterations", ccl + ["-n", "0"], "-n/--iters: must be at least 1"),
    ("ccl unknown placement", ccl + ["--placement", "sideways"], "--placement: unknown placement 'sideways'"),
    ("ccl unknown reduction", ccl + ["-o", "mean"], "unknown reduction 'mean'"),
    ("ccl tf32 data", ccl + ["-d", "tf32"], "tf32 is a compute mode"),
    ("ccl resume", ccl + ["--resume"], "unknown flag '--resume'"),
    ("GEMM misspelt flag", gemm + ["--mdoel", "tiny"], "unknown flag '--mdoel'; did you mean --model?"),
    ("attention misspelt flag", attention + ["--model", "tiny", "--seqlen", "128"], "did you mean --seq-len?"),
    ("attention fp8 from the flag", attention + ["--model", "tiny", "--dtype", "fp8"], "--dtype: fp8_e4m3 is not an attention dtype"),
    ("attention tp not dividing the heads", attention + ["--model", "tiny", "--tp", "3"], "--tp 3: does not divide num_attention_heads"),
    ("GEMM both --pass and --passes", gemm + ["--model", "tiny", "--pass", "fprop", "--passes", "wgrad"], "--pass and --passes are the same flag"),
    ("ccl model tp larger than the world", ccl + ["--model", "llama3.1-70b", "--tp", "8"], "launch a multiple of 8 ranks (mpirun -np 8) or lower --tp"),
    ("ccl --world-size without --dry-run", ccl + ["--world-size", "8"], "--world-size goes with --dry-run"),
    ("ccl model without tp", ccl + ["--model", "tiny"], "no messages at tp 1"),
    ("fsdp no model", fsdp + ["--world-size", "8", "--dry-run"], "--model is required"),
    ("fsdp version 3", fsdp + ["--model", "tiny", "--world-size", "8", "--fsdp-version", "3", "--dry-run"], "--fsdp-version: must be 1 or 2"),
    ("fsdp unknown wrap", fsdp + ["--model", "tiny", "--world-size", "8", "--wrap", "block", "--dry-run"], "--wrap: unknown policy 'block'"),
    ("fsdp reduce op max", fsdp + ["--model", "tiny", "--world-size", "8", "--reduce-op", "max", "--dry-run"], "--reduce-op: FSDP reduces with avg or sum"),
    ("fsdp log is a directory", fsdp + ["--model", "tiny", "--world-size", "8", "--nccl-log", f"{bad}/a_directory.json"], "is a directory"),
    ("step no model", step + ["--dry-run"], "--model: required"),
    ("step unknown model", step + ["--model", "llama9", "--dry-run"], "unknown model 'llama9'"),
    ("step tp not dividing the heads", step + ["--model", "llama3.1-8b", "--tp", "3", "--dry-run"], "--tp 3"),
    ("step global batch not a multiple", step + ["--model", "tiny", "--dp", "4", "--global-batch", "6", "--dry-run"], "--global-batch 6: not a multiple of --micro-batch 1 x --dp 4"),
    ("step overlap above 1", step + ["--model", "tiny", "--overlap", "2", "--dry-run"], "--overlap: '2' is not none, full or a fraction in [0, 1]"),
    ("step host cost below 0", step + ["--model", "tiny", "--host-us-per-kernel", "-1", "--dry-run"], "--host-us-per-kernel: '-1' is not FORWARD[,BACKWARD], microseconds >= 0"),
    ("step host cost of three", step + ["--model", "tiny", "--host-us-per-kernel", "5,6,7", "--dry-run"], "--host-us-per-kernel: '5,6,7' is not FORWARD[,BACKWARD], microseconds >= 0"),
    ("step host cost not a number", step + ["--model", "tiny", "--host-us-per-kernel", "5us", "--dry-run"], "--host-us-per-kernel: '5us' is not FORWARD[,BACKWARD], microseconds >= 0"),
    ("step unknown recompute", step + ["--model", "tiny", "--recompute", "partial", "--dry-run"], "--recompute: 'partial' is not one of none, selective, full"),
    ("step reports folder missing", step + ["--model", "tiny", "--from-reports", f"{bad}/no_such_folder"], "no_such_folder: no such folder"),
    ("step fsdp with tp", step + ["--model", "tiny", "--tp", "2", "--dp", "2", "--sharding", "fsdp", "--dry-run"], "--sharding fsdp: modelled without tensor or pipeline parallelism"),
    ("step ep on a dense model", step + ["--model", "tiny", "--dp", "2", "--ep", "2", "--dry-run"], "--ep 2: model 'tiny' has no routed experts"),
    ("step cp not splitting the sequence", step + ["--model", "tiny", "--cp", "3", "--dry-run"], "--cp 3: does not split the sequence of 128 tokens (model 'tiny') into 2 x 3 equal chunks"),
    ("step sp of a cp rank's share", step + ["--model", "llama3.1-8b", "--seq-len", "4100", "--tp", "4", "--cp", "2", "--micro-batch", "2", "--dry-run"], "--tp 4: does not divide the 2050 tokens of a sequence on a --cp 2 rank"),
    ("ccl MoE sp of a cp rank's share", ccl + ["--model", "mixtral-8x7b", "--seq-len", "4104", "--tp", "8", "--cp", "2", "--dry-run", "--world-size", "16"], "--tp 8: does not divide the 2052 tokens of a sequence on a --cp 2 rank"),
    ("step cp with eager kernels", step + ["--model", "tiny", "--cp", "2", "--kernels", "eager", "--dry-run"], "--cp 2: context parallelism is modelled with fused kernels only"),
    ("ccl cp not splitting the sequence", ccl + ["--model", "tiny", "--cp", "3", "--dry-run", "--world-size", "3"], "--cp 3: does not split the sequence of 128 tokens (model 'tiny') into 2 x 3 equal chunks"),
    ("ccl cp rings not dividing the launch", ccl + ["--model", "tiny", "--tp", "2", "--cp", "2", "--dry-run", "--world-size", "6"], "the context-parallel rings take tp x cp x pp = 4 ranks"),
    ("step unknown MoE dispatcher", step + ["--model", "mixtral-8x7b", "--tp", "2", "--ep", "2", "--dp", "2", "--moe-dispatcher", "deepep", "--dry-run"], "--moe-dispatcher: 'deepep' is not one of alltoall, allgather"),
    ("ccl unknown MoE dispatcher", ccl + ["--model", "mixtral-8x7b", "--ep", "2", "--moe-dispatcher", "all-gather", "--dry-run", "--world-size", "2"], "--moe-dispatcher: 'all-gather' is not one of alltoall, allgather"),
    ("step etp on a dense model", step + ["--model", "tiny", "--tp", "2", "--etp", "1", "--dry-run"], "--etp 1: model 'tiny' has no routed experts"),
    ("step etp x ep not dividing tp x dp", step + ["--model", "mixtral-8x7b", "--tp", "2", "--dp", "2", "--ep", "2", "--etp", "4", "--dry-run"], "--etp 4 x --ep 2: does not divide --tp 2 x --dp 2"),
    ("ccl model experts past the launch", ccl + ["--model", "mixtral-8x7b", "--tp", "2", "--ep", "4", "--pp", "2", "--dry-run", "--world-size", "8"], "--model mixtral-8x7b at tp 2, ep 4, pp 2: the experts' groups take etp x ep x pp = 16 ranks"),
    ("step moe at tp 2 without sequence parallelism", step + ["--model", "mixtral-8x7b", "--no-sequence-parallel", "--tp", "2", "--dry-run"], "--no-sequence-parallel: model 'mixtral-8x7b' has MoE layers, which Megatron-Core trains with --tp above 1 only under sequence parallelism"),
    ("step etp not dividing the experts' width", step + ["--model", "mixtral-8x7b", "--tp", "2", "--dp", "3", "--etp", "3", "--dry-run"], "--etp 3: does not divide moe_intermediate_size (14336) of model 'mixtral-8x7b'"),
    ("gemm etp of no whole tokens", gemm + ["--model", "mixtral-8x7b", "--seq-len", "1023", "--tp", "2", "--etp", "1", "--dry-run"], "--etp 1 at --tp 2: a micro-batch's 1023 tokens x 1 / 2 is not a whole number"),
    ("gemm etp not dividing the experts' width", gemm + ["--model", "mixtral-8x7b", "--tp", "2", "--etp", "3", "--seq-len", "64"], "--etp 3: does not divide moe_intermediate_size (14336) of model 'mixtral-8x7b'"),
    ("step both world size and dp", step + ["--model", "tiny", "--world-size", "8", "--dp", "2", "--dry-run"], "--world-size and --dp: give one of them"),
    ("step fp8 dtype", step + ["--model", "tiny", "--dtype", "fp8", "--dry-run"], "--dtype: fp8_e4m3 is not a training dtype"),
    ("fsdp garbage models file", fsdp + ["--model", "tiny", "--world-size", "8", "--model-config-path", f"{bad}/garbage.json", "--dry-run"], "garbage.json:1:1: JSON syntax error"),
    # A job's tables with nothing of the binary's family in them, and --rank on pid-named files
    # (issue 44 item 4: "0 of 0 cases", "(ranks: )")
    ("a capture without GEMMs", gemm + ["--capture-path", f"{data}/capture_no_gemm"], "capture_no_gemm: no GEMM in the job's tables"),
    ("--rank on pid-named capture files", gemm + ["--capture-path", f"{data}/capture_no_gemm", "--rank", "0"], "--rank 0: the tables of --capture-path"),
    ("a capture without attention", attention + ["--capture-path", f"{data}/capture_no_gemm"], "no attention call in the job's tables"),
    ("a trace that is not there", gemm + ["--trace-path", f"{bad}/no_such_trace.json"], "no_such_trace.json: no such file or folder"),
    ("both job paths", gemm + ["--capture-path", f"{data}/capture_no_gemm", "--trace-path", f"{data}/trace"], "--capture-path and --trace-path both give the job's shapes"),
    ("a dry run's capture that is not there", step + ["--model", "tiny", "--capture-path", f"{bad}/no_such_capture", "--dry-run"], "no_such_capture: not a folder"),
    ("the PyTorch step without PyTorch", ["/usr/bin/python3", "-S", os.path.join(data, "..", "..", "bench", "peers", "torch_train_step.py"), "--model", "tiny"], "this script needs PyTorch"),
]


def main() -> int:
    failures = 0
    for what, cmd, expected in CASES:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, errors="replace")
        errors = [l for l in proc.stderr.splitlines() if l.startswith("error:")]
        # ... and say it once: a message wrapped twice repeats its file name
        doubled = bool(errors) and any(errors[0].count(f) > 1 for f in (bad + "/",))
        ok = proc.returncode == 2 and len(errors) == 1 and expected in errors[0] and not doubled
        if not ok:
            failures += 1
            why = f"exit {proc.returncode}" + (" (signal)" if proc.returncode < 0 else "")
            print(f"FAIL {what}: {why}, error lines {errors}, expected '{expected}'")
        else:
            print(f"ok   {what}: {errors[0]}")
    print(f"{len(CASES) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
