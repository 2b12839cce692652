#!/usr/bin/python3
"""The table every collectives peer script prints: for each message size, the median over
rounds of a peer's time and of bench_ccl's (its CSVs' time_us), and ours / peer.

Usage: ratio_table.py DIR ROUNDS PEER_NAME OURS_NAME FORMAT
  DIR holds ours_<r>.csv and peer_<r>.txt for r in 1..ROUNDS; FORMAT says how to read a peer line:
  plain       "plain SIZE US" (bench/peers/mpi_allreduce_loop.c)
  nccl-tests  size count type redop root time algbw busbw #wrong ... (out-of-place time)
  osu         "SIZE AVG_LATENCY_US"
"""
import csv
import statistics
import sys


def peer_time(fields, fmt):
    """(size, us) of one peer output line, or None when it is not a data line."""
    if fmt == "plain" and len(fields) == 3 and fields[0] == "plain":
        return int(fields[1]), float(fields[2])
    if fmt == "nccl-tests" and len(fields) >= 9 and fields[0].isdigit():
        return int(fields[0]), float(fields[5])
    if fmt == "osu" and len(fields) >= 2 and fields[0].isdigit():
        return int(fields[0]), float(fields[1])
    return None


def main() -> int:
    tmp, rounds, peer_name, ours_name, fmt = sys.argv[1], int(sys.argv[2]), *sys.argv[3:6]
    ours, peer = {}, {}
    for r in range(1, rounds + 1):
        for row in csv.DictReader(open(f"{tmp}/ours_{r}.csv")):
            ours.setdefault(int(row["size_bytes"]), []).append(float(row["time_us"]))
        for line in open(f"{tmp}/peer_{r}.txt"):
            found = peer_time(line.split(), fmt)
            if found:
                peer.setdefault(found[0], []).append(found[1])
    print(f"| size | {ours_name} (us) | {peer_name} (us) | ratio |")
    print("|---:|---:|---:|---:|")
    for size in sorted(set(ours) & set(peer)):
        o, p = statistics.median(ours[size]), statistics.median(peer[size])
        print(f"| {size} | {o:.2f} | {p:.2f} | {o / p:.3f} |")
    print(f"(medians of {rounds} alternating runs each; ratio = {ours_name} / {peer_name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
