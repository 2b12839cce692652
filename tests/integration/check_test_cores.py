#!/usr/bin/env python3
"""Every test of this build takes one slot of the resource `cores` (RESOURCE_GROUPS cores:1), so
scripts/ctest_cores.sh runs at most one CPU-bound test per core, except the tests labelled
`waiting`, which take none and run beside them. A test missing the property would run as an
extra CPU-bound test on a loaded machine (a name with a semicolon in it escapes the CMake loop
that sets it).

Usage: check_test_cores.py BUILD_DIR
"""
import json
import subprocess
import sys

from report_check import verdict


def main() -> int:
    build = sys.argv[1]
    shown = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, capture_output=True,
                           text=True, check=True)
    problems = []
    waiting = []
    tests = json.loads(shown.stdout)["tests"]
    for t in tests:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        labels = props.get("LABELS", [])
        groups = props.get("RESOURCE_GROUPS")
        if "waiting" in labels:
            waiting.append(t["name"])
            if groups:
                problems.append(f"{t['name']!r}: labelled waiting, but takes {groups}")
        elif not groups or groups[0].get("requirements") != [{".type": "cores", "slots": 1}]:
            problems.append(f"{t['name']!r}: takes no slot of `cores` (RESOURCE_GROUPS {groups})")
    return verdict(problems, None, f"{len(tests)} tests, {len(tests) - len(waiting)} take a core; "
                                   f"waiting: {', '.join(sorted(waiting)) or 'none'}")


if __name__ == "__main__":
    sys.exit(main())
