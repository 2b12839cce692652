#!/usr/bin/python3
"""Cuts a PyTorch profiler (Kineto) trace down to a test fixture: its first --steps steps and at
most --max-events events, every kernel still linked to the operator that launched it.

  scripts/trim_trace.py IN OUT [--steps N] [--max-events M]

IN and OUT are .json or .json.gz (gzip by the name). What is kept:
  - the trace's own keys (deviceProperties, distributedInfo, schemaVersion, ...) and its
    metadata events (ph "M": process and thread names);
  - the first N ProfilerStep#k annotations (the whole trace when it has none) and the CPU events
    inside them (operators, annotations, CUDA runtime and driver calls), whole top-level
    operators at a time, in time order, until M events would be passed: an operator is kept with
    every event nested in it on its thread, the runtime calls among them, the GPU events those
    launched (matched by correlation, or by External id where a kernel carries one) and the flow
    events (ph "s"/"f") whose id is a kept launch's correlation, all counted against M, so no
    kept kernel loses its launch or its operator and no kept launch loses its kernel.
GPU events no kept launch or operator queued (a kernel with neither correlation nor External
id) are dropped.
Prints one line: events in and out, steps, operators, kernels kept (all linked). Exit 2 for a
file that is not a Kineto trace (one error line), 1 when not even one operator fits in M.
"""
import argparse
import gzip
import json
import sys

CPU_CATS = {"cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver"}
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"}
LAUNCH_CATS = {"cuda_runtime", "cuda_driver"}


def fail(message: str, code: int = 2) -> None:
    print(f"error: trim_trace.py: {message}", file=sys.stderr)
    sys.exit(code)


def load(path: str) -> dict:
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, EOFError) as e:
        fail(f"{path}: cannot read it ({e})")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        fail(f"{path}: not JSON ({e})")
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail(f"{path}: not a PyTorch profiler trace (no traceEvents list)")
    return doc


def arg(e: dict, key: str):
    a = e.get("args")
    return a.get(key) if isinstance(a, dict) else None


def is_step(e: dict) -> bool:
    return e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("ProfilerStep#")


def span(e: dict):
    ts = float(e.get("ts", 0))
    return ts, ts + float(e.get("dur", 0))


def trim(doc: dict, steps: int, max_events: int) -> tuple:
    events = [e for e in doc["traceEvents"] if isinstance(e, dict)]
    meta = [e for e in events if e.get("ph") == "M"]
    complete = [e for e in events if e.get("ph") == "X"]
    markers = sorted((e for e in complete if is_step(e)), key=lambda e: span(e)[0])[:steps]
    if markers:
        window = (span(markers[0])[0], max(span(m)[1] for m in markers))
    else:
        window = (float("-inf"), float("inf"))
    cpu = [e for e in complete if e.get("cat") in CPU_CATS and not is_step(e)
           and window[0] <= span(e)[0] <= window[1]]
    gpu = [e for e in complete if e.get("cat") in GPU_CATS]
    by_corr, by_ext = {}, {}
    for g in gpu:
        if arg(g, "correlation") is not None:
            by_corr.setdefault(arg(g, "correlation"), []).append(g)
        elif arg(g, "External id") is not None:
            by_ext.setdefault(arg(g, "External id"), []).append(g)

    # top-level CPU events per thread, each with what nests inside it
    groups = []
    for tid in sorted({(e.get("pid"), e.get("tid")) for e in cpu}, key=str):
        on = sorted((e for e in cpu if (e.get("pid"), e.get("tid")) == tid),
                    key=lambda e: (span(e)[0], -span(e)[1]))
        current, end = None, None
        for e in on:
            s, f = span(e)
            if current is not None and s < end:
                current.append(e)
            else:
                current, end = [e], f
                groups.append(current)
    groups.sort(key=lambda g: span(g[0])[0])

    flows_of = {}  # correlation -> its flow events (the arrows from a launch to its kernel)
    for e in events:
        if e.get("ph") in ("s", "f"):
            flows_of.setdefault(e.get("id"), []).append(e)

    kept, flows, budget = [], [], max_events - len(meta) - len(markers)
    ops = kernels = 0
    for group in groups:
        launched, arrows = [], []
        for e in group:
            if e.get("cat") in LAUNCH_CATS and arg(e, "correlation") is not None:
                launched += by_corr.get(arg(e, "correlation"), [])
                arrows += flows_of.get(arg(e, "correlation"), [])
            if arg(e, "External id") is not None and e.get("cat") not in LAUNCH_CATS:
                launched += by_ext.get(arg(e, "External id"), [])
        # the group's flow events are part of its cost: --max-events bounds the whole output
        cost = len(group) + len(launched) + len(arrows)
        if cost > budget:
            break
        budget -= cost
        kept += group + launched
        flows += arrows
        ops += sum(1 for e in group if e.get("cat") == "cpu_op")
        kernels += len(launched)
    if ops == 0:
        fail(f"not one operator fits in --max-events {max_events} "
             f"({len(meta)} metadata events and {len(markers)} step markers come first)", 1)
    out = {k: v for k, v in doc.items() if k != "traceEvents"}
    out["traceEvents"] = meta + markers + sorted(kept, key=lambda e: span(e)[0]) + flows
    return out, len(events), len(markers), ops, kernels


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--steps", type=int, default=1, help="ProfilerStep#k annotations kept (default 1)")
    ap.add_argument("--max-events", type=int, default=2000, help="events at most (default 2000)")
    a = ap.parse_args()
    if a.steps < 1 or a.max_events < 1:
        fail("--steps and --max-events must be at least 1")
    out, total, steps, ops, kernels = trim(load(a.input), a.steps, a.max_events)
    opener = gzip.open if a.output.endswith(".gz") else open
    try:
        with opener(a.output, "wt", encoding="utf-8") as f:
            json.dump(out, f, separators=(",", ":"))
    except OSError as e:
        fail(f"{a.output}: cannot write it ({e})")
    print(f"{a.input}: {total} events -> {len(out['traceEvents'])} in {a.output}: {steps} step(s), "
          f"{ops} operators, {kernels} GPU events, each linked to its launch and operator")
    return 0


if __name__ == "__main__":
    sys.exit(main())
