"""The lowest CPU priority for a test's long-waiting processes, so that on a loaded machine they
take the cores only when no other test wants them (scripts/ctest_cores.sh runs such tests, label
`waiting`, beside one CPU-bound test per core).

nice alone is not enough: with the kernel's autogroup scheduling (Debian's default), every
session is a group that gets its share of the CPU whatever its processes' nice values, and the
ranks of these tests run in sessions of their own (each node's orted daemonizes; Slurm starts a
task in a new session): one spinning rank took a core from the tests beside it. So the session's
group is niced too (/proc/PID/autogroup, which nices every process of that session; absent where
autogroup is not built in, and then nice is what counts)."""
import os

NICEST = 19


def lowest_command(argv):
    """ARGV run at the lowest priority, its session's group too; the same pid (exec)."""
    return ["/bin/sh", "-c",
            f'echo {NICEST} > /proc/self/autogroup 2>/dev/null; exec nice -n {NICEST} "$0" "$@"'] + list(argv)


def lowest_priority(pids):
    """Running processes PIDS (and their sessions' groups) to the lowest priority; those gone
    meanwhile are passed over."""
    for pid in pids:
        try:
            os.setpriority(os.PRIO_PROCESS, pid, NICEST)
        except OSError:
            continue
        try:
            with open(f"/proc/{pid}/autogroup", "w") as f:
                f.write(str(NICEST))
        except OSError:
            pass
