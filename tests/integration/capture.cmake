# libopbench_capture.so (capture/) on real programs: a PyTorch CPU training step, numpy, an MPI
# program under mpirun, threads, fork, a killed job, a bad output folder. Each test runs the
# program under scripts/capture.sh and checks counts worked out by hand (check_capture.py says
# how). Included from tests/integration/CMakeLists.txt (OPBENCH_PYTHON, MPIEXEC_EXECUTABLE).
set(CAPTURE_SRC ${PROJECT_SOURCE_DIR}/tests/capture)
add_executable(capture_blas_calls ${CAPTURE_SRC}/blas_calls.c)
target_link_libraries(capture_blas_calls PRIVATE BLAS::BLAS OpenBLAS::headers Threads::Threads)
add_executable(capture_mpi_calls ${CAPTURE_SRC}/mpi_calls.c)
target_link_libraries(capture_mpi_calls PRIVATE MPI::MPI_C)
# A CBLAS built on sgemm_, linked ahead of OpenBLAS (the reentrancy test).
add_library(capture_nested_blas SHARED ${CAPTURE_SRC}/nested_blas.c)
target_link_libraries(capture_nested_blas PRIVATE BLAS::BLAS)
add_executable(capture_nested_calls ${CAPTURE_SRC}/nested_calls.c)
target_link_libraries(capture_nested_calls PRIVATE capture_nested_blas BLAS::BLAS)
foreach(t capture_blas_calls capture_mpi_calls capture_nested_blas capture_nested_calls)
  target_compile_options(${t} PRIVATE -Wall -Wextra -Werror)
endforeach()

# The pure parts (histogram, table, conversion, bytes): a small Catch2 executable over
# opbench_capture_core, so these tests build without the rest of the project.
add_executable(capture_unit_tests ${PROJECT_SOURCE_DIR}/tests/unit/test_capture.cpp)
target_link_libraries(capture_unit_tests PRIVATE opbench_capture_core opbench_catch_main)
opbench_warnings(capture_unit_tests)
opbench_test_code(capture_unit_tests)
catch_discover_tests(capture_unit_tests TEST_PREFIX "capture unit: " PROPERTIES RESOURCE_GROUPS cores:1)

