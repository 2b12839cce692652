# A run never moves, overwrites or deletes a file no opbench run wrote (every binary): reports
# beside a user's README.md, CSV, environment.json and notes; a folder used twice; named outputs
# pointing at a user's file refused; bench_fsdp's plan kept; --resume keeping the environment.
foreach(binary gemm attention memops step)
  add_test(NAME "user files: bench_${binary} leaves files it did not write untouched"
    COMMAND ${OPBENCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_user_files.py ${binary}
            ${CMAKE_BINARY_DIR} ${CMAKE_CURRENT_BINARY_DIR}/user_files_${binary})
endforeach()
foreach(binary ccl fsdp)
  add_test(NAME "user files: bench_${binary} leaves files it did not write untouched (mpirun)"
    COMMAND ${OPBENCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_user_files.py ${binary}
            ${CMAKE_BINARY_DIR} ${CMAKE_CURRENT_BINARY_DIR}/user_files_${binary} ${MPIEXEC_EXECUTABLE})
endforeach()
# Label `files`: which files a run touches, not memory. The sanitizer run leaves them out (they
# took 124 of its test-seconds): the refusals and the claims run there in the unit tests of
# owned_files, and --resume in the kill-and-resume tests.
foreach(binary gemm attention memops step)
  set_tests_properties("user files: bench_${binary} leaves files it did not write untouched" PROPERTIES LABELS files)
endforeach()
foreach(binary ccl fsdp)
  set_tests_properties("user files: bench_${binary} leaves files it did not write untouched (mpirun)"
    PROPERTIES LABELS files)
endforeach()

# --resume with a smaller plan than the report holds: the tally counts this run's cases, and
# names the report's other rows apart (it said "2 of 1 cases").
add_test(NAME "resume: the tally counts this run's cases and names the report's other rows"
  COMMAND bash -c "rm -rf \"$0\" && \"$1\" --backend cpu --m 64,128 --n 64 --k 64 --max-time 0.02 --quiet --report-dir-path \"$0\" \
                   && \"$1\" --backend cpu --m 64 --n 64 --k 64 --max-time 0.02 --quiet --report-dir-path \"$0\" --resume"
          ${CMAKE_CURRENT_BINARY_DIR}/resume_smaller_plan $<TARGET_FILE:bench_gemm>)
set_tests_properties("resume: the tally counts this run's cases and names the report's other rows" PROPERTIES
  PASS_REGULAR_EXPRESSION "1 of 1 cases: 1 ok, 0 skipped, 0 failed, 1 of them from the run continued \\(--resume\\); the reports also hold 1 row of cases outside this run")
