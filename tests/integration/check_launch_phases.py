#!/usr/bin/python3
"""torch_train_step.py's host cost a kernel in the step's own code (launches_by_phase,
kernel_host_us), on a Kineto trace made here and worked by hand: two ProfilerStep# ranges, each a
forward on the main thread, a backward on the autograd thread from its first
evaluate_function, and an optimizer from its Optimizer.step# range. Launches are the CUDA
runtime's and driver's calls whose correlation a kernel carries: step 1 launches 2 + 2 + 1
kernels (and a memset, which no kernel carries), step 2 2 + 2 + 2; one launch after the last step
is outside both. So 2 forward, 2 backward and 1.5 optimizer kernels a step; issue times of 0.05,
0.08 and 0.03 ms make 25, 40 and 20 us a kernel. A trace without a step range gives None.

Usage: check_launch_phases.py; exit 0 when every value matches.
"""
import importlib.util
import os
import sys

from report_check import verdict

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def load_torch_train_step():
    spec = importlib.util.spec_from_file_location(
        "torch_train_step", os.path.join(ROOT, "bench/peers/torch_train_step.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def trace():
    events = []
    corr = iter(range(1, 100))

    def launch(ts, tid=10, api="cudaLaunchKernel", cat="cuda_runtime", kind="kernel"):
        c = next(corr)
        events.append({"ph": "X", "cat": cat, "name": api, "ts": ts, "dur": 5, "tid": tid,
                       "args": {"correlation": c}})
        events.append({"ph": "X", "cat": kind, "name": "k", "ts": ts + 50, "dur": 10, "tid": 7,
                       "args": {"correlation": c}})

    def annotation(name, ts, dur, tid=10, cat="user_annotation"):
        events.append({"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "tid": tid})

    for start, optimizer_launches in ((1000, 1), (3000, 2)):
        annotation(f"ProfilerStep#{start}", start, 2000)
        launch(start + 10)
        launch(start + 20, api="cuLaunchKernelEx", cat="cuda_driver")  # cuBLAS's
        launch(start + 30, api="cudaMemsetAsync", kind="gpu_memset")  # not a kernel
        annotation("autograd::engine::evaluate_function: MmBackward0", start + 100, 300, tid=20,
                   cat="cpu_op")
        launch(start + 110, tid=20)
        launch(start + 120, tid=20, api="cuLaunchKernelEx", cat="cuda_driver")
        annotation("Optimizer.step#AdamW.step", start + 500, 200)
        for i in range(optimizer_launches):
            launch(start + 510 + 10 * i)
    launch(6000)  # after the last step
    return {"traceEvents": events}


def main():
    t = load_torch_train_step()
    launches = t.launches_by_phase(trace())
    no_step = {"traceEvents": [e for e in trace()["traceEvents"]
                               if not e["name"].startswith("ProfilerStep#")]}
    got = {
        "launches": launches,
        "us": t.kernel_host_us({"forward": 0.05, "backward": 0.08, "optimizer": 0.03}, launches),
        "no optimizer kernel": t.kernel_host_us({"forward": 0.05, "backward": 0.08, "optimizer": 1},
                                                dict(launches, optimizer=0)),
        "no step": t.launches_by_phase(no_step),
    }
    want = {
        "launches": {"forward": 2.0, "backward": 2.0, "optimizer": 1.5, "steps": 2},
        "us": {"forward": 25.0, "backward": 40.0, "optimizer": 20.0},
        "no optimizer kernel": {"forward": 25.0, "backward": 40.0},
        "no step": None,
    }
    problems = [f"{k}: {got[k]} where {want[k]} was worked by hand" for k in want if got[k] != want[k]]
    return verdict(problems, None, "launch phases: ok")


if __name__ == "__main__":
    sys.exit(main())
