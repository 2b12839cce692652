"""What the Python peers share: the GEMM peers' command line, the stop rule they sample under,
the memops peers' fixed-count timing on the host clock (and with CUDA events on a GPU), and the
step comparisons' way of running a child."""
import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time


def fresh_folder(path, who, flag="--work-dir"):
    """Empties `path` for this run's files. Only a folder an earlier opbench run made there is
    removed (its parent's manifest lists it: plot_report.py's rule); anything else of that name
    is left as it is, and the run refused (exit 2, naming `flag`)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "scripts"))
    import plot_report
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    plot_report.claim(path, who, flag)
    if os.path.isdir(path):
        shutil.rmtree(path)


class ChildFailed(Exception):
    """A child the comparison depends on exited non-zero; the message holds its last lines."""


def run_child(cmd, env=None) -> str:
    """Runs cmd (echoed on stderr), stdout and stderr together; its output, or ChildFailed."""
    print("$ " + " ".join(shlex.quote(c) for c in cmd), file=sys.stderr, flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if r.returncode != 0:
        tail = "\n".join(r.stdout.strip().splitlines()[-8:])
        raise ChildFailed(f"{os.path.basename(cmd[0])} exited {r.returncode}:\n{tail}")
    return r.stdout


def gemm_arguments(doc: str, dtypes: list, max_time: float, extra=None) -> argparse.Namespace:
    """M N K [--layout] [--dtype] [--max-time], the first of `dtypes` the default; `extra` adds
    a peer's own flags to the parser."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("m", type=int)
    parser.add_argument("n", type=int)
    parser.add_argument("k", type=int)
    parser.add_argument("--layout", default="NN", choices=["NN", "NT", "TN", "TT"])
    parser.add_argument("--dtype", default=dtypes[0], choices=dtypes)
    parser.add_argument("--max-time", type=float, default=max_time)
    if extra:
        extra(parser)
    return parser.parse_args()


def sample_until_precise(batch, max_time: float, min_samples: int, min_time: float) -> list:
    """bench_gemm's stop rule: call batch() (it returns a list of sample times) until the
    relative standard error of the mean is under 1% after min_samples and min_time seconds, or
    max_time passes (with 3 samples at least) or 10,000 samples are taken."""
    samples = []
    begin = time.perf_counter()
    while True:
        samples += batch()
        elapsed = time.perf_counter() - begin
        if len(samples) >= min_samples and elapsed >= min_time:
            if statistics.stdev(samples) / len(samples) ** 0.5 / statistics.mean(samples) < 0.01:
                break
        if (elapsed >= max_time and len(samples) >= 3) or len(samples) >= 10000:
            break
    return samples


def host_samples_us(call, repeats: int) -> list:
    """The memops peers' timing: at least 3 calls and 1 s of warm-up, then `repeats` calls timed
    one by one on the host clock, in microseconds."""
    warmups, start = 0, time.perf_counter()
    while warmups < 3 or time.perf_counter() - start < 1.0:
        call()
        warmups += 1
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        call()
        samples.append((time.perf_counter_ns() - t0) / 1e3)
    return samples


def gpu_samples_us(torch, calls: list, repeats: int) -> list:
    """The memops peers' timing on a GPU, as bench_memops times a GPU operator: `calls` (one per
    operand set, together past the L2) in turn, at least 3 calls and 0.2 s of warm-up, then
    `repeats` calls each between two CUDA events on the current stream, in microseconds. The
    turn goes on from the warm-up to the samples (starting again at set 0 would time sets the
    warm-up's last calls left in L2), and each call's result is kept until its set comes round
    again: PyTorch's caching allocator would otherwise give every call the block the call before
    it wrote, still in L2, where bench_memops's outputs rotate with their sets."""
    kept = [None] * len(calls)
    warmups, start, launch_s = 0, time.perf_counter(), []
    while warmups < 3 or time.perf_counter() - start < 0.2:
        t0 = time.perf_counter()
        j = warmups % len(calls)
        kept[j] = calls[j]()
        launch_s.append(time.perf_counter() - t0)  # the host's time to queue the call
        warmups += 1
        torch.cuda.synchronize()
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
             for _ in range(repeats)]
    # The calls queue behind a GPU sleep, as bench_memops's behind its stream blocker: a call
    # whose launch (Python, autograd, the dispatcher) takes longer than its kernels would
    # otherwise be timed at the host's pace, with the GPU idle between the events. The sleep
    # covers twice the calls' launch time at 2 GHz (longer at a lower clock), at most 0.2 s; a
    # call that syncs inside waits it out before its own events, which it then times as before.
    queue_s = min(0.2, 2 * repeats * statistics.median(launch_s))
    torch.cuda._sleep(int(queue_s * 2e9))
    for i, (begin, end) in enumerate(pairs):
        j = (warmups + i) % len(calls)
        begin.record()
        kept[j] = calls[j]()
        end.record()
    torch.cuda.synchronize()
    del kept
    return [begin.elapsed_time(end) * 1e3 for begin, end in pairs]
