#!/usr/bin/python3
"""bench/peers/peer_common.gpu_samples_us, the GPU memops peers' timing, on a stand-in of the
few torch.cuda calls it makes (no GPU here): the operand sets are taken in turn without a break
between the warm-up and the samples (starting the samples at set 0 again would time sets the
warm-up's last calls left in L2), and each call's result stays alive until its set comes round
again (dropped at once, PyTorch's caching allocator would hand the next call the block the last
one wrote, still in L2). Exit 0 when both hold, 1 otherwise.

  check_gpu_samples.py PEERS_DIR
"""
import gc
import sys
import weakref


class Result:
    """What one call returns: a stand-in for its output tensor."""


class StandInCuda:
    class Event:
        def __init__(self, enable_timing=False):
            self.at = 0.0

        def record(self):
            pass

        def elapsed_time(self, other):
            return 0.001  # ms

    @staticmethod
    def synchronize():
        pass

    @staticmethod
    def _sleep(cycles):
        pass


class StandInTorch:
    cuda = StandInCuda


def main():
    sys.path.insert(0, sys.argv[1])
    from peer_common import gpu_samples_us

    sets, repeats = 5, 23
    order, live_at_call, alive = [], [], weakref.WeakSet()

    def call(j):
        def run():
            order.append(j)
            live_at_call.append(len(alive))
            r = Result()
            alive.add(r)
            return r
        return run

    gc.disable()  # reference counting alone frees a dropped result at once
    samples = gpu_samples_us(StandInTorch, [call(j) for j in range(sets)], repeats)
    failures = []
    if len(samples) != repeats:
        failures.append(f"{len(samples)} samples, expected {repeats}")
    if order != [i % sets for i in range(len(order))]:
        breaks = [k for k in range(1, len(order)) if order[k] != (order[k - 1] + 1) % sets]
        failures.append(f"the sets are not taken in turn: the order breaks at call {breaks[0]} "
                        f"of {len(order)} ({order[breaks[0] - 1]} then {order[breaks[0]]})")
    # once every set has run, each call finds the other sets' results (and its own last one) alive
    late = live_at_call[sets:]
    if late and min(late) < sets:
        failures.append(f"a call found {min(late)} results alive, expected {sets}: results are "
                        "dropped before their set comes round again")
    print(f"{len(order)} calls ({len(order) - repeats} warm-up) over {sets} sets; results alive "
          f"at each call from the {sets + 1}th on: {min(late) if late else '-'} to "
          f"{max(late) if late else '-'}")
    for f in failures:
        print(f"FAIL: {f}")
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
