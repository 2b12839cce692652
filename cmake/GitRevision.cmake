# Records the git revision the binaries are built from, at build time (not configure time), so
# that every report's environment names the commit that produced it. The header is rewritten only
# when the revision changes, so an unchanged tree does not rebuild.
add_custom_target(opbench_git_revision ALL
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
          -DOUTPUT=${CMAKE_BINARY_DIR}/generated/opbench_git_revision.h
          -P ${CMAKE_SOURCE_DIR}/cmake/WriteGitRevision.cmake
  BYPRODUCTS ${CMAKE_BINARY_DIR}/generated/opbench_git_revision.h
  COMMENT "Recording the git revision")