set(CHECK_CAPTURE ${OPBENCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_capture.py)
set(CAPTURE_LIB $<TARGET_FILE:opbench_capture>)
set(CAPTURE_OUT ${CMAKE_CURRENT_BINARY_DIR}/capture)
add_test(NAME "capture: PyTorch training step, sgemm_ calls = bench_gemm's GEMMs + attention"
  COMMAND ${CHECK_CAPTURE} torch --out ${CAPTURE_OUT}/torch --lib ${CAPTURE_LIB}
          --bench-gemm $<TARGET_FILE:bench_gemm> --seq-len 32 --steps 2)
add_test(NAME "capture: numpy matmul through CBLAS"
  COMMAND ${CHECK_CAPTURE} numpy --out ${CAPTURE_OUT}/numpy --lib ${CAPTURE_LIB})
add_test(NAME "capture: MPI program under mpirun -np 2, counts and bytes on both ranks"
  COMMAND ${CHECK_CAPTURE} mpi --out ${CAPTURE_OUT}/mpi --lib ${CAPTURE_LIB}
          --prog $<TARGET_FILE:capture_mpi_calls> --mpiexec ${MPIEXEC_EXECUTABLE})
add_test(NAME "capture: 4 threads calling BLAS at once"
  COMMAND ${CHECK_CAPTURE} threads --out ${CAPTURE_OUT}/threads --lib ${CAPTURE_LIB}
          --prog $<TARGET_FILE:capture_blas_calls>)
add_test(NAME "capture: a forked child starts empty and writes its own file"
  COMMAND ${CHECK_CAPTURE} fork --out ${CAPTURE_OUT}/fork --lib ${CAPTURE_LIB}
          --prog $<TARGET_FILE:capture_blas_calls>)
add_test(NAME "capture: a Python fork pool's and Process children's calls are kept"
  COMMAND ${CHECK_CAPTURE} pyfork --out ${CAPTURE_OUT}/pyfork --lib ${CAPTURE_LIB})
add_test(NAME "capture: a fork child's and grandchild's own SIGTERM handlers run, not the capture's"
  COMMAND ${CHECK_CAPTURE} pyterm --out ${CAPTURE_OUT}/pyterm --lib ${CAPTURE_LIB})
add_test(NAME "capture: a job killed with SIGKILL leaves its periodic tables"
  COMMAND ${CHECK_CAPTURE} killed --out ${CAPTURE_OUT}/killed --lib ${CAPTURE_LIB}
          --prog $<TARGET_FILE:capture_blas_calls>)
add_test(NAME "capture: a tables folder that stops answering holds exit() and a child's _exit 5 s at most, and their status is kept"
  COMMAND ${CHECK_CAPTURE} stuckexit --out ${CAPTURE_OUT}/stuckexit --lib ${CAPTURE_LIB}
          --prog $<TARGET_FILE:capture_blas_calls>)
add_test(NAME "capture: a call inside an intercepted call counts once"
  COMMAND ${CHECK_CAPTURE} nested --out ${CAPTURE_OUT}/nested --lib ${CAPTURE_LIB}
          --prog $<TARGET_FILE:capture_nested_calls>)
add_test(NAME "capture: an unusable OPBENCH_CAPTURE_DIR is one line, the program runs unchanged"
  COMMAND ${CHECK_CAPTURE} baddir --out ${CAPTURE_OUT}/baddir --lib ${CAPTURE_LIB}
          --prog $<TARGET_FILE:capture_blas_calls>)
add_test(NAME "capture: bench_gemm under the capture, calls = its warm-up runs + samples"
  COMMAND ${CHECK_CAPTURE} bench-gemm --out ${CAPTURE_OUT}/bench_gemm --lib ${CAPTURE_LIB}
          --bench-gemm $<TARGET_FILE:bench_gemm> --backend cpu --dtype fp32)
add_test(NAME "capture: bench_gemm --capture-path replays two ranks' shapes with in_job_us and in_job_ratio"
  COMMAND ${CHECK_CAPTURE} replay-gemm --out ${CAPTURE_OUT}/replay_gemm
          --bench-gemm $<TARGET_FILE:bench_gemm>)
add_test(NAME "capture: a Prometheus server scrapes the live /metrics and its API returns the series"
  COMMAND ${CHECK_CAPTURE} prometheus --out ${CAPTURE_OUT}/prometheus --lib ${CAPTURE_LIB}
          --prog $<TARGET_FILE:capture_blas_calls>)
set_tests_properties("capture: a Prometheus server scrapes the live /metrics and its API returns the series"
  PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
add_test(NAME "capture: bench_ccl --capture-path under mpirun -np 2 replays the captured all_reduce"
  COMMAND ${CHECK_CAPTURE} replay-ccl --out ${CAPTURE_OUT}/replay_ccl
          --bench-ccl $<TARGET_FILE:bench_ccl> --mpiexec ${MPIEXEC_EXECUTABLE})
add_test(NAME "capture: a pipeline's pairs 2 ranks apart are captured 2 apart and bench_ccl --capture-path replays them so"
  COMMAND ${CHECK_CAPTURE} replay-strided --out ${CAPTURE_OUT}/replay_strided --lib ${CAPTURE_LIB}
          --bench-ccl $<TARGET_FILE:bench_ccl> --mpiexec ${MPIEXEC_EXECUTABLE})
set_tests_properties(
  "capture: PyTorch training step, sgemm_ calls = bench_gemm's GEMMs + attention"
  "capture: MPI program under mpirun -np 2, counts and bytes on both ranks"
  PROPERTIES TIMEOUT 300)

# The GPU hooks without a GPU: a stand-in cuBLAS / NCCL / CUDA-driver library (tests only) and a
# program linked to it and to the real cuBLASLt, whose descriptors the capture reads back.
if(OPBENCH_HAVE_CUDA)
  add_library(capture_gpu_standin SHARED ${CAPTURE_SRC}/gpu_standin.cpp)
  target_include_directories(capture_gpu_standin SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS}
    $<TARGET_PROPERTY:NCCL::nccl,INTERFACE_INCLUDE_DIRECTORIES>)
  add_executable(capture_gpu_calls ${CAPTURE_SRC}/gpu_calls.cpp)
  target_include_directories(capture_gpu_calls SYSTEM PRIVATE
    $<TARGET_PROPERTY:NCCL::nccl,INTERFACE_INCLUDE_DIRECTORIES>)
  # the stand-in first: its cublasLtMatmul is found before the real one, by the linked calls and
  # by those through opbench's loader of cuBLAS (gemm/cublas_api, in opbench_gemm)
  target_link_libraries(capture_gpu_calls PRIVATE capture_gpu_standin CUDA::cublasLt opbench_gemm)
  opbench_warnings(capture_gpu_standin)
  opbench_warnings(capture_gpu_calls)
  # the same program on a driver before CUDA 12.0: a stand-in without cuCtxGetId
  add_library(capture_gpu_standin_old_driver SHARED ${CAPTURE_SRC}/gpu_standin.cpp)
  target_compile_definitions(capture_gpu_standin_old_driver PRIVATE OPBENCH_STANDIN_NO_CONTEXT_IDS)
  target_include_directories(capture_gpu_standin_old_driver SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS}
    $<TARGET_PROPERTY:NCCL::nccl,INTERFACE_INCLUDE_DIRECTORIES>)
  add_executable(capture_gpu_calls_old_driver ${CAPTURE_SRC}/gpu_calls.cpp)
  target_include_directories(capture_gpu_calls_old_driver SYSTEM PRIVATE
    $<TARGET_PROPERTY:NCCL::nccl,INTERFACE_INCLUDE_DIRECTORIES>)
  target_link_libraries(capture_gpu_calls_old_driver PRIVATE capture_gpu_standin_old_driver
                        CUDA::cublasLt opbench_gemm)
  opbench_warnings(capture_gpu_standin_old_driver)
  opbench_warnings(capture_gpu_calls_old_driver)
  add_test(NAME "capture: GPU hooks on a stand-in cuBLAS/NCCL, shapes from real cuBLASLt descriptors"
    COMMAND ${CHECK_CAPTURE} gpu --out ${CAPTURE_OUT}/gpu --lib ${CAPTURE_LIB}
            --prog $<TARGET_FILE:capture_gpu_calls>)
  add_test(NAME "capture: four ranks' NCCL communicators read together give their members, and bench_ccl replays a split's pairs 2 ranks apart"
    COMMAND ${CHECK_CAPTURE} gpu-comms --out ${CAPTURE_OUT}/gpu_comms --lib ${CAPTURE_LIB}
            --prog $<TARGET_FILE:capture_gpu_calls> --bench-ccl $<TARGET_FILE:bench_ccl>)
  add_test(NAME "capture: on an asynchronous stand-in GPU the host never waits, graph captures stay intact, a hung kernel holds neither fork nor exit"
    COMMAND ${CHECK_CAPTURE} gpu-async --out ${CAPTURE_OUT}/gpu_async --lib ${CAPTURE_LIB}
            --prog $<TARGET_FILE:capture_gpu_calls>
            --prog-old-driver $<TARGET_FILE:capture_gpu_calls_old_driver>)
