# The documentation: it stands on its own (no link leaves the repository or points at nothing)
# and matches the code (every report column, every script setting). Included from
# tests/integration/CMakeLists.txt, which sets OPBENCH_PYTHON.
set(CHECK_DOCS ${OPBENCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/check_docs.py)

add_test(NAME "docs: every Markdown link and repository path resolves inside the repository"
  COMMAND ${CHECK_DOCS} links --root ${PROJECT_SOURCE_DIR})
add_test(NAME "docs: every report column the sources name is documented in docs/outputs.md"
  COMMAND ${CHECK_DOCS} columns --root ${PROJECT_SOURCE_DIR})
add_test(NAME "docs: every column of freshly written reports is documented in docs/outputs.md"
  COMMAND ${CHECK_DOCS} run-columns --root ${PROJECT_SOURCE_DIR}
          --out ${CMAKE_CURRENT_BINARY_DIR}/docs_reports
          --gemm $<TARGET_FILE:bench_gemm> --attention $<TARGET_FILE:bench_attention>
          --ccl $<TARGET_FILE:bench_ccl> --fsdp $<TARGET_FILE:bench_fsdp>
          --memops $<TARGET_FILE:bench_memops> --step $<TARGET_FILE:bench_step>)
set_tests_properties("docs: every column of freshly written reports is documented in docs/outputs.md"
  PROPERTIES TIMEOUT 300)
add_test(NAME "docs: every environment variable the scripts read is documented in docs/scripts.md"
  COMMAND ${CHECK_DOCS} env --root ${PROJECT_SOURCE_DIR})

# Label docs: checks of text against the code, which the sanitizer run leaves out (the binaries
# the run-columns check starts have their paths run there by their own tests).
set_tests_properties(
  "docs: every Markdown link and repository path resolves inside the repository"
  "docs: every report column the sources name is documented in docs/outputs.md"
  "docs: every column of freshly written reports is documented in docs/outputs.md"
  "docs: every environment variable the scripts read is documented in docs/scripts.md"
  PROPERTIES LABELS docs)
