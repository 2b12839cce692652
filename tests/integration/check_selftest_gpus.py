#!/usr/bin/env python3
"""gpu_selftest.sh counts the GPUs its ranks will see, not every GPU of the node: a fake
nvidia-smi lists four GPUs, and CUDA_VISIBLE_DEVICES narrows them as CUDA does (indices or UUIDs,
up to the first entry that names no GPU).

Usage: check_selftest_gpus.py SCRIPT WORK_DIR
"""
import os
import subprocess
import sys

from report_check import verdict


def main() -> int:
    script, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    fake = os.path.join(work, "nvidia-smi")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\n")
        for i, u in enumerate("abcd"):
            f.write(f"echo 'GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{u}{u}{u}{u}-0000)'\n")
    os.chmod(fake, 0o755)
    cases = [(None, 4), ("1,3", 2), ("GPU-bbbb-0000", 1), ("0,7,1", 1), ("", 0), ("-1", 0),
             ("GPU-dddd-0000,2", 2), ("GPU-ffff", 0)]
    problems = []
    for visible, want in cases:
        env = dict(os.environ, PATH=work + ":/usr/bin:/bin")
        env.pop("CUDA_VISIBLE_DEVICES", None)
        if visible is not None:
            env["CUDA_VISIBLE_DEVICES"] = visible
        got = subprocess.run(["bash", script, "--list-gpus"], env=env, capture_output=True, text=True)
        if got.returncode != 0 or not got.stdout.startswith(f"{want} GPUs visible"):
            problems.append(f"CUDA_VISIBLE_DEVICES={visible!r}: want {want}, got exit {got.returncode}: "
                            f"{got.stdout.strip()} {got.stderr.strip()}")
    return verdict(problems, None, f"ok: {len(cases)} CUDA_VISIBLE_DEVICES settings counted as CUDA sees them")


if __name__ == "__main__":
    sys.exit(main())
