#!/usr/bin/python3
"""step_vs_torch.py's breakdown of a profiled GPU step (traced_parts), on the repository's GPU
step trace (tests/data/trace/host-a_4242.1700000000000.pt.trace.json), worked by hand from its
kernels: the GEMM (200 us) and its split-K reduction (20) 0.22 ms; flash attention 300 us 0.30;
the memory-bound aten::add_ kernel (30) and the host-to-device copy (20) 0.05; the NCCL kernel
(100, and the 50 before it, when its launch was long queued: the device's) and the kernel no
operator launched (10) 0.16 as other; 0.05 ms with no kernel between the first kernel's start and
the last one's end while the device waited for the host (before the kernel no launch correlates
with). Renamed aten::_foreach_add_, the add's 30 us
are the optimizer's. The step of tests/data/trace/phases (a forward, a backward on the autograd
thread, foreach AdamW): GEMMs 0.30 ms, add_ 0.05, foreach 0.04, the kernel no operator launched
0.01, and 0.24 ms idle: 0.05 before a forward kernel, 0.12 before backward ones, 0.07 before the
optimizer's. A projection's parts print its host part split by phase in the same order.

Usage: check_traced_parts.py TRACE_CONVERT; exit 0 when every value matches.
"""
import json
import os
import sys
import tempfile
import types
import importlib.util

from report_check import verdict

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURE = os.path.join(ROOT, "tests/data/trace/host-a_4242.1700000000000.pt.trace.json")
PHASES = os.path.join(ROOT, "tests/data/trace/phases/rank0.pt.trace.json")


def load_step_vs_torch():
    sys.path.insert(0, os.path.join(ROOT, "bench/peers"))
    spec = importlib.util.spec_from_file_location("step_vs_torch",
                                                  os.path.join(ROOT, "bench/peers/step_vs_torch.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parts_of(svt, trace_convert, events, work, fixture=FIXTURE):
    folder = os.path.join(work, "trace")
    os.makedirs(folder)
    with open(os.path.join(folder, os.path.basename(fixture)), "w") as f:
        json.dump(events, f)
    got = svt.traced_parts(types.SimpleNamespace(trace_convert=trace_convert), folder,
                           os.path.join(work, "table"))
    return {k: round(v, 6) for k, v in got.items()} if got else got


def main() -> int:
    svt = load_step_vs_torch()
    with open(FIXTURE) as f:
        trace = json.load(f)
    failures = []
    with tempfile.TemporaryDirectory() as work:
        got = parts_of(svt, sys.argv[1], trace, os.path.join(work, "plain"))
        want = {"gemm": 0.22, "attention": 0.3, "memory_bound": 0.05, "optimizer": 0.0,
                "idle": 0.05, "other": 0.16}
        if got != want:
            failures.append(f"the trace as recorded: {got}, expected {want}")
        for e in trace["traceEvents"]:
            if e.get("name") == "aten::add_":
                e["name"] = "aten::_foreach_add_"
        got = parts_of(svt, sys.argv[1], trace, os.path.join(work, "foreach"))
        want.update(memory_bound=0.02, optimizer=0.03)
        if got != want:
            failures.append(f"the add renamed aten::_foreach_add_: {got}, expected {want}")
        with open(PHASES) as f:
            phases = json.load(f)
        got = parts_of(svt, sys.argv[1], phases, os.path.join(work, "phases"), PHASES)
        want = {"gemm": 0.3, "attention": 0.0, "memory_bound": 0.05, "optimizer": 0.04,
                "idle": 0.24, "other": 0.01, "idle_forward": 0.05, "idle_backward": 0.12,
                "idle_optimizer": 0.07}
        if got != want:
            failures.append(f"the step with its phases: {got}, expected {want}")
        text = svt.traced_text(got)
        if text != "0.3 / 0.0 / 0.1 / 0.0 / 0.2 (forward 0.1, backward 0.1, optimizer 0.1)":
            failures.append(f"the step with its phases as the parts table prints it: {text}")
        # the projection's parts beside them: the host part split the same way
        row = {"gemm_ms": "40", "attention_ms": "10", "memop_ms": "20", "optimizer_ms": "12",
               "host_ms": "2.5", "host_forward_ms": "2", "host_backward_ms": "0.5",
               "host_optimizer_ms": "0"}
        text = svt.parts_text(row)
        if text != "40.0 / 10.0 / 20.0 / 12.0 / 2.5 (forward 2.0, backward 0.5, optimizer 0.0)":
            failures.append(f"a projection's parts with a host part: {text}")
        text = svt.parts_text(dict(row, host_ms="0"))
        if text != "40.0 / 10.0 / 20.0 / 12.0 / 0.0":
            failures.append(f"a projection's parts without a host part: {text}")
        if svt.traced_parts(types.SimpleNamespace(trace_convert="/nonexistent"), work,
                            os.path.join(work, "none")) is not None:
            failures.append("no trace_convert: a breakdown, expected none")
    return verdict(failures, None, "traced parts: ok")


if __name__ == "__main__":
    sys.exit(main())
