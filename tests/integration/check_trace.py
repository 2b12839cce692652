#!/usr/bin/python3
"""Real PyTorch steps recorded as traces and converted (build/trace/trace_convert), checked
against what bench_gemm derives for the model (tests/integration/torch_step_gemms.py says how).

  check_trace.py et  --out DIR --trace-convert BIN --bench-gemm BIN [--seq-len S]
      bench/peers/torch_train_step.py --execution-trace (the tiny model, fp32, 1 thread; torch
      1.13's ExecutionGraphObserver, one step): the converted table's aten::mm rows are exactly
      bench_gemm's linear-layer GEMMs of one step (fprop NT, dgrad NN, wgrad TN, with their
      counts), its aten::bmm rows the math attention's six products per layer (batch Hq), every
      row `trace:et` and untimed, and the operators left out are rows of kind memory_bound or
      other.
      Then bench_gemm --trace-path replays the same traces: one gemm_capture.csv row per
      distinct product, its captured_calls the table's calls, in_job_us empty (no times).
  check_trace.py attention --out DIR --bench-attention BIN --trace-convert BIN
      bench_attention --backend cpu --trace-path on tests/data/trace's GPU step: its one SDPA
      forward (b2, 32/8 heads, 512 tokens, d 128, causal, bf16 in the job, fp32 here) as one row
      with captured_calls 1, in_job_us 300 (its kernel) and in_job_ratio = 300 / time_us; then
      capture_summary.py on the converted trace with --replay and --plot: each family's share of
      the 780 us traced (220 GEMM, 300 attention, 150 all-reduce: its kernel and the 50 us before
      it while its launch was queued, 30 + 20 memory-bound, 10 other, 50 GPU idle) and the
      replayed shape's line.
  check_trace.py trim --out DIR --trace-convert BIN
      scripts/trim_trace.py on that GPU step with --max-events 15: the step marker and the first
      two top-level operators whole (linear with its mm and 2 launches, copy_ with its launch),
      12 events, and the 3 GPU events they launched (the GEMM's 200 us kernel and 20 us split-K
      reduction, the 1 us host-to-device copy) with their launches; trace_convert then gives
      the aten::mm row the full trace gives it (1 call, 220 us of kernels). Without a limit every
      event but the kernel no launch queued (25 of 26). The same step with a flow pair per launch
      (flows.pt.trace.json) cut to 15 stays within 15: flows count in an operator's cost.
  check_trace.py cycles --out DIR --trace-convert BIN
      two profiling cycles of one process (tensorboard_trace_handler's host-a_4242.<time> names,
      the GPU step twice): two tables, capture-host-a-rank1-1 and -2 in file-name order, each
      with the step's aten::mm (220 us), where the second used to overwrite the first.
  check_trace.py h200 --out DIR --trace-convert BIN
      a real Kineto trace: tests/data/trace/h200/rank0.pt.trace.json.gz, torch 2.11's profiler on
      an H200 (gpu_validate.sh's step_vs_torch, 2026-11-28: llama3.2-1b at 4096 tokens, bf16,
      cuDNN SDPA, CPU and CUDA activities, record_shapes), cut by trim_trace.py to one step's
      first 3000 events: the forward of its first 9 layers. Per layer (hidden 2048, 32 heads of
      64, 8 kv heads: 512, MLP 8192) F.linear's x @ W^T is an NT aten::mm of m = 4096 tokens:
      q and o 2048 x 2048 (18 calls), k and v 512 (18), gate and up 8192 (18), down 2048 from
      8192 (9), all bf16 and timed; the attention one causal cuDNN SDPA forward of 32 heads (the
      peer repeats the kv heads first) of 4096 tokens, head dim 64 (9 calls); one step.
  check_trace.py ddp --out DIR --trace-convert BIN
      the same step on 2 DDP ranks over gloo: each rank's table holds c10d::allreduce_ rows of
      comm_size 2 whose counts add up to the model's parameters (DDP's buckets), bytes = 4 x
      count.

Exit 0 when everything holds, 1 otherwise.
"""
import argparse
import csv
import glob
import os
import re
import shutil
import subprocess
import sys
from collections import Counter