endif()

# capture.sh writes only into a new or capture-only folder (issue 31's rule): a user's file there
# is refused, untouched; an earlier capture's tables move into earlier-<date>-<time>/.
add_test(NAME "capture: capture.sh refuses a folder holding a user's file, and sets an earlier capture aside"
  COMMAND bash -c "rm -rf \"$0\" && mkdir -p \"$0/mine\" \"$0/cap\" && echo keep > \"$0/mine/notes.txt\" \
                   && { OPBENCH_CAPTURE_LIB=\"$1\" bash '${PROJECT_SOURCE_DIR}/scripts/capture.sh' --out \"$0/mine\" -- true 2> \"$0/err\"; test $? -eq 2; } \
                   && grep -q 'holds notes.txt, which is not a capture file' \"$0/err\" && grep -qx keep \"$0/mine/notes.txt\" \
                   && echo old > \"$0/cap/capture-h-rank0.csv\" \
                   && OPBENCH_CAPTURE_LIB=\"$1\" bash '${PROJECT_SOURCE_DIR}/scripts/capture.sh' --out \"$0/cap\" -- true 2>/dev/null \
                   && grep -qx old \"$0\"/cap/earlier-*/capture-h-rank0.csv && echo aside-ok"
          ${CAPTURE_OUT}/guard ${CAPTURE_LIB})
