# Profiler traces (trace/): real PyTorch steps recorded with torch 1.13's execution-trace
# observer, converted by trace_convert and checked against bench_gemm's derivation of the model
# (check_trace.py says how). The Kineto reader's fixtures are unit tests (tests/unit/test_trace.cpp).
set(CHECK_TRACE ${OPBENCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_trace.py)
set(TRACE_OUT ${CMAKE_CURRENT_BINARY_DIR}/trace)
add_test(NAME "trace: a PyTorch step's execution trace holds bench_gemm's linear GEMMs and the attention products, each once, and bench_gemm --trace-path replays them"
  COMMAND ${CHECK_TRACE} et --out ${TRACE_OUT}/et --trace-convert $<TARGET_FILE:trace_convert>
          --bench-gemm $<TARGET_FILE:bench_gemm> --bench-step $<TARGET_FILE:bench_step>)
add_test(NAME "trace: bench_attention --trace-path replays a GPU trace's flash attention beside its kernel time, and the summary accounts for the traced time"
  COMMAND ${CHECK_TRACE} attention --out ${TRACE_OUT}/attention
          --bench-attention $<TARGET_FILE:bench_attention> --trace-convert $<TARGET_FILE:trace_convert>)
add_test(NAME "trace: trim_trace.py cuts a GPU step to whole operators with their kernels and launches, and trace_convert reads the cut alike"
  COMMAND ${CHECK_TRACE} trim --out ${TRACE_OUT}/trim --trace-convert $<TARGET_FILE:trace_convert>)
add_test(NAME "trace: trace_convert keeps two profiling cycles of one process as two tables"
  COMMAND ${CHECK_TRACE} cycles --out ${TRACE_OUT}/cycles --trace-convert $<TARGET_FILE:trace_convert>)
add_test(NAME "trace_convert bad input: an unknown flag is one error line, exit 2"
  COMMAND ${EXPECT_ERROR} --contains "unknown flag '--trace-pth'; did you mean --trace-path?"
          -- $<TARGET_FILE:trace_convert> --trace-pth x --out y)
add_test(NAME "trace: a real torch 2.11 Kineto trace of an H200 step holds the model's forward GEMMs and cuDNN attention, each counted"
  COMMAND ${CHECK_TRACE} h200 --out ${TRACE_OUT}/h200 --trace-convert $<TARGET_FILE:trace_convert>)
add_test(NAME "trace: 2 DDP ranks' execution traces hold all-reduce buckets that add up to the parameters"
  COMMAND ${CHECK_TRACE} ddp --out ${TRACE_OUT}/ddp --trace-convert $<TARGET_FILE:trace_convert>)
# A GPU step with its phases (tests/data/trace/phases: a forward, a backward on the autograd
# thread, foreach AdamW): 240 of its 640 traced us are idle, 50 before a forward kernel, 120
# before backward ones, 70 before the optimizer's (tests/unit/test_trace.cpp works them out);
# --plot draws the idle bar split the same way.
add_test(NAME "trace: capture_summary.py splits a GPU step's idle time by the phase it waited for"
  COMMAND bash -c "rm -rf \"$2\" \"$2.png\" && \"$1\" --trace-path \"$3\" --out \"$2\" > /dev/null && \"$4\" \"$5\" \"$2\" --plot \"$2.png\" && test -s \"$2.png\" && echo png-ok"
          phases $<TARGET_FILE:trace_convert> ${TRACE_OUT}/phases ${PROJECT_SOURCE_DIR}/tests/data/trace/phases
          ${OPBENCH_PYTHON} ${PROJECT_SOURCE_DIR}/scripts/capture_summary.py)
set_tests_properties("trace: capture_summary.py splits a GPU step's idle time by the phase it waited for"
  PROPERTIES PASS_REGULAR_EXPRESSION
  "GPU idle 37\\.5% of the traced time\n  GPU idle by the phase whose kernels it waited for: forward 7\\.8%, backward 18\\.8%, optimizer 10\\.9% of the traced time\n.*chart: .*phases\\.png\npng-ok")
# --plot writes only a .png, and never over a file no opbench run wrote (plot_report.py's rule):
# one error line, exit 2, the user's file unchanged.
add_test(NAME "capture_summary.py bad input: --plot not a .png, over a file of the user's, or in no folder"
  COMMAND bash -c "rm -rf \"$2\" && \"$1\" --trace-path \"$3\" --out \"$2/cap\" > /dev/null && echo mine > \"$2/mine.png\" \
                   && { \"$4\" \"$5\" \"$2/cap\" --plot \"$2/notes.md\" > /dev/null; echo exit=$?; \
                        \"$4\" \"$5\" \"$2/cap\" --plot \"$2/mine.png\" > /dev/null; echo exit=$?; cat \"$2/mine.png\"; \
                        \"$4\" \"$5\" \"$2/cap\" --plot \"$2/no_folder/c.png\" > /dev/null; echo exit=$?; }"
          plot_refusals $<TARGET_FILE:trace_convert> ${TRACE_OUT}/plot_refusals ${PROJECT_SOURCE_DIR}/tests/data/trace/phases
          ${OPBENCH_PYTHON} ${PROJECT_SOURCE_DIR}/scripts/capture_summary.py)
set_tests_properties("capture_summary.py bad input: --plot not a .png, over a file of the user's, or in no folder"
  PROPERTIES PASS_REGULAR_EXPRESSION
  "^error: --plot: '[^']*notes\\.md' is not a \\.png file name\nexit=2\nerror: [^\n]*mine\\.png: exists and no opbench run wrote it [^\n]*name another --plot\nexit=2\nmine\nerror: --plot [^\n]*no_folder/c\\.png: no such folder [^\n]*\nexit=2\n$")
# A Python without matplotlib (tests/data/no_matplotlib's stand-in refuses the import): one line
# naming it, exit 2, nothing written beside the capture (not even the manifest's claim).
add_test(NAME "capture_summary.py --plot without matplotlib names the Python that lacks it, writes nothing, exits 2"
  COMMAND bash -c "rm -rf \"$2\" && \"$1\" --trace-path \"$3\" --out \"$2/cap\" > /dev/null \
                   && { PYTHONPATH=\"$6\" \"$4\" \"$5\" \"$2/cap\" --plot \"$2/chart.png\" > /dev/null; echo exit=$?; ls -A \"$2\"; }"
          plot_no_matplotlib $<TARGET_FILE:trace_convert> ${TRACE_OUT}/plot_no_matplotlib
          ${PROJECT_SOURCE_DIR}/tests/data/trace/phases ${OPBENCH_PYTHON}
          ${PROJECT_SOURCE_DIR}/scripts/capture_summary.py ${DATA}/no_matplotlib)
set_tests_properties("capture_summary.py --plot without matplotlib names the Python that lacks it, writes nothing, exits 2"
  PROPERTIES PASS_REGULAR_EXPRESSION
  "^error: capture_summary\\.py --plot needs matplotlib, which [^\n]* cannot import [^\n]*scripts/setup\\.sh installs it\\)\nexit=2\ncap\n$")
set_tests_properties(
  "trace: a PyTorch step's execution trace holds bench_gemm's linear GEMMs and the attention products, each once, and bench_gemm --trace-path replays them"
  "trace: 2 DDP ranks' execution traces hold all-reduce buckets that add up to the parameters"
  PROPERTIES TIMEOUT 300)
# A job's attention table with sizes no attention has (heads_kv 0: it divided by zero, SIGFPE)
# or an op that is no pass: each call left out with a warning naming its column, then one error
# that nothing is left to run (exit 2).
add_test(NAME "trace: attention calls with impossible sizes or passes are left out by column, and none left is an error"
  COMMAND bash -c "\"$1\" --backend cpu --capture-path \"$2\" --report-dir-path \"$3\"; echo exit=$?" attention_bad
          $<TARGET_FILE:bench_attention> ${PROJECT_SOURCE_DIR}/tests/data/capture_attention_bad ${TRACE_OUT}/attention_bad)
set_tests_properties("trace: attention calls with impossible sizes or passes are left out by column, and none left is an error"
  PROPERTIES PASS_REGULAR_EXPRESSION
  "left out .* column 'op': 'backward_ish' is not one pass.*left out aten::_scaled_dot_product_flash_attention fwd: column 'heads_kv': 0 is outside 1..65536.*every attention call in the job's tables was left out.*exit=2")
# A replay of a trace says what trace_convert says of it (the tables' notes): bench_ccl, bench_gemm
# and bench_step --trace-path printed nothing of an assumed group size or calls left unreplayed.
add_test(NAME "trace: bench_ccl, bench_gemm and bench_step --trace-path print the trace's notes, as trace_convert does"
  COMMAND bash -c "\"$1\" --backend mpi --trace-path \"$4/joined_all_gather\" --dry-run --world-size 2 --placement out_of_place \
                   && \"$2\" --backend cpu --trace-path \"$4/joined\" --dry-run && \"$3\" --model tiny --trace-path \"$4/joined\" --dry-run"
          trace_notes $<TARGET_FILE:bench_ccl> $<TARGET_FILE:bench_gemm> $<TARGET_FILE:bench_step> ${PROJECT_SOURCE_DIR}/tests/data/trace)
set_tests_properties("trace: bench_ccl, bench_gemm and bench_step --trace-path print the trace's notes, as trace_convert does"
  PROPERTIES PASS_REGULAR_EXPRESSION
  "note: --trace-path [^\n]*joined_all_gather/rank0\\.pt\\.trace\\.json: 1 communication calls whose trace records no group size[^\n]*communicator size 1 assumed.*all_gather +c10d::_allgather_base_.*note: --trace-path [^\n]*joined/rank0\\.pt\\.trace\\.json: 2 calls' shapes from the execution trace beside it.*aten::mm.*note: --trace-path [^\n]*joined/rank0\\.pt\\.trace\\.json: 2 calls' shapes from the execution trace beside it")
