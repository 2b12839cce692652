# A throwaway one-node Slurm cluster on this machine (private munged, slurmctld and slurmd from a
# slurm.conf in a temp dir, on free ports; /etc/slurm untouched): bench_ccl as a 2-rank job started
# by `srun --mpi=pmix` without mpirun, its rows and rank map read back, then `srun --time=1` must
# end a one-rank bench_ccl that would run for 10 minutes, leaving its case as an `interrupted:`
# row (Slurm's controller checks limits every 30 s: the test takes about 95 s, most of it
# waiting, its long job at the lowest priority: label `waiting`, which scripts/ctest_cores.sh runs
# beside a CPU-bound test per core). Needs root and Debian's munge, slurmctld, slurmd,
# slurm-client and slurm-wlm-basic-plugins (scripts/setup.sh): skipped elsewhere. The daemons,
# what they started and the temp dir are removed at the end, even on failure; their logs stay in
# slurm/logs.
add_test(NAME "slurm: bench_ccl launched by srun --mpi=pmix without mpirun"
  COMMAND ${OPBENCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_slurm.py
          --bench-ccl $<TARGET_FILE:bench_ccl> --out ${CMAKE_CURRENT_BINARY_DIR}/slurm)
set_tests_properties("slurm: bench_ccl launched by srun --mpi=pmix without mpirun"
  PROPERTIES LABELS "slurm;waiting" SKIP_RETURN_CODE 77 TIMEOUT 300)