set_tests_properties("capture: capture.sh refuses a folder holding a user's file, and sets an earlier capture aside"
  PROPERTIES PASS_REGULAR_EXPRESSION "aside-ok")

# A command that fails before any intercepted call: its status, its own error, and one line saying
# no tables were written (not capture_summary.py's "no capture files ... could not write there").
add_test(NAME "capture: capture.sh under a command that fails before any call keeps its status and blames nothing else"
  COMMAND bash -c "rm -rf \"$0\" && { OPBENCH_CAPTURE_LIB=\"$1\" bash '${PROJECT_SOURCE_DIR}/scripts/capture.sh' --out \"$0\" -- sh -c 'echo error: bad flag >&2; exit 2' 2> \"$0.err\"; test $? -eq 2; } \
                   && test \"$(grep -c . \"$0.err\")\" -eq 2 && grep -q 'exited with status 2 before any intercepted call' \"$0.err\" \
                   && ! grep -q 'no capture files' \"$0.err\" && echo failed-ok"
          ${CAPTURE_OUT}/failed_command ${CAPTURE_LIB})
set_tests_properties("capture: capture.sh under a command that fails before any call keeps its status and blames nothing else"
  PROPERTIES PASS_REGULAR_EXPRESSION "failed-ok")

# The tests that preload the library into a program (python3, mpirun, our test programs) carry
# the label preload: a sanitizer build's library cannot be preloaded into programs built without
# the sanitizer runtime, so scripts/test_sanitizers.sh leaves them out; the capture's tables,
# histogram and output run under the sanitizers in the capture unit tests, and the replays
# (bench_gemm / bench_ccl --capture-path) run there too.
set(CAPTURE_PRELOAD_TESTS
  "capture: PyTorch training step, sgemm_ calls = bench_gemm's GEMMs + attention"
  "capture: numpy matmul through CBLAS"
  "capture: MPI program under mpirun -np 2, counts and bytes on both ranks"
  "capture: 4 threads calling BLAS at once"
  "capture: a forked child starts empty and writes its own file"
  "capture: a Python fork pool's and Process children's calls are kept"
  "capture: a fork child's and grandchild's own SIGTERM handlers run, not the capture's"
  "capture: a job killed with SIGKILL leaves its periodic tables"
  "capture: a tables folder that stops answering holds exit() and a child's _exit 5 s at most, and their status is kept"
  "capture: a call inside an intercepted call counts once"
  "capture: an unusable OPBENCH_CAPTURE_DIR is one line, the program runs unchanged"
  "capture: bench_gemm under the capture, calls = its warm-up runs + samples"
  "capture: a pipeline's pairs 2 ranks apart are captured 2 apart and bench_ccl --capture-path replays them so"
  "capture: a Prometheus server scrapes the live /metrics and its API returns the series"
  "capture: capture.sh refuses a folder holding a user's file, and sets an earlier capture aside"
  "capture: capture.sh under a command that fails before any call keeps its status and blames nothing else")
if(OPBENCH_HAVE_CUDA)
  list(APPEND CAPTURE_PRELOAD_TESTS
    "capture: GPU hooks on a stand-in cuBLAS/NCCL, shapes from real cuBLASLt descriptors"
    "capture: four ranks' NCCL communicators read together give their members, and bench_ccl replays a split's pairs 2 ranks apart"
    "capture: on an asynchronous stand-in GPU the host never waits, graph captures stay intact, a hung kernel holds neither fork nor exit")
endif()
set_tests_properties(${CAPTURE_PRELOAD_TESTS} PROPERTIES LABELS preload)
