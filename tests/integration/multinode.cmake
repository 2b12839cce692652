# Three simulated nodes (network namespaces on a bridge, a host name each) on this machine:
# bench_ccl (2 ranks per node) and bench_fsdp under mpirun across them, the rows and the rank
# layout read back, then a link taken down (mid-case, and between two cases while a rank of that
# node is held), a rank killed and a rank stopped mid-run; the job must end within its limits with
# every row whole. Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN):
# skipped elsewhere. It removes the namespaces, links and processes it made, even on failure.
# Each fault's error line must name the culprit rank and its host (--require-culprit). Label
# `waiting`: most of its minute is spent waiting for the faults' timeouts, its ranks yielding
# (mpi_yield_when_idle) at the lowest priority once a fault is injected, so
# scripts/ctest_cores.sh runs it beside a CPU-bound test per core.
if(MPIEXEC_EXECUTABLE)
  add_test(NAME "multinode: three namespaced nodes, healthy runs and faults"
    COMMAND ${OPBENCH_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/multinode.py
            --bench-ccl $<TARGET_FILE:bench_ccl> --bench-fsdp $<TARGET_FILE:bench_fsdp>
            --mpirun ${MPIEXEC_EXECUTABLE} --out ${CMAKE_CURRENT_BINARY_DIR}/multinode --require-culprit
            --capture-lib $<TARGET_FILE:opbench_capture>)
  set_tests_properties("multinode: three namespaced nodes, healthy runs and faults"
    PROPERTIES LABELS "multinode;waiting" SKIP_RETURN_CODE 77 TIMEOUT 420)
endif()
