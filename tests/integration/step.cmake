# bench_step end to end: its projections recomputed from the operator rows and the reports their
# times came from (check_step_reports.py). Included from CMakeLists.txt: OPBENCH_PYTHON, DATA and
# EXPECT_ERROR come from there.
set(CHECK_STEP ${OPBENCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_step_reports.py
    $<TARGET_FILE:bench_step>)
set(STEP_QUICK --max-samples 3 --max-time 0.2 --quiet)

add_test(NAME "step: a tiny model's step, every operator measured on the CPU and the figures recomputed"
  COMMAND ${CHECK_STEP} ${CMAKE_CURRENT_BINARY_DIR}/step_tiny --rows 2 -- --model tiny --seq-len 64
          --grad-accum 2 --recompute none,full --backend cpu --check ${STEP_QUICK})
set_tests_properties("step: a tiny model's step, every operator measured on the CPU and the figures recomputed"
  PROPERTIES FIXTURES_SETUP step_reports)
# Every CSV bench_step and bench_memops write plots, each as its own kind (issue 30 item 3):
# step.csv, step_operators.csv and the measured operators' gemm_step.csv, attention_step.csv and
# memops_step.csv of the run above, and bench_memops's model report and sweep (memops.cmake).
add_test(NAME "plot_report: every report bench_step and bench_memops write is drawn as its kind"
  COMMAND ${OPBENCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_plots.py ${PROJECT_SOURCE_DIR}/scripts/plot_report.py
          ${CMAKE_CURRENT_BINARY_DIR}/plot_step_reports
          ${CMAKE_CURRENT_BINARY_DIR}/step_tiny/step.csv:step
          ${CMAKE_CURRENT_BINARY_DIR}/step_tiny/step_operators.csv:step_operators
          ${CMAKE_CURRENT_BINARY_DIR}/step_tiny/gemm_step.csv:gemm
          ${CMAKE_CURRENT_BINARY_DIR}/step_tiny/attention_step.csv:attention
          ${CMAKE_CURRENT_BINARY_DIR}/step_tiny/memops_step.csv:memops
          ${CMAKE_CURRENT_BINARY_DIR}/memops_tiny/memops_tiny.csv:memops
          ${CMAKE_CURRENT_BINARY_DIR}/memops_all/memops_sweep.csv:memops)
set_tests_properties("plot_report: every report bench_step and bench_memops write is drawn as its kind"
  PROPERTIES FIXTURES_REQUIRED "step_reports;memops_reports")
add_test(NAME "step: Llama-3.1 70B on 8 H100 at tp 8 projected from the GPU-shaped fixtures"
  COMMAND ${CHECK_STEP} ${CMAKE_CURRENT_BINARY_DIR}/step_h100 --rows 2 --device H100 -- --model llama3.1-70b
          --tp 8 --grad-accum 8 --fused-grad-accum --recompute none,selective --from-reports ${DATA}/step_h100)
# A host cost of 2 ms a kernel (far beyond H100 kernels of a few ms at most): the device waits in
# every phase, the host part split by phase adding up to host_ms, the step to its parts. 41
# operator rows: each tensor-parallel message twice, the attention's and the MLP's.
add_test(NAME "step: a host-bound projection's host part by phase adds up, on the GPU-shaped fixtures"
  COMMAND ${CHECK_STEP} ${CMAKE_CURRENT_BINARY_DIR}/step_h100_host --rows 1 --device H100 -- --model llama3.1-70b
          --tp 8 --grad-accum 8 --fused-grad-accum --host-us-per-kernel 2000,2000 --from-reports ${DATA}/step_h100)
set_tests_properties("step: a host-bound projection's host part by phase adds up, on the GPU-shaped fixtures"
  PROPERTIES PASS_REGULAR_EXPRESSION "\\(host: the forward [0-9.]+ s, the backward [0-9.]+ s, the optimizer [0-9.]+ [mu]?s\\).*1 configurations, 41 operator rows checked: ok")
add_test(NAME "step: an operator without a time is named, the step left empty, the run exits 1"
  COMMAND ${CHECK_STEP} ${CMAKE_CURRENT_BINARY_DIR}/step_missing --exit-code 1 --missing "dp all_reduce"
          -- --model llama3.1-70b --tp 8 --dp 2 --grad-accum 8 --fused-grad-accum --from-reports ${DATA}/step_h100)
add_test(NAME "step: dry run lists the operators and meets Megatron's model FLOPs"
  COMMAND bench_step --model llama3.1-8b --tp 8 --pp 4 --grad-accum 8 --dry-run)
set_tests_properties("step: dry run lists the operators and meets Megatron's model FLOPs" PROPERTIES
  PASS_REGULAR_EXPRESSION "stage 3 of 4.*lm_head fprop +8 .*Megatron's model-FLOPs formula: 3.373 PFLOP \\(equal\\)")

# Data parallelism on the CPU: bench_ccl's all-reduce of 2 MPI ranks (a sweep its gradient buckets
# interpolate from), the compute measured, the overlap model applied.
add_test(NAME "step: dp 2 with the gradient all-reduce bench_ccl measured under mpirun"
  COMMAND sh -c "rm -rf step_ccl && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 300 \
    ${MPIEXEC_EXECUTABLE} -np 2 --oversubscribe --mca mpi_yield_when_idle 1 $<TARGET_FILE:bench_ccl> \
    --backend mpi --op all_reduce -d fp32 -b 1K -e 8M -f 4 --quiet --max-samples 3 --report-dir-path step_ccl \
    && ${OPBENCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_step_reports.py $<TARGET_FILE:bench_step> step_dp \
    -- --model tiny --seq-len 64 --dp 2 --bucket-mb 1 --overlap 0.5 --from-reports step_ccl --measure \
    --backend cpu --max-samples 3 --max-time 0.2 --quiet"
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties("step: dp 2 with the gradient all-reduce bench_ccl measured under mpirun" PROPERTIES
  PASS_REGULAR_EXPRESSION "1 configurations, [0-9]+ operator rows checked: ok" TIMEOUT 600)
add_test(NAME "step: list models" COMMAND bench_step --list-models)
set_tests_properties("step: list models" PROPERTIES PASS_REGULAR_EXPRESSION "16 models")
# The progress line names a memory-bound operator once (it said "cross_entropy fwd  cross_entropy
# fwd 16x1024 fp32").
add_test(NAME "step: the progress line names each operator once"
  COMMAND bench_step --model tiny --seq-len 16 --backend cpu --max-time 0.01
          --report-dir-path ${CMAKE_CURRENT_BINARY_DIR}/step_progress_line)
set_tests_properties("step: the progress line names each operator once" PROPERTIES
  PASS_REGULAR_EXPRESSION "\\] cross_entropy fwd 16x1024 fp32 "
  FAIL_REGULAR_EXPRESSION "cross_entropy fwd +cross_entropy fwd")

# Issue 27: PyTorch eager's kernels beside the fused plan; the part each operator counts in
# (eager attention's GEMMs and copies as attention) recomputed from the rows.
add_test(NAME "step: a tiny model's eager and fused plans side by side, figures recomputed"
  COMMAND ${CHECK_STEP} ${CMAKE_CURRENT_BINARY_DIR}/step_eager --rows 2 -- --model tiny --seq-len 64
          --kernels eager,fused --threads 1 --backend cpu ${STEP_QUICK})
set_tests_properties("step: a tiny model's eager and fused plans side by side, figures recomputed"
  PROPERTIES PASS_REGULAR_EXPRESSION
  "what fusion buys: tiny.*attention .*optimizer .*step .*2 configurations, [0-9]+ operator rows checked: ok")

# The calibrated run's operator rows: every captured GEMM's time is its shape's in-job average in
# the capture files (its total over its timed calls; the peer empties the capture after its warm-up) (times the entries of a per-head batched GEMM), the figures recomputed.
add_test(NAME "step: times calibrated from a real PyTorch step's capture match the capture files"
  COMMAND ${CHECK_STEP} ${CMAKE_CURRENT_BINARY_DIR}/step_calibrated -- --model-config-path
          ${PROJECT_SOURCE_DIR}/bench/peers/step_models.json --model llama-cpu-xs --seq-len 256 --kernels eager
          --backend cpu --dtype fp32 --capture-path ${CMAKE_CURRENT_BINARY_DIR}/step_vs_torch/capture-llama-cpu-xs-256
          --from-reports ${CMAKE_CURRENT_BINARY_DIR}/step_vs_torch/llama-cpu-xs-256)
set_tests_properties("step: times calibrated from a real PyTorch step's capture match the capture files"
  PROPERTIES FIXTURES_REQUIRED torch_step_capture LABELS timing PASS_REGULAR_EXPRESSION "1 configurations, [0-9]+ operator rows checked: ok")

# (Label preload, as the capture they read: the sanitizer build's library cannot be preloaded
# into Python, so the fixture that records the capture runs on the normal build only.)
# The job's times cover what the capture holds (its GEMMs here; the eager plan's memory-bound
# operators are isolated times): bench_step says how many of the step's operators they are.
add_test(NAME "step: a calibrated run says how many of the step's operators the job's capture times"
  COMMAND $<TARGET_FILE:bench_step> --model-config-path ${PROJECT_SOURCE_DIR}/bench/peers/step_models.json
          --model llama-cpu-xs --seq-len 256 --kernels eager --backend cpu --dtype fp32
          --capture-path ${CMAKE_CURRENT_BINARY_DIR}/step_vs_torch/capture-llama-cpu-xs-256
          --from-reports ${CMAKE_CURRENT_BINARY_DIR}/step_vs_torch/llama-cpu-xs-256
          --report-dir-path ${CMAKE_CURRENT_BINARY_DIR}/step_coverage)
set_tests_properties("step: a calibrated run says how many of the step's operators the job's capture times"
  PROPERTIES FIXTURES_REQUIRED torch_step_capture LABELS preload PASS_REGULAR_EXPRESSION
  "times from the job \\(--capture-path [^)]*capture-llama-cpu-xs-256\\): [1-9][0-9]* of the step's [0-9]+ operators, each its in-job average")

# The same capture against a step of another sequence length: none of its timed shapes is one of
# the step's, and bench_step says that nothing is calibrated (even with --quiet).
add_test(NAME "step: a capture none of whose timed shapes is the step's calibrates nothing, and says so"
  COMMAND $<TARGET_FILE:bench_step> --model-config-path ${PROJECT_SOURCE_DIR}/bench/peers/step_models.json
          --model llama-cpu-xs --seq-len 128 --kernels eager --backend cpu --dtype fp32 ${STEP_QUICK}
          --capture-path ${CMAKE_CURRENT_BINARY_DIR}/step_vs_torch/capture-llama-cpu-xs-256
          --report-dir-path ${CMAKE_CURRENT_BINARY_DIR}/step_coverage_none)
set_tests_properties("step: a capture none of whose timed shapes is the step's calibrates nothing, and says so"
  PROPERTIES FIXTURES_REQUIRED torch_step_capture LABELS preload PASS_REGULAR_EXPRESSION
  "note: --capture-path [^:]*capture-llama-cpu-xs-256: none of its [1-9][0-9]* timed shapes is one of the step's [0-9]+ operators .*nothing is calibrated")

# A --trace-path or --from-reports that is not there fails before the report folder is made:
# one error line, exit 2, and no folder left behind (it used to hold environment.json).
add_test(NAME "step bad input: a missing --trace-path or --from-reports leaves no report folder"
  COMMAND bash -c "rm -rf \"$2\"; \"$1\" --model tiny --trace-path \"$2/no_traces\" --report-dir-path \"$2/r1\"; a=$?; \"$1\" --model tiny --from-reports \"$2/no_reports\" --report-dir-path \"$2/r2\"; b=$?; echo \"exit=$a,$b\"; ls \"$2\" 2>/dev/null | sed 's/^/left: /'" step_no_folder
          $<TARGET_FILE:bench_step> ${CMAKE_CURRENT_BINARY_DIR}/step_no_folder)
set_tests_properties("step bad input: a missing --trace-path or --from-reports leaves no report folder"
  PROPERTIES PASS_REGULAR_EXPRESSION
  "error: --trace-path [^\n]*/no_traces: no such file or folder\nerror: --from-reports [^\n]*/no_reports: no such folder\nexit=2,2"
  FAIL_REGULAR_EXPRESSION "left: ")

# An operator no report holds is named with the command that measures it: every command bench_step
# names for tiny's eager step (GEMMs, the eager kernels, fused attention's shapes-file entry, the
# gradient accumulation add) is run, and bench_step over their reports then finds every time.
add_test(NAME "step: each operator missing from --from-reports is named with a command that measures exactly its row"
  COMMAND ${OPBENCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_measure_hints.py
          ${CMAKE_CURRENT_BINARY_DIR}/step_measure_hints ${CMAKE_BINARY_DIR}
          -- --model tiny --seq-len 64 --dtype fp32 --grad-accum 2 --kernels eager --attention-kernels fused)
set_tests_properties("step: each operator missing from --from-reports is named with a command that measures exactly its row"
  PROPERTIES PASS_REGULAR_EXPRESSION "hints-ok [1-9][0-9]*")
# The same for an MoE model's eager step (the router's softmax, the permute and unpermute as
# embeddings over the tokens, the experts' kernels one call each): every memory-bound, GEMM and
# attention row is measured exactly by the command named; the 9 expert GEMM operators (gate, up
# and down, three passes), which no sweep reproduces, are left to bench_step --measure.
add_test(NAME "step: an MoE model's eager operators missing from --from-reports are named with the commands that measure them"
  COMMAND ${OPBENCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_measure_hints.py
          ${CMAKE_CURRENT_BINARY_DIR}/step_measure_hints_moe ${CMAKE_BINARY_DIR}
          -- --model-config-path ${PROJECT_SOURCE_DIR}/bench/peers/step_models.json --model moe-cpu-xs
          --seq-len 32 --dtype fp32 --grad-accum 2 --kernels eager --attention-kernels fused)
set_tests_properties("step: an MoE model's eager operators missing from --from-reports are named with the commands that measure them"
  PROPERTIES PASS_REGULAR_EXPRESSION "hints-ok [1-9][0-9]*, 9 for bench_step --measure")

# An MoE model's memory-bound operators (the router's softmax, the permute and unpermute, the
# routed and shared experts' SwiGLU) are rows of bench_memops --model, which bench_step's fused
# plan finds: over that report only its GEMMs (24 of linears, 6 of the experts) and attention's 2
# are left without a time, and no memory-bound operator is named.
add_test(NAME "step: an MoE model's memory-bound operators from bench_memops --model, found by --from-reports"
  COMMAND sh -c "rm -rf step_moe_memops && $<TARGET_FILE:bench_memops> --model-config-path \
    ${PROJECT_SOURCE_DIR}/bench/peers/step_models.json --model moe-cpu-xs --seq-len 64 --dtype fp32 \
    --backend cpu --max-time 0.01 --min-time 0 --min-samples 1 --peak-bw 20 --quiet \
    --report-dir-path step_moe_memops/memops && $<TARGET_FILE:bench_step> --model-config-path \
    ${PROJECT_SOURCE_DIR}/bench/peers/step_models.json --model moe-cpu-xs --seq-len 64 --dtype fp32 \
    --backend cpu --from-reports step_moe_memops/memops --report-dir-path step_moe_memops/step"
  WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties("step: an MoE model's memory-bound operators from bench_memops --model, found by --from-reports"
  PROPERTIES PASS_REGULAR_EXPRESSION "no step time: 32 operators without a time"
  FAIL_REGULAR_EXPRESSION "\n    (moe |swiglu|softmax|embedding|rmsnorm|add |cross_entropy|rope|adamw)")

# Ctrl-C while bench_step measures (issue 27 item 6): exit 130, every operator measured before it
# kept in its family's report, the step rows written from the times there are (micro-batch 1
# whole from an earlier run's reports, micro-batch 2 empty with a note saying it was interrupted).
add_test(NAME "reliability: SIGINT while bench_step measures keeps the measured rows, writes the step rows it can, exits 130"
  COMMAND ${OPBENCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_interrupt_step.py $<TARGET_FILE:bench_step>
          ${CMAKE_CURRENT_BINARY_DIR}/interrupt_step)

# Memory per rank (issue 27 item 4): a dry run writes step.csv with the memory columns and no
# times. The tiny model in fp32 on a 24 GiB machine fits (two recompute modes, two rows); 70B with
# ddp over 8 H100 80GB does not (hardware.json's capacity comes with the reports' device, not a
# dry run: --memory-capacity-gib 80), and the console says so; --fits-only then leaves nothing.
set(CHECK_STEP_MEMORY ${OPBENCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_step_memory.py
    $<TARGET_FILE:bench_step>)
add_test(NAME "step: a dry run writes the configurations' memory columns, fits"
  COMMAND ${CHECK_STEP_MEMORY} ${CMAKE_CURRENT_BINARY_DIR}/step_memory_fits --rows 2 --fits true
          -- --model tiny --seq-len 64 --dtype fp32 --kernels eager --recompute none,full
          --memory-capacity-gib 24)
add_test(NAME "step: Llama-3.1 70B with ddp on 8 x 80 GiB does not fit, and the row says so"
  COMMAND ${CHECK_STEP_MEMORY} ${CMAKE_CURRENT_BINARY_DIR}/step_memory_70b --rows 1 --fits false
          -- --model llama3.1-70b --seq-len 8192 --dp 8 --memory-capacity-gib 80)
add_test(NAME "step: a dry run without a capacity leaves fits empty"
  COMMAND ${CHECK_STEP_MEMORY} ${CMAKE_CURRENT_BINARY_DIR}/step_memory_unknown --rows 1 --fits empty
          -- --model tiny --seq-len 64)
add_test(NAME "step: --fits-only counts the configurations it leaves out"
  COMMAND bench_step --model llama3.1-70b --seq-len 8192 --dp 8 --tp 1,8 --pp 1,4 --grad-accum 8
          --memory-capacity-gib 80 --fits-only --dry-run)
set_tests_properties("step: --fits-only counts the configurations it leaves out" PROPERTIES
  PASS_REGULAR_EXPRESSION "--fits-only: 3 configurations left out: peak memory above 80.0 GiB \\(--memory-capacity-gib\\)")
add_test(NAME "step: --fits-only in a dry run needs --memory-capacity-gib"
  COMMAND ${EXPECT_ERROR} --contains "--fits-only: the device's memory is unknown" --
          $<TARGET_FILE:bench_step> --model tiny --fits-only --dry-run)
# --etp 1 at tp 2 (MoE Parallel Folding): the config line says it, each expert whole (28672
# gate/up columns) on the rank's own 512 tokens routed (2 ranks x 512 x top-2 / 8 = 256 an
# expert), no expert-tensor-parallel gathers.
add_test(NAME "step: --etp 1 keeps each expert whole on the tokens its rank routes, and no etp gathers"
  COMMAND bench_step --model mixtral-8x7b --tp 2 --ep 2 --dp 2 --etp 1 --seq-len 1024 --dry-run)
set_tests_properties("step: --etp 1 keeps each expert whole on the tokens its rank routes, and no etp gathers" PROPERTIES
  PASS_REGULAR_EXPRESSION "world 4 = tp 2 x pp 1 x dp 2, ep 2, etp 1, .*moe_expert_gate_up fprop[^\n]* 4 experts n28672 k4096 tokens 256\\.\\.256"
  FAIL_REGULAR_EXPRESSION "etp all_gather")
# --cp 2: the config line says it; a rank's attention is one causal call over its 4096 tokens and
# one unmasked call against the other rank's earlier 2048; K and V (8 MiB) around the ring of 2;
# the gradients reduced over dp x cp = 4 ranks.
add_test(NAME "step: --cp splits the sequence: the rank's own causal attention, a ring step's block, K and V around the ring"
  COMMAND bench_step --model llama3.1-8b --tp 2 --cp 2 --dp 2 --seq-len 8192 --dry-run)
set_tests_properties("step: --cp splits the sequence: the rank's own causal attention, a ring step's block, K and V around the ring" PROPERTIES
  PASS_REGULAR_EXPRESSION "world 8 = tp 2 x cp 2 x pp 1 x dp 2, .*attention fwd \\(cp: the rank's own chunks\\) +32 [^\n]* s4096/4096 [^\n]* causal bf16\n.*attention fwd \\(cp: a ring step's block\\) +32 [^\n]* s4096/2048 [^\n]*d128/128 bf16\n.*cp send_recv \\(K and V around the ring\\) +32 [^\n]* send_recv 8388608 B over 2 ranks bf16.*dp all_reduce \\(gradient buckets\\)[^\n]* over 4 ranks fp32")
# bench_attention --model --cp lists one rank's calls, the ones bench_step --cp looks for: a
# CPU run of them leaves no attention operator without a time (the GEMMs and the rest are).
add_test(NAME "step: bench_attention --model --cp measures the attention calls bench_step --cp finds in --from-reports"
  COMMAND bash -c "rm -rf \"$0\" && '$<TARGET_FILE:bench_attention>' --model tiny --cp 2 --backend cpu --max-time 0.05 --quiet --report-dir-path \"$0\" \
                   && '$<TARGET_FILE:bench_step>' --model tiny --cp 2 --dtype fp32 --from-reports \"$0\" --report-dir-path \"$0/step\"; echo exit=$?"
          ${CMAKE_CURRENT_BINARY_DIR}/step_cp_attention)
set_tests_properties("step: bench_attention --model --cp measures the attention calls bench_step --cp finds in --from-reports" PROPERTIES
  PASS_REGULAR_EXPRESSION "operators without a time.*exit=1"
  FAIL_REGULAR_EXPRESSION "attention (fwd|bwd) \\(cp")
# --moe-dispatcher allgather (Megatron-Core's default): the config line says it; each rank's 512
# tokens gathered over etp x ep = 4 ranks (4 x 512 x 4096 x 2 B), no all-to-all, no etp gathers.
add_test(NAME "step: --moe-dispatcher allgather gathers every token over etp x ep, no all-to-all"
  COMMAND bench_step --model mixtral-8x7b --tp 2 --ep 2 --dp 2 --seq-len 1024 --moe-dispatcher allgather --dry-run)
set_tests_properties("step: --moe-dispatcher allgather gathers every token over etp x ep, no all-to-all" PROPERTIES
  PASS_REGULAR_EXPRESSION "world 4 = tp 2 x pp 1 x dp 2, ep 2, allgather dispatcher, .*etp\\*ep all_gather \\(tokens of every rank holding experts\\) +32 [^\n]* all_gather 16777216 B over 4 ranks bf16"
  FAIL_REGULAR_EXPRESSION "all_to_all|etp all_gather")
