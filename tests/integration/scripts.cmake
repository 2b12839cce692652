# Tests of the Python and shell scripts (compare_reports, plot_report, run_script, report).
# Included at the end of tests/integration/CMakeLists.txt: OPBENCH_PYTHON, DATA, EXPECT_ERROR and
# COMPARE come from there. Every test here runs the scripts as a user would and checks values
# that can be worked out by hand (the fixtures' numbers are in tests/data).
set(PLOT_REPORT ${PROJECT_SOURCE_DIR}/scripts/plot_report.py)
set(RUN_SCRIPT ${PROJECT_SOURCE_DIR}/scripts/run_script.sh)
set(REPORT_SH ${PROJECT_SOURCE_DIR}/scripts/report.sh)
set(CHECK_FIGURES ${OPBENCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_plot_figures.py ${PLOT_REPORT})
set(CHECK_RUN_SCRIPT ${OPBENCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_run_script.py)

# compare_reports: reports of different binaries share columns (dtype, backend, model, pass) and
# were matched on them; now they are refused.
add_test(NAME "compare_reports bad input: a GEMM report against a collectives report"
  COMMAND ${EXPECT_ERROR} --contains "compare_noisy_base.csv is a gemm report and"
          --contains "compare_ccl_noisy_new.csv is a ccl report: compare reports of the same binary"
          -- ${COMPARE} ${DATA}/compare_noisy_base.csv ${DATA}/compare_ccl_noisy_new.csv)
add_test(NAME "compare_reports bad input: an attention report against a GEMM report"
  COMMAND ${EXPECT_ERROR} --contains "compare_attention.csv is an attention report and"
          --contains "compare_base.csv is a gemm report: compare reports of the same binary"
          -- ${COMPARE} ${DATA}/compare_attention.csv ${DATA}/compare_base.csv)
add_test(NAME "compare_reports bad input: an FSDP report against a collectives report"
  COMMAND ${EXPECT_ERROR} --contains "compare_fsdp.csv is a fsdp report and"
          --contains "compare_ccl_noisy_base.csv is a ccl report"
          -- ${COMPARE} ${DATA}/compare_fsdp.csv ${DATA}/compare_ccl_noisy_base.csv)

# compare_reports and noise: the noise is the larger of the band 2 * sqrt(rse_base^2 + rse_new^2)
# and the rerun noise, 1 x the larger cv (one run a side), and at least the rerun floor (one run a
# side on the CPU: 45% for bench_gemm, 30% for bench_ccl; --rerun-floor 0 leaves the samples' own
# noise, as on a GPU). The GEMM fixtures, --rerun-floor 0:
#   attn_qkv  0.050 -> 0.080  +60%  rse 0.30, 0.40; cv 0.9, 1.2     noise 120%  inconclusive (over 50%)
#   attn_out  0.100 -> 0.092   -8%  rse 0.03, 0.04; cv 0.09, 0.12   noise 12%   within noise
#   mlp_up    0.100 -> 0.080  -20%  cv 0.06, 0.08 at 4 samples: rse 0.03, 0.04, band 10%   REGRESSION
#   mlp_down  0.100 -> 0.120  +20%  rse 0.01, 0.01; cv 0.03        noise 3%    better
#   lm_head   0.100 -> 0.103   +3%  rse 0.001, 0.001               noise 0.3%  below the 5% threshold
add_test(NAME "compare_reports: changes within the rows' noise are not regressions, the table shows the noise"
  COMMAND ${WITH_EXIT} ${COMPARE} ${DATA}/compare_noisy_base.csv ${DATA}/compare_noisy_new.csv --threshold 5 --rerun-floor 0)
set_tests_properties("compare_reports: changes within the rows' noise are not regressions, the table shows the noise"
  PROPERTIES PASS_REGULAR_EXPRESSION
  "attn_qkv \\| 0.050 \\| 0.080 \\| 1.600 \\| \\+60.0% \\| inconclusive \\| ±120.0% noisy \\|.*attn_out \\| 0.100 \\| 0.092 \\| 0.920 \\| -8.0% \\| within noise \\| ±12.0% \\|.*mlp_up \\| 0.100 \\| 0.080 \\| 0.800 \\| -20.0% \\| REGRESSION \\| ±10.0% \\|.*mlp_down \\| 0.100 \\| 0.120 \\| 1.200 \\| \\+20.0% \\| better \\| ±3.0% \\|.*lm_head \\| 0.100 \\| 0.103 \\| 1.030 \\| \\+3.0% \\|  \\| ±0.3% \\|.*5 rows compared on tflops \\(higher is better\\), threshold 5%: 1 regressed, 1 improved, 1 within noise, 1 inconclusive\\.\nexit=1")
# The same reports with the CPU's default floor (bench_gemm, one run a side: 45%): -20% and +20% are
# within what whole reruns shift by on the development machine.
add_test(NAME "compare_reports: one CPU run a side, changes within the rerun floor are within noise"
  COMMAND ${WITH_EXIT} ${COMPARE} ${DATA}/compare_noisy_base.csv ${DATA}/compare_noisy_new.csv)
set_tests_properties("compare_reports: one CPU run a side, changes within the rerun floor are within noise"
  PROPERTIES PASS_REGULAR_EXPRESSION
  "attn_out \\| 0.100 \\| 0.092 \\| 0.920 \\| -8.0% \\| within noise \\| ±45.0% \\|.*mlp_up \\| 0.100 \\| 0.080 \\| 0.800 \\| -20.0% \\| within noise \\| ±45.0% \\|.*threshold 5%, rerun floor 45%: 0 regressed, 0 improved, 3 within noise, 1 inconclusive\\.\nexit=0")
# Two noisy collectives runs (rse 0.30 and 0.40, cv up to 1.2: noise 120%): +90% and -50% are
# inconclusive; the count line names bench_ccl's rerun floor.
add_test(NAME "compare_reports: two noisy collectives runs +90% and -50% apart pass the gate (exit 0)"
  COMMAND ${WITH_EXIT} ${COMPARE} ${DATA}/compare_ccl_noisy_base.csv ${DATA}/compare_ccl_noisy_new.csv)
set_tests_properties("compare_reports: two noisy collectives runs +90% and -50% apart pass the gate (exit 0)"
  PROPERTIES PASS_REGULAR_EXPRESSION
  "out_of_place \\| 0.80 \\| 1.52 \\| 1.900 \\| \\+90.0% \\| inconclusive \\| ±120.0% noisy \\|.*in_place \\| 1.00 \\| 0.50 \\| 0.500 \\| -50.0% \\| inconclusive \\| ±120.0% noisy \\|.*2 rows compared on busbw_gbps \\(higher is better\\), threshold 5%, rerun floor 30%: 0 regressed, 0 improved, 0 within noise, 2 inconclusive\\.\nexit=0")
# A slowdown of every sample is a regression whatever the noise (issue 44): lm_head 409 -> 851 us
# mean, its fastest new sample (801 us) slower than the slowest old one (790): REGRESSION although
# the noise is 120% (a 2.08x slowdown beyond the 45% floor); mlp_down 100 -> 200 us, its samples
# overlapping (96 < 180) and its cv 1.1: a 2x change inside a 110% noise is inconclusive.
add_test(NAME "compare_reports: every sample slower is a regression whatever the noise, overlapping noisy samples are inconclusive"
  COMMAND ${WITH_EXIT} ${COMPARE} ${DATA}/compare_slow_base.csv ${DATA}/compare_slow_new.csv)
set_tests_properties("compare_reports: every sample slower is a regression whatever the noise, overlapping noisy samples are inconclusive"
  PROPERTIES PASS_REGULAR_EXPRESSION
  "lm_head .*-51.9% \\| REGRESSION \\| ±120.0% noisy \\|.*mlp_down .*-50.0% \\| inconclusive \\| ±110.0% noisy \\|.*1 regressed, 0 improved, 0 within noise, 1 inconclusive\\.\nexit=1")
# Plain reruns of 2-rank bench_ccl (tests/data/compare_ccl_rerun, real runs): 12.2% apart with cv
# 1-2%; bench_ccl's 30% rerun floor on the CPU passes them, --rerun-floor 0 shows what the floor
# absorbs. Three runs a side gate on how their runs differ: in_place busbw 4.066, 3.811, 4.341
# against 4.255, 4.116, 4.266 GB/s, relative sd 6.51% and 1.98%, noise 3 x sqrt((6.51^2 + 1.98^2) / 2)
# x sqrt(1/3 + 1/3) = 11.8%. Every time doubled is a regression under either.
set(RERUN ${DATA}/compare_ccl_rerun)
add_test(NAME "compare_reports: plain bench_ccl reruns 12% apart pass on the CPU's rerun floor"
  COMMAND ${WITH_EXIT} ${COMPARE} ${RERUN}/run2.csv ${RERUN}/run1.csv)
set_tests_properties("compare_reports: plain bench_ccl reruns 12% apart pass on the CPU's rerun floor"
  PROPERTIES PASS_REGULAR_EXPRESSION
  "in_place \\| 4.341141 \\| 3.810914 \\| 0.878 \\| -12.2% \\| within noise \\| ±30.0% noisy \\|.*threshold 5%, rerun floor 30%: 0 regressed.*\nexit=0")
add_test(NAME "compare_reports: --rerun-floor 0 gates the same reruns on their samples alone"
  COMMAND ${WITH_EXIT} ${COMPARE} ${RERUN}/run2.csv ${RERUN}/run1.csv --rerun-floor 0)
set_tests_properties("compare_reports: --rerun-floor 0 gates the same reruns on their samples alone"
  PROPERTIES PASS_REGULAR_EXPRESSION "-12.2% \\| REGRESSION \\| ±2.7% noisy \\|.*threshold 5%: 2 regressed.*\nexit=1")
add_test(NAME "compare_reports: three runs a side gate on what their runs differ by"
  COMMAND ${WITH_EXIT} ${COMPARE} ${RERUN}/run0.csv,${RERUN}/run1.csv,${RERUN}/run2.csv
          ${RERUN}/run3.csv,${RERUN}/run4.csv,${RERUN}/run5.csv)
set_tests_properties("compare_reports: three runs a side gate on what their runs differ by"
  PROPERTIES PASS_REGULAR_EXPRESSION
  "in_place \\| 4.073 \\| 4.213 \\| 1.034 \\| \\+3.4% \\|  \\| ±11.8% noisy \\|.*\\(3 base and 3 new runs: what they differ by is the rerun noise\\): 0 regressed.*\nexit=0")
add_test(NAME "compare_reports: every time doubled is a regression over the rerun floor and over three runs' spread"
  COMMAND ${WITH_EXIT} ${COMPARE} ${RERUN}/run0.csv,${RERUN}/run1.csv,${RERUN}/run2.csv ${RERUN}/run0_twice_as_slow.csv)
set_tests_properties("compare_reports: every time doubled is a regression over the rerun floor and over three runs' spread"
  PROPERTIES PASS_REGULAR_EXPRESSION "-49.9% \\| REGRESSION .*-50.1% \\| REGRESSION .*2 regressed.*\nexit=1")
# bench_memops, one CPU run a side: its 60% floor passes two plain reruns (tests/data/
# compare_memops_rerun), and every time doubled (-50%, a factor of 2) is still a regression on all
# 14 rows: the floor is a factor either way.
set(MEMOPS_RERUN ${DATA}/compare_memops_rerun)
add_test(NAME "compare_reports: plain bench_memops reruns pass on the CPU's rerun floor"
  COMMAND ${WITH_EXIT} ${COMPARE} ${MEMOPS_RERUN}/run0.csv ${MEMOPS_RERUN}/run1.csv)
set_tests_properties("compare_reports: plain bench_memops reruns pass on the CPU's rerun floor"
  PROPERTIES PASS_REGULAR_EXPRESSION "14 rows compared on mem_bw_gbps .*threshold 5%, rerun floor 60%: 0 regressed.*\nexit=0")
add_test(NAME "compare_reports: a 2x bench_memops slowdown is a regression over the 60% rerun floor"
  COMMAND ${WITH_EXIT} ${COMPARE} ${MEMOPS_RERUN}/run0.csv ${MEMOPS_RERUN}/run0_twice_as_slow.csv)
set_tests_properties("compare_reports: a 2x bench_memops slowdown is a regression over the 60% rerun floor"
  PROPERTIES PASS_REGULAR_EXPRESSION "adamw .*0.500 \\| -50.0% \\| REGRESSION \\| ±60.0% \\|.*rerun floor 60%: 14 regressed.*\nexit=1")
# bench_step on the CPU (tests/data/compare_step_rerun, two plain runs 13.1% apart): its measured
# operators ran on the host, so one run a side gets bench_step's 20% floor (it got none: bench_step
# reports have no backend column, and the same reruns failed the gate).
add_test(NAME "compare_reports: two plain CPU bench_step runs 13% apart pass on bench_step's rerun floor"
  COMMAND ${WITH_EXIT} ${COMPARE} ${DATA}/compare_step_rerun/fast.csv ${DATA}/compare_step_rerun/slow.csv)
set_tests_properties("compare_reports: two plain CPU bench_step runs 13% apart pass on bench_step's rerun floor"
  PROPERTIES PASS_REGULAR_EXPRESSION "tiny \\| 9.114952 \\| 10.49121 \\| 0.869 \\| -13.1% \\| within noise \\| ±20.0% \\|.*rerun floor 20%: 0 regressed.*\nexit=0")
# A mean that stalls moved while the median stayed (tests/data/compare_memops_rerun/README.md):
# rope fwd's mean 11.0 -> 29.4 us (-62.5% on mem_bw_gbps, a factor of 2.66 against a 164% noise)
# with its median 10.8 -> 12.3 us is inconclusive, not a regression.
add_test(NAME "compare_reports: a mean moved by a few stalls, its median not, is no regression"
  COMMAND ${WITH_EXIT} ${COMPARE} ${MEMOPS_RERUN}/stalls_base.csv ${MEMOPS_RERUN}/stalls_new.csv)
set_tests_properties("compare_reports: a mean moved by a few stalls, its median not, is no regression"
  PROPERTIES PASS_REGULAR_EXPRESSION "rope \\| fwd .*0.375 \\| -62.5% \\| inconclusive \\| ±164.4% noisy \\|.*0 regressed.*\nexit=0")
# bench/compare/rerun_floor.py end to end: four real runs of each binary, every pair of runs
# compared row by row (C(4,2) = 6 pairs: 15 GEMM rows of tiny, 15 memops rows (the tied table's
# gradient sum among them), bench_step's 1 step and 29 operators, 14 rows over bench_ccl's seven op files), the gate on each rerun and on half against half. Which pairs pass is
# this machine's; the counts are the script's.
set(RERUN_FLOOR_OUT ${CMAKE_CURRENT_BINARY_DIR}/rerun_floor)
add_test(NAME "rerun_floor.py: four runs of each binary, every pair compared and gated"
  COMMAND bash -c "rm -rf \"$1\" && exec \"$2\" \"$3\" --runs 4 --build \"$4\" --out \"$1\"" rerun_floor
          ${RERUN_FLOOR_OUT} ${OPBENCH_PYTHON} ${PROJECT_SOURCE_DIR}/bench/compare/rerun_floor.py ${CMAKE_BINARY_DIR})
# 16 real runs: about 90 s alone on 2 cores, but up to 300 s beside the other long tests a
# clean clone starts first (a CI run of 2026-11-28 timed out there, in the last ccl run): 480.
set_tests_properties("rerun_floor.py: four runs of each binary, every pair compared and gated"
  PROPERTIES TIMEOUT 480 LABELS scripts FIXTURES_SETUP rerun_floor_runs PASS_REGULAR_EXPRESSION
  "\\| gemm tiny \\| 4 \\| 90 \\| [0-9.]+% \\| [0-9.]+% \\| 45% \\| [0-3] of 3 \\| exit [01]: [0-9]+ of 15 rows regressed \\|.*\\| memops tiny \\| 4 \\| 90 \\|.*60% .*of 15 rows regressed \\|.*\\| step tiny \\| 4 \\| 180 \\|.*20% / 60% .*of 30 rows regressed \\|.*\\| ccl 2 ranks \\| 4 \\| 84 \\|.*30% .*of 14 rows regressed \\|")
# --tables-only reads the runs it finds (4 here, whatever --runs says: it crashed when they were
# fewer), running nothing.
add_test(NAME "rerun_floor.py --tables-only: the table again from the runs an earlier call left"
  COMMAND ${OPBENCH_PYTHON} ${PROJECT_SOURCE_DIR}/bench/compare/rerun_floor.py --tables-only --out ${RERUN_FLOOR_OUT})
set_tests_properties("rerun_floor.py --tables-only: the table again from the runs an earlier call left"
  PROPERTIES LABELS scripts FIXTURES_REQUIRED rerun_floor_runs PASS_REGULAR_EXPRESSION
  "the runs found.*\\| gemm tiny \\| 4 \\| 90 \\|.*\\| memops tiny \\| 4 \\| 90 \\|.*\\| step tiny \\| 4 \\| 180 \\|.*\\| ccl 2 ranks \\| 4 \\| 84 \\|")
# Runs of which some left no report (a run stopped early): the gates say so instead of crashing
# on the empty list of comparisons (max() of nothing).
add_test(NAME "rerun_floor.py --tables-only: runs without reports are said, not a crash"
  COMMAND bash -c "t=\"$0\"; rm -rf \"$t\" && for i in 0 1 2 3; do mkdir -p \"$t/gemm_tiny-$i\"; done \
    && cp \"$2\" \"$t/gemm_tiny-0/gemm_tiny.csv\" && cp \"$2\" \"$t/gemm_tiny-2/gemm_tiny.csv\" \
    && \"$1\" \"$3\" --tables-only --out \"$t\" --only gemm; echo exit=$?"
          ${CMAKE_CURRENT_BINARY_DIR}/rerun_floor_partial ${OPBENCH_PYTHON} ${DATA}/compare_base.csv
          ${PROJECT_SOURCE_DIR}/bench/compare/rerun_floor.py)
set_tests_properties("rerun_floor.py --tables-only: runs without reports are said, not a crash"
  PROPERTIES LABELS scripts PASS_REGULAR_EXPRESSION
  "\\| gemm tiny \\| 4 \\| 4 \\| [^\n]*\\| 0 of 3 \\| no report in every run \\| no report in every run \\|\nexit=0")
add_test(NAME "rerun_floor.py bad input: --tables-only without --out"
  COMMAND ${EXPECT_ERROR} --contains "--tables-only: name the folder of an earlier run with --out"
          -- ${OPBENCH_PYTHON} ${PROJECT_SOURCE_DIR}/bench/compare/rerun_floor.py --tables-only)
add_test(NAME "compare_reports bad input: a negative --rerun-floor"
  COMMAND ${EXPECT_ERROR} --contains "--rerun-floor: must be a percentage >= 0, got -1.0"
          -- ${COMPARE} ${RERUN}/run0.csv ${RERUN}/run1.csv --rerun-floor -1)
# bench_memops rows match by shape, not by impl: a run on 1 thread against one on 2 compares every
# row, and the table shows the change (issue 44: "0 rows compared ... 14 regressed" before).
add_test(NAME "compare_reports: bench_memops runs on different thread counts compare every row and show the change"
  COMMAND ${WITH_EXIT} ${COMPARE} ${DATA}/compare_memops_base.csv ${DATA}/compare_memops_threads.csv)
set_tests_properties("compare_reports: bench_memops runs on different thread counts compare every row and show the change"
  PROPERTIES PASS_REGULAR_EXPRESSION
  "impl \\(base → new\\).*\\| add \\| 16 \\| vectorised loops, 2 threads → vectorised loops, 1 threads \\| 19.66 \\| 16.38 \\| 0.833 \\| -16.7% \\| REGRESSION .*3 rows compared on mem_bw_gbps.*2 regressed.*\nexit=1")

# run_script.sh and report.sh from the user's own directory: paths are the caller's.
add_test(NAME "run_script.sh --help through a relative path from another directory prints the help"
  COMMAND ${CHECK_RUN_SCRIPT} help ${RUN_SCRIPT} "Collective sweeps through mpirun")
add_test(NAME "report.sh --help prints the help and runs nothing"
  COMMAND ${CHECK_RUN_SCRIPT} help ${REPORT_SH} "One report of the whole suite")
set_tests_properties("report.sh --help prints the help and runs nothing" PROPERTIES TIMEOUT 60)
add_test(NAME "run_script.sh: relative --out and --hostfile are the caller's, at 2 and 3 ranks"
  COMMAND ${CHECK_RUN_SCRIPT} relative ${RUN_SCRIPT} ${CMAKE_CURRENT_BINARY_DIR}/run_script_relative
          $<TARGET_FILE:bench_ccl>)
set_tests_properties("run_script.sh: relative --out and --hostfile are the caller's, at 2 and 3 ranks" PROPERTIES
  TIMEOUT 180 FIXTURES_SETUP run_script_sweep)
add_test(NAME "report.sh: a relative OUT_DIR and BUILD are the caller's"
  COMMAND ${CHECK_RUN_SCRIPT} report ${REPORT_SH} ${CMAKE_CURRENT_BINARY_DIR}/report_relative ${CMAKE_BINARY_DIR})
set_tests_properties("report.sh: a relative OUT_DIR and BUILD are the caller's" PROPERTIES TIMEOUT 300)

# run_script.sh installed (cmake --install into a prefix of its own): it finds <prefix>/bin/bench_ccl.
add_test(NAME "run_script.sh installed finds <prefix>/bin/bench_ccl, and names every place it looked without it"
  COMMAND ${CHECK_RUN_SCRIPT} installed ${RUN_SCRIPT} ${CMAKE_CURRENT_BINARY_DIR}/run_script_installed
          ${CMAKE_COMMAND} ${CMAKE_BINARY_DIR})
set_tests_properties("run_script.sh installed finds <prefix>/bin/bench_ccl, and names every place it looked without it"
  PROPERTIES TIMEOUT 180)

# run_script.sh: failures, exit codes and mpirun's arguments.
# Arguments checked before anything is made: bench_ccl's --timeout after -- must be seconds
# (bash's 'unbound variable' before, the --out folder already made), and gpu_validate.sh's --out
# given last is one error line, exit 2.
add_test(NAME "run_script.sh and gpu_validate.sh: a bad --timeout, a flag without its value, nothing made"
  COMMAND bash -c "t=\"$0\"; rm -rf \"$t\"; bash \"$1\" --out \"$t/rs\" -- --timeout abc 2>&1; echo exit=$?; \
    test -e \"$t/rs\" && echo made; bash \"$2\" --out 2>&1; echo exit=$?"
          ${CMAKE_CURRENT_BINARY_DIR}/script_flag_checks ${RUN_SCRIPT} ${PROJECT_SOURCE_DIR}/scripts/gpu_validate.sh)
set_tests_properties("run_script.sh and gpu_validate.sh: a bad --timeout, a flag without its value, nothing made"
  PROPERTIES LABELS scripts PASS_REGULAR_EXPRESSION
  "^error: run_script.sh: -- --timeout: 'abc' is not a number of seconds[^\n]*\nexit=2\nerror: gpu_validate.sh: --out needs a folder\nexit=2\n$")
# --help of setup.sh and build.sh prints their help and runs nothing (setup.sh ran apt-get, and
# build.sh passed --help to cmake's configure and built everything); setup.sh takes no argument.
add_test(NAME "setup.sh and build.sh --help print their help, an argument setup.sh does not take is refused"
  COMMAND bash -c "bash \"$0\" --help; echo exit=$?; bash \"$0\" --bogus 2>&1; echo exit=$?; bash \"$1\" --help; echo exit=$?"
          ${PROJECT_SOURCE_DIR}/scripts/setup.sh ${PROJECT_SOURCE_DIR}/scripts/build.sh)
set_tests_properties("setup.sh and build.sh --help print their help, an argument setup.sh does not take is refused"
  PROPERTIES LABELS scripts PASS_REGULAR_EXPRESSION
  "^Installs every build and run dependency[^\n]*\n[^\n]*\n  scripts/setup.sh   \\(no arguments\\)\nexit=0\nerror: setup.sh: takes no arguments, got '--bogus'[^\n]*\nexit=2\nConfigures and builds opbench[^\n]*\n(.*\n)?exit=0\n$")
# run_main.sh runs bench_gemm in the caller's folder: it changed into the repository first, so a
# relative path among its arguments was looked for there and the reports landed there. Run from
# a copy of the script beside stand-ins for setup.sh, build.sh and bench_gemm (which prints where
# it runs and its arguments), from another folder.
add_test(NAME "run_main.sh: bench_gemm runs in the caller's folder with the caller's arguments"
  COMMAND bash -c "t=\"$0\"; rm -rf \"$t\" && mkdir -p \"$t/repo/scripts\" \"$t/repo/build/gemm\" \"$t/caller\" \
    && cp \"$1\" \"$t/repo/scripts/\" && : > \"$t/repo/scripts/setup.sh\" && : > \"$t/repo/scripts/build.sh\" \
    && printf '#!/bin/sh\\necho \"ran in $(basename \\\"$(pwd)\\\"): $*\"\\n' > \"$t/repo/build/gemm/bench_gemm\" \
    && chmod +x \"$t/repo/build/gemm/bench_gemm\" && cd \"$t/caller\" && bash ../repo/scripts/run_main.sh --gemm-shapes-path my.json"
          ${CMAKE_CURRENT_BINARY_DIR}/run_main_cwd ${PROJECT_SOURCE_DIR}/scripts/run_main.sh)
set_tests_properties("run_main.sh: bench_gemm runs in the caller's folder with the caller's arguments"
  PROPERTIES LABELS scripts PASS_REGULAR_EXPRESSION "^ran in caller: --gemm-shapes-path my.json\n$")
# run_main.sh --help answers at once: it ran setup.sh (packages) and built bench_gemm first. Its
# stand-ins for setup.sh and build.sh fail loudly; the bench_gemm stand-in prints its arguments.
add_test(NAME "run_main.sh --help prints its use and bench_gemm's flags without setting up or building"
  COMMAND bash -c "t=\"$0\"; rm -rf \"$t\" && mkdir -p \"$t/repo/scripts\" \"$t/repo/build/gemm\" \
    && cp \"$1\" \"$t/repo/scripts/\" && echo 'echo setup ran; exit 9' > \"$t/repo/scripts/setup.sh\" \
    && echo 'echo build ran; exit 9' > \"$t/repo/scripts/build.sh\" \
    && printf '#!/bin/sh\\necho \"bench_gemm $*\"\\n' > \"$t/repo/build/gemm/bench_gemm\" \
    && chmod +x \"$t/repo/build/gemm/bench_gemm\" && bash \"$t/repo/scripts/run_main.sh\" --help; echo exit=$?"
          ${CMAKE_CURRENT_BINARY_DIR}/run_main_help ${PROJECT_SOURCE_DIR}/scripts/run_main.sh)
set_tests_properties("run_main.sh --help prints its use and bench_gemm's flags without setting up or building"
  PROPERTIES LABELS scripts PASS_REGULAR_EXPRESSION "^The main job: sets everything up[^\n]*\n(.*\n)*  scripts/run_main.sh ARGS\\.\\.\\.[^\n]*\n(.*\n)*\nbench_gemm --help\nexit=0\n$"
  FAIL_REGULAR_EXPRESSION "setup ran|build ran")
# report.sh checks its arguments and every binary it runs before it starts: a second argument
# was ignored, and a build of bench_gemm alone (run_main.sh's) ran the GEMMs for minutes before
# bash's 'No such file' (exit 127). Nothing made in either case.
add_test(NAME "report.sh: a second argument and a build without all six binaries refused before anything runs"
  COMMAND bash -c "t=\"$0\"; rm -rf \"$t\" && mkdir -p \"$t/build/gemm\" && printf '#!/bin/sh\\n' > \"$t/build/gemm/bench_gemm\" \
    && chmod +x \"$t/build/gemm/bench_gemm\"; bash \"$1\" \"$t/a\" \"$t/b\" 2>&1; echo exit=$?; \
    BUILD=\"$t/build\" bash \"$1\" \"$t/out\" 2>&1; echo exit=$?; ls \"$t\""
          ${CMAKE_CURRENT_BINARY_DIR}/report_sh_checks ${REPORT_SH})
set_tests_properties("report.sh: a second argument and a build without all six binaries refused before anything runs"
  PROPERTIES LABELS scripts PASS_REGULAR_EXPRESSION
  "^error: report.sh: one OUT_DIR at most, got also '[^']*/b'[^\n]*\nexit=2\nerror: report.sh: [^\n]*/build/attention/bench_attention not found[^\n]*\nexit=2\nbuild\n$")
# A file of the user's by a run's log name (OUT/<op>_np<N>.txt) is refused before anything runs
# and left as it is (it was truncated); a log an earlier run wrote is written over.
add_test(NAME "run_script.sh: a file of the user's by a log's name is refused and left as it is"
  COMMAND bash -c "t=\"$0\"; rm -rf \"$t\" && mkdir -p \"$t\" && echo 'my notes' > \"$t/all_reduce_np2.txt\"; \
    MPIRUN=false bash \"$1\" --ops all_reduce --np 2 --job-timeout 10 --out \"$t\" 2>&1; echo exit=$?; cat \"$t/all_reduce_np2.txt\"; \
    rm \"$t/all_reduce_np2.txt\"; for i in 1 2; do MPIRUN=false bash \"$1\" --ops all_reduce --np 2 --job-timeout 10 --out \"$t\" > /dev/null 2>&1; echo exit=$?; done"
          ${CMAKE_CURRENT_BINARY_DIR}/run_script_user_log ${RUN_SCRIPT})
set_tests_properties("run_script.sh: a file of the user's by a log's name is refused and left as it is"
  PROPERTIES LABELS scripts PASS_REGULAR_EXPRESSION
  "error: run_script.sh: --out [^\n]*: all_reduce_np2\\.txt exists and no opbench run wrote it[^\n]*\nexit=2\nmy notes\nexit=1\nexit=1\n$")
add_test(NAME "run_script.sh: a run bench_ccl refuses exits 1, quoting bench_ccl's error from the run's log"
  COMMAND ${CHECK_RUN_SCRIPT} failure ${RUN_SCRIPT} ${CMAKE_CURRENT_BINARY_DIR}/run_script_failure
          $<TARGET_FILE:bench_ccl>)
set_tests_properties("run_script.sh: a run bench_ccl refuses exits 1, quoting bench_ccl's error from the run's log"
  PROPERTIES TIMEOUT 120)
add_test(NAME "run_script.sh: --mpirun-arg, --launch-agent, --iface and the job limit reach mpirun intact, NCCL_SOCKET_IFNAME only for nccl"
  COMMAND ${CHECK_RUN_SCRIPT} mpirun-args ${RUN_SCRIPT} ${CMAKE_CURRENT_BINARY_DIR}/run_script_args
          ${DATA}/fake_mpirun.sh)
add_test(NAME "run_script.sh bad input: a flag without its value"
  COMMAND ${EXPECT_ERROR} --contains "--hostfile needs a value" -- bash ${RUN_SCRIPT} --hostfile)

# plot_report: the collectives legend tells in-place from out-of-place (7 ops x 2 placements =
# 14 entries, 14 colours), on a real bench_ccl report at 2 ranks.
add_test(NAME "plot_report: the collectives legend has an entry and colour of its own per op and placement (14)"
  COMMAND bash -c "rm -rf \"$0\" && mkdir -p \"$0\" && '${MPIEXEC_EXECUTABLE}' --allow-run-as-root --oversubscribe -np 2 \
                   '$<TARGET_FILE:bench_ccl>' --backend mpi -b 1K -e 64K -f 8 --quiet --report-dir-path \"$0\" \
                   --report-csv-path \"$0/ccl_all.csv\" -n 5 -w 1 --max-time 0.2 > /dev/null \
                   && \"$@\" legend \"$0/plots\" \"$0/ccl_all.csv\" --entries 14"
          ${CMAKE_CURRENT_BINARY_DIR}/plot_legend ${CHECK_FIGURES})
set_tests_properties("plot_report: the collectives legend has an entry and colour of its own per op and placement (14)"
  PROPERTIES TIMEOUT 120)

# plot_report on run_script.sh's sweep (above: all_reduce and all_gather at 2 and 3 ranks) and the
# tiny model's FSDP plan at world size 4: one chart per op with 2 world sizes x 2 placements = 4
# lines, and the plan's bars: decoder_layer all_gather forward 1,451,008 B x 2 calls = 2.902016 MB,
# root reduce_scatter backward 1,049,600 B x 1 call = 1.0496 MB.
set(SWEEP ${CMAKE_CURRENT_BINARY_DIR}/run_script_relative/sweep_rel)
add_test(NAME "plot_report: a run_script.sh sweep is one chart per op with a line per world size, the FSDP plan is drawn"
  COMMAND bash -c "'$<TARGET_FILE:bench_fsdp>' --model tiny --world-size 4 --dry-run --plan-csv-path \"$0\" > /dev/null \
                   && \"$@\""
          ${CMAKE_CURRENT_BINARY_DIR}/plot_plan.csv ${CHECK_FIGURES} scaling ${CMAKE_CURRENT_BINARY_DIR}/plot_scaling
          ${SWEEP}/all_reduce_np2.csv ${SWEEP}/all_reduce_np3.csv ${SWEEP}/all_gather_np2.csv ${SWEEP}/all_gather_np3.csv
          ${CMAKE_CURRENT_BINARY_DIR}/plot_plan.csv
          --chart all_reduce_scaling_ccl.png:4 --chart all_gather_scaling_ccl.png:4 --chart plot_plan_fsdp_plan.png:0
          "--plan-bar=decoder_layer:all_gather forward:2.902016" "--plan-bar=root:reduce_scatter backward:1.0496")
set_tests_properties("plot_report: a run_script.sh sweep is one chart per op with a line per world size, the FSDP plan is drawn"
  PROPERTIES FIXTURES_REQUIRED run_script_sweep)
# A collectives report whose ok row has a size of 1024.0, and one without its placement column:
# one error line naming the file, row and column, exit 2, nothing drawn (tracebacks before).
add_test(NAME "plot_report bad input: a fractional size_bytes, a missing column"
  COMMAND bash -c "t=\"$0\"; rm -rf \"$t\" && mkdir -p \"$t\" \
    && awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; print; next } NR == 2 { $c[\"size_bytes\"] = $c[\"size_bytes\"] \".0\" } { print }' \"$3\" > \"$t/fraction.csv\" \
    && awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == \"placement\") p = i } { $p = \"\"; sub(/,,/, \",\"); print }' \"$3\" > \"$t/noplacement.csv\"; \
    for f in fraction noplacement; do \"$1\" \"$2\" \"$t/$f.csv\" --out \"$t/out\"; echo exit=$?; done; ls \"$t/out\" 2>/dev/null | wc -l"
          ${CMAKE_CURRENT_BINARY_DIR}/plots_bad_cells ${OPBENCH_PYTHON} ${PLOT_REPORT} ${DATA}/compare_ccl_noisy_base.csv)
set_tests_properties("plot_report bad input: a fractional size_bytes, a missing column" PROPERTIES LABELS scripts
  PASS_REGULAR_EXPRESSION "^error: [^\n]*fraction\\.csv row 1: size_bytes: '[0-9]+\\.0' is not an integer\nexit=2\nerror: [^\n]*noplacement\\.csv: a ccl report without its placement column\nexit=2\n0\n$")
# A bench_ccl capture replay (tests/data/plot_ccl_replay.csv: bench_ccl --capture-path
# tests/data/capture_placed, two ranks) whose size_bytes cells are empty: the label's size is the
# cell as it is and the chart is drawn (int('') ended the script in a traceback; a label is no
# figure, the bars are the times).
add_test(NAME "plot_report: a capture replay with an empty size_bytes is still drawn"
  COMMAND bash -c "t=\"$0\"; rm -rf \"$t\" && mkdir -p \"$t\" \
    && awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; print; next } { $c[\"size_bytes\"] = \"\" } { print }' \"$3\" > \"$t/replay.csv\" \
    && \"$1\" \"$2\" \"$t/replay.csv\" --out \"$t/out\" > /dev/null; echo exit=$?; ls \"$t/out\""
          ${CMAKE_CURRENT_BINARY_DIR}/plots_replay_size ${OPBENCH_PYTHON} ${PLOT_REPORT} ${DATA}/plot_ccl_replay.csv)
set_tests_properties("plot_report: a capture replay with an empty size_bytes is still drawn" PROPERTIES LABELS scripts
  PASS_REGULAR_EXPRESSION "^exit=0\nreplay_capture_replay\.png\n$")
# Three reports named alike (all.csv of three runs, two in folders of one name): three charts,
# none drawn over another (the third took the second's name).
add_test(NAME "plot_report: three reports of one name are three charts"
  COMMAND bash -c "t=\"$0\"; rm -rf \"$t\"; for i in 1 2 3; do mkdir -p \"$t/p$i/r\" && cp \"$3\" \"$t/p$i/r/all.csv\"; done; \
    \"$1\" \"$2\" \"$t/p1/r/all.csv\" \"$t/p2/r/all.csv\" \"$t/p3/r/all.csv\" --out \"$t/out\" > /dev/null && ls \"$t/out\""
          ${CMAKE_CURRENT_BINARY_DIR}/plots_same_name ${OPBENCH_PYTHON} ${PLOT_REPORT} ${DATA}/plot_memops_step.csv)
set_tests_properties("plot_report: three reports of one name are three charts" PROPERTIES LABELS scripts
  PASS_REGULAR_EXPRESSION "^all_memops\\.png\nr_all_memops\\.png\nr_all_memops_2\\.png\n$")
add_test(NAME "plot_report bad input: a bad report after a good one fails before anything is drawn"
  COMMAND ${CHECK_FIGURES} fail-fast ${CMAKE_CURRENT_BINARY_DIR}/plots_fail_fast ${DATA}/compare_ccl_noisy_base.csv
          ${DATA}/compare_base.csv)
# A Python without matplotlib (tests/data/no_matplotlib's stand-in refuses the import).
add_test(NAME "plot_report without matplotlib names the Python that lacks it and exits 2"
  COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${DATA}/no_matplotlib
          ${EXPECT_ERROR} --contains "plot_report.py needs matplotlib, which ${OPBENCH_PYTHON} cannot import"
          --contains "run it with /usr/bin/python3 (Debian's python3-matplotlib; scripts/setup.sh installs it)"
          -- ${OPBENCH_PYTHON} ${PLOT_REPORT} ${DATA}/compare_ccl_noisy_base.csv --out ${CMAKE_CURRENT_BINARY_DIR}/plots_none)

add_test(NAME "plot_report: the GEMM roofline marks MoE expert rows with a marker per implementation"
  COMMAND ${CHECK_FIGURES} markers ${CMAKE_CURRENT_BINARY_DIR}/plot_experts ${DATA}/gemm_moe_experts.csv
          "--series=fprop fp32:o" "--series=wgrad fp32:o"
          "--series=fprop fp32 experts grouped:D" "--series=fprop fp32 experts loop:^"
          "--series=fprop fp32 experts padded:s" "--series=wgrad fp32 experts grouped:D"
          "--series=wgrad fp32 experts loop:^" "--series=wgrad fp32 experts padded:s")

# The memops peers run here (numpy and Debian's CPU PyTorch) and print their one line.
add_test(NAME "peers: numpy and torch memops peers print their figures"
  COMMAND sh -c "${OPBENCH_PYTHON} ${PROJECT_SOURCE_DIR}/bench/peers/numpy_memops.py add 64 256 --repeats 2 && ${OPBENCH_PYTHON} ${PROJECT_SOURCE_DIR}/bench/peers/torch_memops.py layernorm 64 256 --pass bwd --repeats 2")
set_tests_properties("peers: numpy and torch memops peers print their figures" PROPERTIES
  PASS_REGULAR_EXPRESSION "numpy add fwd 64 256 fp32 mean_us=[0-9.]+.*torch layernorm bwd 64 256 fp32 mean_us=[0-9.]+")
add_test(NAME "peers: memops_vs_peer.sh prints one ratio table against the real bench_memops"
  COMMAND ${WITH_EXIT} env ROUNDS=1 bash ${PROJECT_SOURCE_DIR}/bench/peers/memops_vs_peer.sh numpy 64K 256)
# Every row measured (a row bench_memops did not pass prints its status and empty cells, and the
# script exits 1 after the table): times, ratio and GB/s in each, and exit 0.
set_tests_properties("peers: memops_vs_peer.sh prints one ratio table against the real bench_memops" PROPERTIES
  PASS_REGULAR_EXPRESSION "\\| add \\| fwd \\| 256 \\| 256 \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\|\n\\| copy \\| fwd \\| 256 \\| 256 \\| [0-9.]+ \\|.*\nexit=0")

# memops_vs_peer.sh torch-cuda takes a relative OPBENCH_BUILD_DIR as the caller's (it was looked
# for in the repository, where the script changes to): here a folder with no build, named.
add_test(NAME "peers: memops_vs_peer.sh torch-cuda reads a relative OPBENCH_BUILD_DIR from the caller's folder"
  COMMAND ${CMAKE_COMMAND} -E env OPBENCH_BUILD_DIR=no_build_here
          ${EXPECT_ERROR} --contains "${CMAKE_CURRENT_BINARY_DIR}/no_build_here/memops/bench_memops not built"
          -- bash ${PROJECT_SOURCE_DIR}/bench/peers/memops_vs_peer.sh torch-cuda
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties("peers: memops_vs_peer.sh torch-cuda reads a relative OPBENCH_BUILD_DIR from the caller's folder"
  PROPERTIES LABELS scripts)
# gemm_vs_peer.sh: the model's GEMMs read by column name from bench_gemm --dry-run (an empty
# impl cell once shifted every column: m was read from batch), and one square against numpy.
add_test(NAME "peers: gemm_vs_peer.sh reads a model's GEMMs from bench_gemm's dry run by column"
  COMMAND env LIST=1 bash ${PROJECT_SOURCE_DIR}/bench/peers/gemm_vs_peer.sh numpy tiny "--seq-len 64" 64)
set_tests_properties("peers: gemm_vs_peer.sh reads a model's GEMMs from bench_gemm's dry run by column" PROPERTIES
  PASS_REGULAR_EXPRESSION "^square 64 64 64 NN\nattn_qkv/fprop 64 512 256 NT\nattn_qkv/dgrad 64 256 512 NN\n.*\nlm_head/wgrad 1024 256 64 TN\n$")
add_test(NAME "peers: gemm_vs_peer.sh prints one ratio table against the real bench_gemm"
  COMMAND env ROUNDS=1 bash ${PROJECT_SOURCE_DIR}/bench/peers/gemm_vs_peer.sh numpy none "" 64)
set_tests_properties("peers: gemm_vs_peer.sh prints one ratio table against the real bench_gemm" PROPERTIES
  PASS_REGULAR_EXPRESSION "\\| square \\| 64 \\| 64 \\| 64 \\| NN \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\|")

# The collective peers share compare_rounds (ccl_peer_lib.sh); the plain MPI loop is the one
# peer Debian provides the parts of (mpicc), so its script runs here: 2 ranks, one round.
# ratio_table.py: a row of ours that did not run (skipped: no time) and a size the peer has no
# time for are named, the others still tabled, and the run fails (exit 1); it crashed on the
# empty time and passed over the size in silence.
add_test(NAME "peers: ratio_table.py names a row of ours that did not run and a size the peer lacks"
  COMMAND bash -c "t=\"$0\"; rm -rf \"$t\" && mkdir -p \"$t\" \
    && printf 'op,size_bytes,time_us,status\\nall_reduce,1024,10.0,ok\\nall_reduce,2048,20.0,ok\\nall_reduce,4096,,skipped\\n' > \"$t/ours_1.csv\" \
    && printf 'plain all_reduce 1024 5.0\\n' > \"$t/peer_1.txt\"; \"$1\" \"$2\" \"$t\" 1 loop bench_ccl plain; echo exit=$?"
          ${CMAKE_CURRENT_BINARY_DIR}/ratio_table ${OPBENCH_PYTHON} ${PROJECT_SOURCE_DIR}/bench/peers/ratio_table.py)
set_tests_properties("peers: ratio_table.py names a row of ours that did not run and a size the peer lacks"
  PROPERTIES LABELS scripts PASS_REGULAR_EXPRESSION
  "\\| 1024 \\| 10\\.00 \\| 5\\.00 \\| 2\\.000 \\|\n[^\n]*\nnote: no loop time at: 2048\nnote: bench_ccl all_reduce 4096: skipped, not compared\n.*exit=1")
add_test(NAME "peers: ccl_vs_mpi_loop.sh prints one ratio table against a plain MPI_Allreduce loop"
  COMMAND env OMPI_MCA_mpi_yield_when_idle=1 timeout 120 bash ${PROJECT_SOURCE_DIR}/bench/peers/ccl_vs_mpi_loop.sh 2 1 20)
set_tests_properties("peers: ccl_vs_mpi_loop.sh prints one ratio table against a plain MPI_Allreduce loop" PROPERTIES
  PASS_REGULAR_EXPRESSION "\\| 4096 \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\|.*\\| 1048576 \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\|")

# The peer of the host allocator's sizes (issue 42 item 6) at its two smallest: the table's op
# and reference columns, both loops built from mpi_collective_loop.c.
add_test(NAME "peers: ccl_vs_mpi_loop_large.sh prints the ops' ratio table with glibc's defaults beside"
  COMMAND env OMPI_MCA_mpi_yield_when_idle=1 timeout 120 bash ${PROJECT_SOURCE_DIR}/bench/peers/ccl_vs_mpi_loop_large.sh 2 1 2 1048576 2097152)
set_tests_properties("peers: ccl_vs_mpi_loop_large.sh prints the ops' ratio table with glibc's defaults beside" PROPERTIES
  PASS_REGULAR_EXPRESSION "\\| all_gather \\| 2097152 \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\|.*\\| reduce_scatter \\| 1048576 \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\|")

# bench_step: the stacked bars of a step.csv (two projections of Llama-3.1 70B from the H100
# fixtures, and one left empty for want of a time, which is named and not drawn), and the
# projection against real PyTorch training steps on this CPU (a tiny model, one timed step).
add_test(NAME "plot_report: bench_step's configurations as stacked bars, an empty step named and left out"
  COMMAND ${OPBENCH_PYTHON} ${PLOT_REPORT} ${DATA}/step_small.csv --out ${CMAKE_CURRENT_BINARY_DIR}/plot_step)
set_tests_properties("plot_report: bench_step's configurations as stacked bars, an empty step named and left out"
  PROPERTIES PASS_REGULAR_EXPRESSION "llama3.1-70b tp 8 pp 1 dp 2: no step time \\(no time for 2 operators: dp all_reduce.*not drawn.*step_small_step.png")
# Issue 27 item 5: the validation's smallest case (docs/formulas.md's table has all three): the
# eager projection, the one calibrated from the capture of the real step, and the memory, beside
# a real PyTorch step. The errors are reported, not judged here (a loaded CI machine's timings).
add_test(NAME "peers: step_vs_torch.py prints bench_step's projection against real PyTorch steps"
  COMMAND ${OPBENCH_PYTHON} ${PROJECT_SOURCE_DIR}/bench/peers/step_vs_torch.py --cases llama-cpu-xs:256
          --warmup 1 --steps 3 --max-time 0.1 --bench-step $<TARGET_FILE:bench_step> --bench-ccl $<TARGET_FILE:bench_ccl>
          --capture-lib $<TARGET_FILE:opbench_capture> --work-dir ${CMAKE_CURRENT_BINARY_DIR}/step_vs_torch)
set_tests_properties("peers: step_vs_torch.py prints bench_step's projection against real PyTorch steps"
  PROPERTIES PASS_REGULAR_EXPRESSION
  "\\| llama-cpu-xs, seq 256 \\| 256 \\| [0-9]+ \\| [0-9]+ \\([-+][0-9.]+%\\) \\| [0-9]+ \\([-+][0-9.]+%\\) \\| [0-9]+ \\([-+][0-9.]+%\\) \\|.*timed steps on jemalloc"
  TIMEOUT 600 FIXTURES_SETUP torch_step_capture)
# A run stopped after its first case (SIGTERM, as gpu_validate.sh's time budget sends) keeps
# that case's row: rows are printed as each case ends, not at the end.
add_test(NAME "peers: step_vs_torch.py stopped after a case keeps that case's row"
  COMMAND bash -c "t=\"$0\"; rm -rf \"$t\" && mkdir -p \"$t\"; setsid \"$@\" --work-dir \"$t/work\" > \"$t/out.txt\" 2>&1 & pid=$!; \
    for i in $(seq 600); do grep -q '| tiny, seq 32 |' \"$t/out.txt\" && break; sleep 0.2; done; \
    kill -TERM -- -$pid; wait $pid; echo exit=$?; grep '^| tiny' \"$t/out.txt\"" ${CMAKE_CURRENT_BINARY_DIR}/step_vs_torch_term
          ${OPBENCH_PYTHON} ${PROJECT_SOURCE_DIR}/bench/peers/step_vs_torch.py --model-config-path ${PROJECT_SOURCE_DIR}/configs/models.json
          --cases tiny:32,tiny:64 --warmup 1 --steps 2 --max-time 0.02 --bench-step $<TARGET_FILE:bench_step>
          --bench-ccl $<TARGET_FILE:bench_ccl> --capture-lib $<TARGET_FILE:opbench_capture>)
set_tests_properties("peers: step_vs_torch.py stopped after a case keeps that case's row"
  PROPERTIES LABELS preload TIMEOUT 300 PASS_REGULAR_EXPRESSION
  "exit=143\n\\| tiny, seq 32 \\| 32 \\| [0-9]+ \\| [0-9]+ \\([-+][0-9.]+%\\) \\|[^\n]*\n$")
# A models file that is not UTF-8 (tests/data/bad_models_latin1.json: a Latin-1 é): one line
# naming it, exit 2 (a UnicodeDecodeError traceback before).
add_test(NAME "peers: torch_train_step.py bad input: a models file that is not UTF-8"
  COMMAND ${EXPECT_ERROR} --contains "bad_models_latin1.json: not UTF-8 text"
          -- ${OPBENCH_PYTHON} ${PROJECT_SOURCE_DIR}/bench/peers/torch_train_step.py
             --model-config-path ${DATA}/bad_models_latin1.json --model x)
# A --work-dir holding a folder of the user's by the name a case's capture takes: refused before
# anything runs (exit 2), the folder left as it is; it was removed.
add_test(NAME "peers: step_vs_torch.py never removes a folder of the user's in --work-dir"
  COMMAND bash -c "t=\"$0\"; rm -rf \"$t\" && mkdir -p \"$t/capture-tiny-32\" && echo mine > \"$t/capture-tiny-32/notes.txt\"; \
    \"$@\" --work-dir \"$t\" > /dev/null; echo exit=$?; cat \"$t/capture-tiny-32/notes.txt\"" ${CMAKE_CURRENT_BINARY_DIR}/step_vs_torch_user_dir
          ${OPBENCH_PYTHON} ${PROJECT_SOURCE_DIR}/bench/peers/step_vs_torch.py --model-config-path ${PROJECT_SOURCE_DIR}/configs/models.json
          --cases tiny:32 --bench-step $<TARGET_FILE:bench_step> --bench-ccl $<TARGET_FILE:bench_ccl>
          --capture-lib $<TARGET_FILE:opbench_capture>)
set_tests_properties("peers: step_vs_torch.py never removes a folder of the user's in --work-dir"
  PROPERTIES LABELS scripts PASS_REGULAR_EXPRESSION
  "error: [^\n]*capture-tiny-32: exists and no opbench run wrote it[^\n]*name another --work-dir\nexit=2\nmine\n$")
# On the GPU, step_vs_torch.py sets the profiled step's kernel time by part beside the
# projections' (traced_parts): checked on the repository's GPU step trace, worked by hand.
add_test(NAME "peers: step_vs_torch.py's profiled-step breakdown sums the trace's kernels by part"
  COMMAND ${OPBENCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_traced_parts.py $<TARGET_FILE:trace_convert>)
set_tests_properties("peers: step_vs_torch.py's profiled-step breakdown sums the trace's kernels by part"
  PROPERTIES PASS_REGULAR_EXPRESSION "traced parts: ok" TIMEOUT 60)
# On the GPU, torch_train_step.py's host cost a kernel is each phase's issue time over the kernels
# its profiled step launched in it (launches_by_phase): a trace made by the check, worked by hand.
add_test(NAME "peers: torch_train_step.py counts a profiled step's kernel launches by phase"
  COMMAND ${OPBENCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_launch_phases.py)
set_tests_properties("peers: torch_train_step.py counts a profiled step's kernel launches by phase"
  PROPERTIES PASS_REGULAR_EXPRESSION "launch phases: ok" TIMEOUT 60)
# The peer's MoE model (moe-cpu-xs, DeepSeek's layout) builds the parameters bench_step counts,
# worked by hand: 4 layers' attention (q, o 512 x 512, k, v 128 x 512) 4 x 655,360 and norms
# 4 x 1,024; the dense first layer's MLP 3 x 512 x 1408 = 2,162,688; 3 MoE layers, each a router
# of 8 x 512 and 9 experts (8 routed, 1 shared) of 3 x 512 x 704, 3 x 9,736,192; the embedding and
# LM head 2 x 16,000 x 512 and the final norm 512: 50,381,312. One training step runs (its loss is
# finite); a built model off its own formula prints "the formula says". The host cost of an eager
# operator is measured (non-zero: a product's dispatch costs more than 0.05 us either way).
add_test(NAME "peers: torch_train_step.py trains an MoE model of the parameters counted by hand"
  COMMAND ${OPBENCH_PYTHON} ${PROJECT_SOURCE_DIR}/bench/peers/torch_train_step.py
          --model-config-path ${PROJECT_SOURCE_DIR}/bench/peers/step_models.json --model moe-cpu-xs
          --seq-len 64 --warmup 0 --steps 1)
set_tests_properties("peers: torch_train_step.py trains an MoE model of the parameters counted by hand"
  PROPERTIES PASS_REGULAR_EXPRESSION
  "3 MoE layers of 8 experts x 704 \\(top-2, 1 shared\\); 50,381,312 params.*host cost of an eager operator: [0-9.]*[1-9][0-9.]* us forward, [0-9.]*[1-9][0-9.]* us backward.*\"params\": 50381312, .*\"loss\": [0-9].*\"host_us_per_op_fwd\": [0-9.]*[1-9]"
  FAIL_REGULAR_EXPRESSION "formula says")
# plot_report draws one series per shape and per collective case (issue 32, items 1 and 2): two
# attention shapes that share their lengths (batch 1 MHA and batch 2 GQA at 1024 and 2048) are
# two lines of two points, not one line of the larger; reduce at roots 0 and 1, all_reduce with
# sum and min are four lines, each naming its root or reduction.
add_test(NAME "plot_report: two attention shapes at the same lengths are two lines"
  COMMAND ${CHECK_FIGURES} series ${CMAKE_CURRENT_BINARY_DIR}/plot_attention_shapes ${DATA}/plot_attention_shapes.csv
          --chart plot_attention_shapes_attention.png
          --line "tiny b1 h8 d64 fwd fp32 causal:2" --line "tiny b2 h16/4 d64 fwd fp32 causal:2")
add_test(NAME "plot_report: collectives of different roots and reductions are lines of their own"
  COMMAND ${CHECK_FIGURES} series ${CMAKE_CURRENT_BINARY_DIR}/plot_ccl_roots ${DATA}/plot_ccl_roots.csv
          --chart plot_ccl_roots_ccl.png
          --line "reduce fp32 root 0 out_of_place:2" --line "reduce fp32 root 1 out_of_place:2"
          --line "all_reduce fp32 sum out_of_place:2" --line "all_reduce fp32 min out_of_place:2")

# plot_report draws every bench_memops report (memops_<model>.csv, memops_sweep.csv, bench_step's
# memops_step.csv; issue 30 item 3): a bar per ok row at its mem_bw_gbps (io_bytes / time_us, e.g.
# 786432 B / 26.2144 us = 30 GB/s), against the roof. The sweep fixture's roof is its own CPU roof
# (roof_gbps 40, "best loop: triad"), unless --peak-bw names another; the H100 fixture has none of
# its own (as bench_step writes memops_step.csv), so hardware.json's 3350 GB/s is drawn. Its two
# providers are named; the skipped and the failed row (3100 GB/s) are not drawn.
set(SWEEP_BARS --bar "add fwd 16x4096 fp32:30" --bar "add fwd 64x4096 fp32:50" --bar "copy fwd 16x4096 fp32:40")
add_test(NAME "plot_report: a bench_memops sweep, a bar per case against the report's own CPU roof"
  COMMAND ${CHECK_FIGURES} bars ${CMAKE_CURRENT_BINARY_DIR}/plot_memops_sweep ${DATA}/plot_memops_sweep.csv
          --chart plot_memops_sweep_memops.png ${SWEEP_BARS} "--peak=40:best loop: triad")
add_test(NAME "plot_report: --peak-bw replaces a bench_memops report's own roof"
  COMMAND ${CHECK_FIGURES} bars ${CMAKE_CURRENT_BINARY_DIR}/plot_memops_peak_bw ${DATA}/plot_memops_sweep.csv
          --chart plot_memops_sweep_memops.png ${SWEEP_BARS} --peak-bw 100 "--peak=100:--peak-bw")
add_test(NAME "plot_report: bench_step's memops_step.csv against the device's peak from hardware.json"
  COMMAND ${CHECK_FIGURES} bars ${CMAKE_CURRENT_BINARY_DIR}/plot_memops_step ${DATA}/plot_memops_step.csv
          --chart plot_memops_step_memops.png --bar "rmsnorm fwd 1024x8192 bf16 cuda:2680"
          --bar "rmsnorm fwd 1024x8192 bf16 cudnn:3015" --bar "rmsnorm bwd 1024x8192 bf16 cuda:2010"
          "--peak=3350:configs/hardware.json")

# plot_report draws bench_step's step_operators.csv: a bar per configuration, its operators' count x
# time_us stacked by family as bench_step composes the step. Fixture (tiny-moe at tp 2, dp 2):
# GEMM 4 x 250 us fprop + 4 x 250 us dgrad = 2 ms (3 ms with full recomputation's 4 more fprops),
# expert GEMMs 2 x 500 us = 1 ms, attention 2 x 1000 us = 2 ms (4 ms recomputed), rmsnorm 10 x 50 us
# = 0.5 ms, the tp all-reduce 4 x 100 us = 0.4 ms, the dp all-reduce 800 us (before overlap), AdamW
# 300 us apart from the memory-bound operators. The configurations differ in recomputation and
# overlap, so the labels name the overlap; the first one's second dp bucket has no time: named in
# its label and on stderr, not counted.
set(OPS_A "tiny-moe | tp 2 pp 1 dp 2 | mb 1 x 2, none | overlap 0 | no time for 1 of 9 operators")
set(OPS_B "tiny-moe | tp 2 pp 1 dp 2 | mb 1 x 2, full | overlap 1")
add_test(NAME "plot_report: bench_step's step_operators.csv as a bar per configuration stacked by operator family"
  COMMAND ${CHECK_FIGURES} stacks ${CMAKE_CURRENT_BINARY_DIR}/plot_step_operators ${DATA}/plot_step_operators.csv
          --chart plot_step_operators_step_operators.png
          "--stack=${OPS_A}:GEMM:2" "--stack=${OPS_A}:MoE expert GEMMs:1" "--stack=${OPS_A}:attention:2"
          "--stack=${OPS_A}:memory-bound:0.5" "--stack=${OPS_A}:communication (tp, ep, pp):0.4"
          "--stack=${OPS_A}:data-parallel communication (before overlap):0.8" "--stack=${OPS_A}:optimizer:0.3"
          "--stack=${OPS_B}:GEMM:3" "--stack=${OPS_B}:MoE expert GEMMs:1" "--stack=${OPS_B}:attention:4"
          "--stack=${OPS_B}:memory-bound:0.5" "--stack=${OPS_B}:communication (tp, ep, pp):0.4"
          "--stack=${OPS_B}:data-parallel communication (before overlap):0.8" "--stack=${OPS_B}:optimizer:0.3"
          "--stderr=no time for 1 of 9 operators (dp all_reduce (last gradient bucket)): not counted")

# plot_report never overwrites a file no opbench run wrote: a user's PNG at the chart's path is
# refused (exit 2), unchanged; drawn again over its own PNG, it goes on.
add_test(NAME "plot_report: a user's file at a chart's path is refused and kept"
  COMMAND bash -c "rm -rf \"$0\" && mkdir -p \"$0\" && echo mine > \"$0/compare_attention_attention.png\" \
                   && { ${OPBENCH_PYTHON} '${PLOT_REPORT}' '${DATA}/compare_attention.csv' --out \"$0\" 2> \"$0/err\"; test $? -eq 2; } \
                   && grep -q 'exists and no opbench run wrote it' \"$0/err\" && grep -qx mine \"$0/compare_attention_attention.png\" \
                   && ${OPBENCH_PYTHON} '${PLOT_REPORT}' '${DATA}/compare_attention.csv' --out \"$0/own\" \
                   && ${OPBENCH_PYTHON} '${PLOT_REPORT}' '${DATA}/compare_attention.csv' --out \"$0/own\""
          ${CMAKE_CURRENT_BINARY_DIR}/plot_user_file)

# compare_reports reads every report kind (issue 32 item 8): bench_memops rows keyed by their
# shape (add at 16 and 64 rows are two cases: the 64-row one lost 20% of its bandwidth), and
# bench_step's configurations against themselves.
add_test(NAME "compare_reports: bench_memops rows keyed by shape, one regressed"
  COMMAND ${WITH_EXIT} ${COMPARE} ${DATA}/compare_memops_base.csv ${DATA}/compare_memops_new.csv)
set_tests_properties("compare_reports: bench_memops rows keyed by shape, one regressed" PROPERTIES
  PASS_REGULAR_EXPRESSION "\\| add \\| 16 \\| 19.66 \\| 19.66 \\| 1.000 .*\\| add \\| 64 \\| 19.66 \\| 15.73 \\| 0.800 \\| -20.0% \\| REGRESSION .*3 rows compared on mem_bw_gbps \\(higher is better\\).*1 regressed.*\nexit=1")
add_test(NAME "compare_reports: a bench_step report against itself"
  COMMAND ${WITH_EXIT} ${COMPARE} ${DATA}/step_small.csv ${DATA}/step_small.csv)
set_tests_properties("compare_reports: a bench_step report against itself" PROPERTIES
  PASS_REGULAR_EXPRESSION "2 rows compared on step_time_ms \\(lower is better\\), threshold 5%: 0 regressed, 0 improved, 0 within noise, 0 inconclusive\\.\nexit=0")

# bench_step's moe_dispatcher and cp columns: a step.csv written before them (an MoE row with its
# etp, no dispatcher, no cp) matches the all-to-all, cp 1 row of a newer one, whose 50% slower
# step is a regression; the all-gather row is a new case, and the dense row matches as before.
add_test(NAME "compare_reports: a step.csv without moe_dispatcher and cp reads its MoE rows as alltoall, every row as cp 1"
  COMMAND ${WITH_EXIT} ${COMPARE} ${DATA}/compare_step_before_dispatcher.csv ${DATA}/compare_step_dispatchers.csv)
set_tests_properties("compare_reports: a step.csv without moe_dispatcher and cp reads its MoE rows as alltoall, every row as cp 1" PROPERTIES
  PASS_REGULAR_EXPRESSION "\\| mixtral-8x7b \\| 2 \\| 4 \\| 2 \\| alltoall \\| 4 \\| 1000 \\| 1500 \\| 0.667 \\| -33.3% \\| REGRESSION .*\\| allgather \\| 4 \\| new row \\| 1400 .*2 rows compared on step_time_ms.*1 regressed.*\nexit=1")

# What readers took wrong in the charts (issue 44 item 3): check_plot_figures.py looks says what
# each figure must show.
add_test(NAME "plot_report: charts agree with their CSVs, one colour per step part, the CPU roofline's own roofs, attention from 0"
  COMMAND ${CHECK_FIGURES} looks ${CMAKE_CURRENT_BINARY_DIR}/plot_looks ${DATA})

# scripts/gpu_bundle.sh (issue 41): the binaries and the libraries the GPU machine lacks, packed;
# under `env -i .gpu/run` bench_gemm, trace_convert and 2 MPI ranks of bench_ccl load fmt,
# OpenBLAS and Open MPI from the bundle, also with the system's copies hidden where a mount
# namespace can be made (check_gpu_bundle.py says how).
# gpu_bundle.sh packs a build with CUDA code for Hopper (90) only; a CPU-only build, or one for
# other architectures, is refused by design, so the test needs such a build.
if(OPBENCH_HAVE_CUDA AND ("90" IN_LIST CMAKE_CUDA_ARCHITECTURES OR "90-real" IN_LIST CMAKE_CUDA_ARCHITECTURES
                          OR "90a" IN_LIST CMAKE_CUDA_ARCHITECTURES))
  add_test(NAME "gpu_bundle.sh: the bundled binaries run on the bundle's libraries in a clean environment"
    COMMAND ${OPBENCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_gpu_bundle.py --build ${PROJECT_BINARY_DIR}
            --out ${CMAKE_CURRENT_BINARY_DIR}/gpu_bundle)
  set_tests_properties("gpu_bundle.sh: the bundled binaries run on the bundle's libraries in a clean environment"
    PROPERTIES TIMEOUT 300 LABELS scripts)
endif()
# gpu_bundle.sh replaces --out: only a bundle folder or an empty one, never a folder of the
# user's (it did rm -rf it, whatever it held); a flag without its value and a --max-mib that is
# no number are refused before anything is built.
add_test(NAME "gpu_bundle.sh: an --out of the user's is refused and left as it is, flags checked first"
  COMMAND bash -c "t=\"$0\"; rm -rf \"$t\" && mkdir -p \"$t/mine\" && echo keep > \"$t/mine/notes.txt\"; \
    bash \"$1\" --out \"$t/mine\" 2>&1; echo exit=$?; bash \"$1\" --out 2>&1; echo exit=$?; \
    bash \"$1\" --max-mib abc 2>&1; echo exit=$?; cat \"$t/mine/notes.txt\""
          ${CMAKE_CURRENT_BINARY_DIR}/gpu_bundle_refusals ${PROJECT_SOURCE_DIR}/scripts/gpu_bundle.sh)
set_tests_properties("gpu_bundle.sh: an --out of the user's is refused and left as it is, flags checked first"
  PROPERTIES LABELS scripts PASS_REGULAR_EXPRESSION
  "error: gpu_bundle.sh: --out [^\n]*/mine holds files and is no bundle[^\n]*\nexit=2\nerror: gpu_bundle.sh: --out needs a value\nexit=2\nerror: gpu_bundle.sh: --max-mib: 'abc' is not a whole number of MiB\nexit=2\nkeep\n$")
# .gpu/run never empties a folder the user named in OPBENCH_GPU_ROOT that holds something else
# (it did rm -rf it): exit 2, the file still there. A stand-in archive: the refusal comes first.
add_test(NAME "gpu_run.sh: an OPBENCH_GPU_ROOT holding other files is refused and left untouched"
  COMMAND bash -c "t=\"$1\"; rm -rf \"$t\" && mkdir -p \"$t/.gpu\" \"$t/mine\" && cp \"$2\" \"$t/.gpu/run\" && : > \"$t/.gpu/bundle.tar.xz\" && echo keep > \"$t/mine/notes.txt\"; OPBENCH_GPU_ROOT=\"$t/mine\" bash \"$t/.gpu/run\" true; rc=$?; echo \"exit=$rc\"; cat \"$t/mine/notes.txt\"" gpu_run
          ${CMAKE_CURRENT_BINARY_DIR}/gpu_run_root ${PROJECT_SOURCE_DIR}/scripts/gpu_run.sh)
set_tests_properties("gpu_run.sh: an OPBENCH_GPU_ROOT holding other files is refused and left untouched"
  PROPERTIES LABELS scripts PASS_REGULAR_EXPRESSION
  "error: OPBENCH_GPU_ROOT=.*/mine holds files but no unpacked bundle.*exit=2\nkeep")
# A relative OPBENCH_GPU_ROOT is made absolute before it goes into OPBENCH_BUILD_DIR and the
# library paths: a child that changes folder still finds the bundle (a stand-in bundle of an
# empty tree; the command runs from /).
add_test(NAME "gpu_run.sh: a relative OPBENCH_GPU_ROOT reaches its children as an absolute path"
  COMMAND bash -c "t=\"$1\"; rm -rf \"$t\" && mkdir -p \"$t/.gpu\" \"$t/stage/root/build\" && cp \"$2\" \"$t/.gpu/run\" \
    && tar -C \"$t/stage\" -cJf \"$t/.gpu/bundle.tar.xz\" root && cd \"$t\" \
    && OPBENCH_GPU_ROOT=rel bash .gpu/run sh -c 'cd / && echo \"build=$OPBENCH_BUILD_DIR\"' 2>/dev/null" gpu_run
          ${CMAKE_CURRENT_BINARY_DIR}/gpu_run_relative ${PROJECT_SOURCE_DIR}/scripts/gpu_run.sh)
set_tests_properties("gpu_run.sh: a relative OPBENCH_GPU_ROOT reaches its children as an absolute path"
  PROPERTIES LABELS scripts PASS_REGULAR_EXPRESSION "build=/[^\n]*/gpu_run_relative/rel/build\n")
# scripts/kernel_times.py on a stand-in of Nsight Compute's CLI (tests/integration/fake_ncu.py:
# no GPU here), one case of the embedding's backward, three calls: the rows kernel 300 µs a call
# (94%), three sort passes of 4 µs (12, 4%), the starts 6 (2%), the keys 2 (1%), the fill left
# out, a set-up kernel launched once (50 µs) listed but not counted: the calls are the launches
# most kernels share; 320 µs a call for 1280 MB: 4000 GB/s, 95% of the report's 4200. Where ncu
# times nothing (gVisor: no counters) or is missing, it says so, names its output's log and
# fails nothing.
set(KERNEL_TIMES ${OPBENCH_PYTHON} ${PROJECT_SOURCE_DIR}/scripts/kernel_times.py
    --bench-memops $<TARGET_FILE:bench_memops> --shapes-json-path ${DATA}/kernel_times_case.json)
add_test(NAME "kernel_times.py: each kernel of an operator timed by ncu, its share and the operator's rate"
  COMMAND bash -c "rm -rf \"$0\" && \"$@\" --out \"$0\"; echo exit=$?" ${CMAKE_CURRENT_BINARY_DIR}/kernel_times
          ${KERNEL_TIMES} --ncu ${CMAKE_CURRENT_SOURCE_DIR}/fake_ncu.py)
set_tests_properties("kernel_times.py: each kernel of an operator timed by ncu, its share and the operator's rate"
  PROPERTIES LABELS scripts PASS_REGULAR_EXPRESSION
  "\\| embedding-bwd \\| embedding_rows_kernel \\| 3 \\| 300\\.0 \\| 300\\.0 \\| 94% \\|\n\\| embedding-bwd \\| DeviceRadixSortOnesweepKernel \\| 9 \\| 4\\.0 \\| 12\\.0 \\| 4% \\|\n\\| embedding-bwd \\| embedding_starts_kernel \\| 3 \\| 6\\.0 \\| 6\\.0 \\| 2% \\|\n\\| embedding-bwd \\| embedding_keys_kernel \\| 3 \\| 2\\.0 \\| 2\\.0 \\| 1% \\|\n\\| embedding-bwd \\| elementwise_kernel \\| 1 \\| 50\\.0 \\| – \\| set-up \\|\n\n- embedding-bwd: its kernels take 320\\.0 µs a call \\(3 calls timed\\): 4000 GB/s for its 1280\\.0 MB, 95% of the run's copy rate \\(4200 GB/s\\)\nexit=0")
# LayerNorm's backward as the H200 ran it (2026-11-28): the rows kernel once a call (60 µs), the
# column sums twice (5 µs each), its forward once before the calls. The calls are 3, not the
# column sums' 6 (the rule before counted 6 on the tie and took the rows kernel for set-up: 4.7
# µs a call, 1021% of the copy rate): 70 µs a call, 294 MB in it: 4200 GB/s, 100%.
add_test(NAME "kernel_times.py: kernels launched twice a call do not halve the operator's calls"
  COMMAND bash -c "rm -rf \"$0\" && FAKE_NCU_CASE=layernorm_bwd \"$@\" --out \"$0\"" ${CMAKE_CURRENT_BINARY_DIR}/kernel_times_layernorm
          ${OPBENCH_PYTHON} ${PROJECT_SOURCE_DIR}/scripts/kernel_times.py
          --bench-memops $<TARGET_FILE:bench_memops> --shapes-json-path ${DATA}/kernel_times_layernorm.json
          --ncu ${CMAKE_CURRENT_SOURCE_DIR}/fake_ncu.py)
set_tests_properties("kernel_times.py: kernels launched twice a call do not halve the operator's calls"
  PROPERTIES LABELS scripts PASS_REGULAR_EXPRESSION
  "\\| layernorm-bwd \\| norm_bwd_rows_kernel \\| 3 \\| 60\\.0 \\| 60\\.0 \\| 86% \\|\n\\| layernorm-bwd \\| sum_partials_kernel \\| 6 \\| 5\\.0 \\| 10\\.0 \\| 14% \\|\n\\| layernorm-bwd \\| elementwise_kernel \\| 1 \\| 50\\.0 \\| – \\| set-up \\|\n\n- layernorm-bwd: its kernels take 70\\.0 µs a call \\(3 calls timed\\): 4200 GB/s for its 294\\.0 MB, 100% of the run's copy rate \\(4200 GB/s\\)\n")
# Case names name files in --out: one that leaves it ("../x") or a file of the user's there is
# refused before anything runs, exit 2, the user's file unchanged; a shapes file that is not a
# list of cases is refused as well.
add_test(NAME "kernel_times.py bad input: a case name outside --out, a file of the user's, not a list"
  COMMAND bash -c "t=\"$0\"; rm -rf \"$t\" && mkdir -p \"$t/out\" && echo mine > \"$t/out/rmsnorm.json\" \
    && echo '[{\"name\": \"../x\", \"op\": \"rmsnorm\", \"rows\": 8, \"cols\": 8}]' > \"$t/up.json\" \
    && echo '[{\"op\": \"rmsnorm\", \"rows\": 8, \"cols\": 8}]' > \"$t/plain.json\" && echo '{}' > \"$t/obj.json\"; \
    for f in up plain obj; do \"$@\" --ncu /bin/true --out \"$t/out\" --shapes-json-path \"$t/$f.json\"; echo exit=$?; done; \
    cat \"$t/out/rmsnorm.json\"; ls \"$t\"" ${CMAKE_CURRENT_BINARY_DIR}/kernel_times_bad
          ${OPBENCH_PYTHON} ${PROJECT_SOURCE_DIR}/scripts/kernel_times.py --bench-memops $<TARGET_FILE:bench_memops>)
set_tests_properties("kernel_times.py bad input: a case name outside --out, a file of the user's, not a list"
  PROPERTIES LABELS scripts PASS_REGULAR_EXPRESSION
  "entry 0 name: \"\\.\\./x\" is not a plain file name[^\n]*\nexit=2\nerror: [^\n]*/out/rmsnorm\\.json: exists and no opbench run wrote it[^\n]*\nexit=2\nerror: [^\n]*obj\\.json: expected a list of case objects[^\n]*\nexit=2\nmine\nobj\\.json\nout\nplain\\.json\nup\\.json\n$")
add_test(NAME "kernel_times.py: an ncu that times nothing, or none, is said and fails nothing"
  COMMAND bash -c "rm -rf \"$0\"; FAKE_NCU_FAIL=1 \"\${@:2}\" --out \"$0/fail\" --ncu \"$1\"; echo exit=$?; \"\${@:2}\" --out \"$0/none\" --ncu /nonexistent; echo exit=$?"
          ${CMAKE_CURRENT_BINARY_DIR}/kernel_times_not ${CMAKE_CURRENT_SOURCE_DIR}/fake_ncu.py ${KERNEL_TIMES})
set_tests_properties("kernel_times.py: an ncu that times nothing, or none, is said and fails nothing"
  PROPERTIES LABELS scripts PASS_REGULAR_EXPRESSION
  "^kernel times: not measured: ncu timed no kernel of embedding-bwd \\(exit 1: ==ERROR== Failed to initialize the profiler: LibraryNotLoaded; its output: [^\n]*/fail/embedding-bwd\\.ncu\\.log\\)\nexit=0\nkernel times: not measured: no Nsight Compute \\(ncu\\) found\nexit=0\n$")
# capture_cost.py ended by its time budget's `timeout` (gpu_validate.sh's capture_cost step): the
# rounds that ended still make the overhead table, and it says it was stopped; no replay. 50
# rounds of a tiny CPU step never end in 20 s; one round (about 4 s here) always does.
add_test(NAME "capture_cost.py: SIGTERM keeps the overhead table of the rounds that ended"
  COMMAND bash -c "timeout -s TERM 20 \"$@\"; echo \"exit=$?\"" capture_cost
          ${OPBENCH_PYTHON} ${PROJECT_SOURCE_DIR}/bench/peers/capture_cost.py --device cpu
          --rounds 50 --steps 1 --warmup 0 --max-time 0.02 --bench-gemm $<TARGET_FILE:bench_gemm>
          --capture-lib $<TARGET_FILE:opbench_capture>
          --work-dir ${CMAKE_CURRENT_BINARY_DIR}/capture_cost_sigterm)
set_tests_properties("capture_cost.py: SIGTERM keeps the overhead table of the rounds that ended"
  PROPERTIES LABELS scripts PASS_REGULAR_EXPRESSION
  "\\| tiny, seq 64 \\| fp32 \\| sampled \\(default\\) \\| [1-9][0-9]* x 1 \\| [0-9.]+ \\| [0-9.]+ \\| [-+][0-9.]+% \\|.*stopped by SIGTERM, a time budget, before its 50 rounds ended.*exit=124")