from check_capture import PY, check, compare, fresh, problems  # one list of problems, one verdict
from torch_step_gemms import linear_gemms, math_attention

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
STEP = os.path.join(ROOT, "bench", "peers", "torch_train_step.py")
SUMMARY = os.path.join(ROOT, "scripts", "capture_summary.py")
PLOT = os.path.join(ROOT, "scripts", "plot_report.py")
TINY_PARAMS = 1713408  # torch_train_step.py --model tiny's "params"


def record_and_convert(out, convert, ranks, seq_len):
    traces, tables = fresh(os.path.join(out, "traces")), os.path.join(out, "tables")
    shutil.rmtree(tables, ignore_errors=True)
    cmd = [PY, STEP, "--model", "tiny", "--seq-len", str(seq_len), "--warmup", "1", "--steps",
           "1", "--threads", "1", "--execution-trace", traces]
    if ranks > 1:
        cmd += ["--ddp", str(ranks)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if not check(p.returncode == 0, f"torch_train_step.py exited {p.returncode}: {p.stderr[-500:]}"):
        return []
    p = subprocess.run([convert, "--trace-path", traces, "--out", tables], capture_output=True,
                       text=True, timeout=120)
    print(p.stdout.strip())
    if not check(p.returncode == 0, f"trace_convert exited {p.returncode}: {p.stderr.strip()}"):
        return []
    found = sorted(glob.glob(os.path.join(tables, "capture-*.csv")))
    check(len(found) == ranks, f"expected {ranks} tables, found {found}")
    out_rows = []
    for path in found:
        with open(path, newline="") as f:
            out_rows.append(list(csv.DictReader(f)))
    return out_rows


def et_mode(a):
    tables = record_and_convert(a.out, a.trace_convert, 1, a.seq_len)
    if not tables:
        return
    rows = tables[0]
    mm, bmm, batches = Counter(), Counter(), set()
    for r in rows:
        check(r["source"] == "trace:et" and r["timed_calls"] == "0",
              f"{r['api']}: source {r['source']}, {r['timed_calls']} timed")
        key = (int(r["m"] or 0), int(r["n"] or 0), int(r["k"] or 0), r["layout"])
        if r["api"] == "aten::mm":
            mm[key] += int(r["calls"])
        elif r["api"] == "aten::bmm":
            bmm[key] += int(r["calls"])
            batches.add(int(r["batch"]))
        else:
            check(r["kind"] in ("memory_bound", "other"), f"{r['api']}: kind {r['kind']}")
    expected, _ = linear_gemms(a.bench_gemm, "tiny", a.seq_len, 1)
    compare("aten::mm of one step against bench_gemm's linear layers", mm, expected, "trace")
    attention, heads = math_attention("tiny", a.seq_len, 1)
    compare("aten::bmm of one step against the math attention's products", bmm, attention, "trace")
    check(batches == {heads}, f"bmm batches {sorted(batches)}, expected {heads} (B x Hq)")
    left_out = sorted({r["api"] for r in rows if r["kind"] in ("memory_bound", "other")})
    print(f"not replayed: {len(left_out)} operators, e.g. {', '.join(left_out[:5])}")
    # the same traces replayed: each product once, with the job's calls
    report = os.path.join(a.out, "replay")
    shutil.rmtree(report, ignore_errors=True)
    p = subprocess.run([a.bench_gemm, "--backend", "cpu", "--trace-path",
                        os.path.join(a.out, "traces"), "--max-samples", "3", "--min-samples", "3",
                        "--report-dir-path", report], capture_output=True, text=True, timeout=300)
    if not check(p.returncode == 0, f"bench_gemm --trace-path exited {p.returncode}: "
                                    f"{p.stderr.strip()[-400:]}"):
        return
    with open(os.path.join(report, "gemm_capture.csv"), newline="") as f:
        replayed = list(csv.DictReader(f))
    table = {(r["api"], r["m"], r["n"], r["k"], r["batch"], r["layout"]): int(r["calls"])
             for r in rows if r["kind"] == "gemm"}
    ran = {(r["gemm"], r["m"], r["n"], r["k"], r["batch"], r["transa"] + r["transb"]):
           int(r["captured_calls"]) for r in replayed}
    print(f"bench_gemm --trace-path: {len(replayed)} rows for {len(table)} products; "
          f"{sum(r['status'] == 'ok' for r in replayed)} ok")
    check(ran == table, f"the replay's shapes and calls differ from the table's: {ran} vs {table}")
    check(all(r["in_job_us"] == "" and r["status"] == "ok" for r in replayed),
          "an execution trace has no times: in_job_us must be empty, every row ok")
    summary_of_untimed_trace(os.path.join(a.out, "tables"), sum(mm.values()) + sum(bmm.values()))
    if a.bench_step:
        step_on_untimed_trace(a)


def summary_of_untimed_trace(tables, gemm_calls):
    """capture_summary.py on the execution trace's tables: no times there, so the summary must say
    so and show none (a 0.0 ms total and averages of 0 read as free calls), and count the calls by
    family instead."""
    p = subprocess.run([PY, os.path.join(ROOT, "scripts", "capture_summary.py"), tables],
                       capture_output=True, text=True, timeout=120)
    lines = p.stdout.splitlines()
    print("capture_summary.py: " + (lines[0] if lines else p.stderr.strip()[-300:]))
    if not check(p.returncode == 0, f"capture_summary.py exited {p.returncode}"):
        return
    check("no call timed" in lines[0], f"the first line does not say no call was timed: {lines[0]}")
    rows = [line.split() for line in lines[2:] if line.startswith("  ") and "by family" not in line]
    check(rows and all(r[-4:] == ["-"] * 4 for r in rows),
          f"an untimed row shows a time: {[r for r in rows if r[-4:] != ['-'] * 4][:2]}")
    check(f"by family: gemm {gemm_calls} calls" in p.stdout,
          f"the family line does not count the {gemm_calls} GEMM calls: {p.stdout[-300:]}")


def step_on_untimed_trace(a):
    """bench_step --trace-path on the same execution trace: it has no times to calibrate with, and
    bench_step must say so rather than print a projection that looks calibrated."""
    report = fresh(os.path.join(a.out, "step"))
    p = subprocess.run([a.bench_step, "--model", "tiny", "--seq-len", str(a.seq_len), "--backend",
                        "cpu", "--trace-path", os.path.join(a.out, "traces"), "--max-samples", "3",
                        "--max-time", "0.2", "--quiet", "--report-dir-path", report],
                       capture_output=True, text=True, timeout=300)
    if not check(p.returncode == 0, f"bench_step --trace-path exited {p.returncode}: "
                                    f"{p.stderr.strip()[-400:]}"):
        return
    note = re.search(r"note: --trace-path \S+: no call there has a time .*nothing is calibrated, "
                     r"each of the step's (\d+) operators has an isolated time", p.stderr)
    print(f"bench_step --trace-path: {note.group(0) if note else 'no note'}")
    check(note is not None and int(note.group(1)) > 0,
          f"bench_step does not say that the trace calibrates nothing: {p.stderr.strip()[-400:]}")


def replay_attention(bench, source_flag, source, report):
    """bench_attention on the CPU replaying a job's attention calls: its one row, or None."""
    p = subprocess.run([bench, "--backend", "cpu", source_flag, source, "--max-samples", "2",
                        "--min-samples", "2", "--report-dir-path", report],
                       capture_output=True, text=True, timeout=300)
    if not check(p.returncode == 0, f"bench_attention {source_flag} exited {p.returncode}: "
                                    f"{p.stderr[-400:]}"):
        return None
    with open(os.path.join(report, "attention.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    if not check(len(rows) == 1, f"expected one row, got {len(rows)}"):
        return None
    r = rows[0]
    print(f"bench_attention {source_flag}: {r['model']} b{r['batch_size']} s{r['seqlen_q']} "
          f"h{r['num_head_q']}/{r['num_head_kv']} d{r['head_dim_qk']} causal {r['causal']} "
          f"{r['pass']} {r['dtype']}: {r['time_us']} us alone, in_job_us {r['in_job_us']}, "
          f"ratio {r['in_job_ratio']!r}; note: {r['note']}")
    return r


def attention_mode(a):
    fixture = os.path.join(ROOT, "tests", "data", "trace", "host-a_4242.1700000000000.pt.trace.json")
    # The trace's bf16 flash attention runs in fp32 on the CPU: the job's time is kept, but a time
    # in another dtype is no measure of how the job's call fared, so there is no ratio.
    report = fresh(os.path.join(a.out, "replay"))
    r = replay_attention(a.bench_attention, "--trace-path", fixture, report)
    if r is None:
        return
    check((r["batch_size"], r["seqlen_q"], r["num_head_q"], r["num_head_kv"], r["head_dim_qk"],
           r["causal"], r["pass"], r["captured_calls"], r["dtype"]) ==
          ("2", "512", "32", "8", "128", "true", "fwd", "1", "fp32"), f"the row's shape: {r}")
    check(float(r["in_job_us"]) == 300.0, f"in_job_us {r['in_job_us']}, the kernel took 300 us")
    check(r["in_job_ratio"] == "" and "no in_job_ratio: the job ran this call in bf16" in r["note"],
          f"a bf16 call replayed in fp32 has no ratio, and says why: {r['in_job_ratio']!r}, "
          f"{r['note']!r}")
    # A job's fp32 call (4 calls, 500 us each) runs as the job ran it: in_job_us / time_us.
    fp32_report = fresh(os.path.join(a.out, "replay_fp32"))
    f = replay_attention(a.bench_attention, "--capture-path",
                         os.path.join(ROOT, "tests", "data", "capture_attention_fp32"), fp32_report)
    if f is None:
        return
    check(f["captured_calls"] == "4" and float(f["in_job_us"]) == 500.0 and f["dtype"] == "fp32",
          f"the fp32 call's row: {f}")
    if check(f["in_job_ratio"] != "", "the fp32 call has no in_job_ratio"):
        ratio = 500.0 / float(f["time_us"])
        check(abs(float(f["in_job_ratio"]) - ratio) <= 1e-6 * ratio + 1e-9,
              f"in_job_ratio {f['in_job_ratio']} is not 500 / {f['time_us']}")
    # the summary of the converted trace: every family's share of the traced 780 us (the GPU
    # step's span), and both replays: the fp32 call with its ratio, the bf16 one without
    table = os.path.join(a.out, "table")
    shutil.rmtree(table, ignore_errors=True)
    subprocess.run([a.trace_convert, "--trace-path", fixture, "--out", table], check=True,
                   capture_output=True, timeout=60)
    chart = os.path.join(a.out, "summary.png")
    p = subprocess.run([PY, SUMMARY, table, "--replay", report, fp32_report, "--plot", chart],
                       capture_output=True, text=True, timeout=120)
    print(p.stdout)
    check(p.returncode == 0, f"capture_summary.py exited {p.returncode}: {p.stderr[-300:]}")
    families = ("by family: gemm 28.2%, attention 38.5%, communication 19.2%, memory-bound 6.4%, "
                "other 1.3%, GPU idle 6.4% of the traced time")  # 220, 300, 150, 50, 10, 50 of 780
    check(families in p.stdout, f"the summary's families are not '{families}'")
    replay = {line.split()[-3]: line.split()[-1] for line in p.stdout.splitlines()
              if line.strip().startswith("attention ")}  # in_job_us: ratio
    check(len(replay) == 2 and replay.get("300.0") == "-" and replay.get("500.0", "-") != "-",
          f"the replays' lines (300 us without a ratio, 500 us with one): {replay}")
    check(os.path.getsize(chart) > 10000 if os.path.exists(chart) else False, f"no chart {chart}")
    # plot_report.py draws both replays (it took every in_job_us report for bench_ccl's, and a
    # KeyError on size_bytes ended it on bench_attention's)
    plots = fresh(os.path.join(a.out, "plots"))
    p = subprocess.run([PY, PLOT, os.path.join(report, "attention.csv"),
                        os.path.join(fp32_report, "attention.csv"), "--out", plots],
                       capture_output=True, text=True, timeout=120)
    pngs = p.stdout.split()
    check(p.returncode == 0 and len(pngs) == 2 and all(
        png.endswith("_capture_replay.png") and os.path.getsize(png) > 10000 for png in pngs),
        f"plot_report.py on the replays: exit {p.returncode}, {pngs}, {p.stderr[-300:]}")


def trim_mode(a):
    fixture = os.path.join(ROOT, "tests", "data", "trace", "host-a_4242.1700000000000.pt.trace.json")
    trim = os.path.join(ROOT, "scripts", "trim_trace.py")
    fresh(a.out)
    cut = os.path.join(a.out, "rank0.pt.trace.json.gz")
    p = subprocess.run([PY, trim, fixture, cut, "--max-events", "15"], capture_output=True,
                       text=True, timeout=60)
    print(p.stdout.strip())
    if not check(p.returncode == 0, f"trim_trace.py exited {p.returncode}: {p.stderr[-300:]}"):
        return
    import gzip
    import json
    with gzip.open(cut, "rt") as f:
        events = json.load(f)["traceEvents"]
    check(len(events) == 12, f"{len(events)} events kept, expected 12")
    launches = {e["args"]["correlation"] for e in events if e.get("cat") == "cuda_runtime"}
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy")]
    check(sorted(e["args"]["correlation"] for e in gpu) == [101, 102, 103],
          f"GPU events kept: {[(e['name'], e['args'].get('correlation')) for e in gpu]}")
    check(launches == {101, 102, 103}, f"launches kept: {sorted(launches)}")
    table = os.path.join(a.out, "table")
    p = subprocess.run([a.trace_convert, "--trace-path", cut, "--out", table], capture_output=True,
                       text=True, timeout=60)
    if not check(p.returncode == 0, f"trace_convert exited {p.returncode}: {p.stderr[-300:]}"):
        return
    rows = []
    for path in glob.glob(os.path.join(table, "capture-*.csv")):
        with open(path, newline="") as f:
            rows += list(csv.DictReader(f))
    mm = [r for r in rows if r["api"] == "aten::mm"]
    check(len(mm) == 1 and mm[0]["calls"] == "1" and float(mm[0]["total_us"]) == 220.0,
          f"aten::mm rows of the trimmed trace: {mm}")
    whole = os.path.join(a.out, "whole.json")
    p = subprocess.run([PY, trim, fixture, whole, "--max-events", "1000"], capture_output=True,
                       text=True, timeout=60)
    with open(whole) as f:
        check(len(json.load(f)["traceEvents"]) == 25, "the untrimmed cut does not keep 25 events")
    # flows.pt.trace.json: the same step with a flow pair ("s" at the launch, "f" at its GPU
    # event) per launch, 38 events. With 15: the marker, then linear's 6 CPU events, 2 kernels and
    # their 4 flow events (12 of the 14 left); copy_ with its launch, memcpy and 2 flows (5)
    # does not fit. Counting flows after the budget kept copy_ and 6 flows: 18 events.
    flows_cut = os.path.join(a.out, "flows.json")
    p = subprocess.run([PY, trim, os.path.join(ROOT, "tests", "data", "trace", "flows.pt.trace.json"),
                        flows_cut, "--max-events", "15"], capture_output=True, text=True, timeout=60)
    print(p.stdout.strip())
    if check(p.returncode == 0, f"trim_trace.py on the flows exited {p.returncode}: {p.stderr[-300:]}"):
        with open(flows_cut) as f:
            events = json.load(f)["traceEvents"]
        flow_ids = sorted(e["id"] for e in events if e.get("ph") in ("s", "f"))
        check(len(events) == 13 and flow_ids == [101, 101, 102, 102],
              f"{len(events)} events kept of --max-events 15 (expected 13), flow ids {flow_ids}")


def cycles_mode(a):
    traces, table = fresh(os.path.join(a.out, "traces")), os.path.join(a.out, "table")
    shutil.rmtree(table, ignore_errors=True)
    fixture = os.path.join(ROOT, "tests", "data", "trace", "host-a_4242.1700000000000.pt.trace.json")
    for stamp in ("1700000000000", "1700000005000"):  # two profiling cycles of one process
        shutil.copy(fixture, os.path.join(traces, f"host-a_4242.{stamp}.pt.trace.json"))
    p = subprocess.run([a.trace_convert, "--trace-path", traces, "--out", table],
                       capture_output=True, text=True, timeout=60)
    print(p.stdout.strip())
    if not check(p.returncode == 0, f"trace_convert exited {p.returncode}: {p.stderr.strip()}"):
        return
    found = sorted(os.path.basename(f) for f in glob.glob(os.path.join(table, "capture-*.csv")))
    if not check(found == ["capture-host-a-rank1-1.csv", "capture-host-a-rank1-2.csv"],
                 f"two cycles of host-a rank 1 wrote {found}"):
        return
    listed = [line.split(" -> ")[1].split(":")[0] for line in p.stdout.splitlines() if " -> " in line]
    check(len(set(listed)) == 2, f"stdout lists {listed}")
    with open(os.path.join(table, "capture-host-a-rank1-2.csv"), newline="") as f:
        mm = [r for r in csv.DictReader(f) if r["api"] == "aten::mm"]
    check(len(mm) == 1 and float(mm[0]["total_us"]) == 220.0, f"the second cycle's aten::mm: {mm}")


def h200_mode(a):
    fixture = os.path.join(ROOT, "tests", "data", "trace", "h200")
    table = os.path.join(a.out, "table")
    shutil.rmtree(table, ignore_errors=True)
    os.makedirs(a.out, exist_ok=True)
    p = subprocess.run([a.trace_convert, "--trace-path", fixture, "--out", table],
                       capture_output=True, text=True, timeout=60)
    print(p.stdout.strip())
    if not check(p.returncode == 0, f"trace_convert exited {p.returncode}: {p.stderr.strip()}"):
        return
    check("trace:gpu" in p.stdout and ", 1 steps" in p.stdout, f"not one GPU step: {p.stdout}")
    with open(os.path.join(table, "capture-trace-rank0.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    mm = {(r["m"], r["n"], r["k"], r["layout"], r["dtype"]): int(r["calls"])
          for r in rows if r["api"] == "aten::mm"}
    want = {("4096", "2048", "2048", "NT", "bf16"): 18, ("4096", "512", "2048", "NT", "bf16"): 18,
            ("4096", "8192", "2048", "NT", "bf16"): 18, ("4096", "2048", "8192", "NT", "bf16"): 9}
    check(mm == want, f"aten::mm rows {mm}, expected {want}")
    check(all(r["timed_calls"] == r["calls"] and float(r["total_us"]) > 0
              for r in rows if r["api"] == "aten::mm"), "an aten::mm row without its kernels' time")
    sdpa = [r for r in rows if r["kind"] == "attention"]
    got = [(r["api"], r["op"], r["dtype"], r["heads_q"], r["heads_kv"], r["seq_q"], r["seq_kv"],
            r["head_dim_qk"], r["head_dim_v"], r["causal"], r["calls"]) for r in sdpa]
    check(got == [("aten::_scaled_dot_product_cudnn_attention", "fwd", "bf16", "32", "32", "4096",
                   "4096", "64", "64", "true", "9")], f"attention rows {got}")


def ddp_mode(a):
    tables = record_and_convert(a.out, a.trace_convert, 2, a.seq_len)
    for rank, rows in enumerate(tables):
        colls = [r for r in rows if r["kind"] == "collective"]
        counts = [int(r["count"]) * int(r["calls"]) for r in colls]
        print(f"rank {rank}: {len(colls)} all-reduce buckets, counts "
              f"{[int(r['count']) for r in colls]}, {sum(counts)} elements in all")
        check(sum(counts) == TINY_PARAMS, f"rank {rank}: all-reduced {sum(counts)} elements, the "
                                          f"model has {TINY_PARAMS} parameters")
        for r in colls:
            check((r["api"], r["op"], r["dtype"], r["comm_size"]) ==
                  ("c10d::allreduce_", "all_reduce", "fp32", "2"), f"rank {rank}: {r}")
            check(int(r["bytes"]) == 4 * int(r["count"]), f"rank {rank}: bytes of {r}")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=["et", "ddp", "attention", "trim", "cycles", "h200"])
    p.add_argument("--out", required=True)
    p.add_argument("--trace-convert")
    p.add_argument("--bench-gemm")
    p.add_argument("--bench-attention")
    p.add_argument("--bench-step")
    p.add_argument("--seq-len", type=int, default=32)
    a = p.parse_args(argv)
    globals()[a.mode + "_mode"](a)
    for message in problems:
        print("FAIL:", message)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
