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
