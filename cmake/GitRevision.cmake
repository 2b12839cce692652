# Records the git revision the binaries were built from (shown in every run's environment).
find_package(Git QUIET)
set(OPBENCH_GIT_REVISION "unknown")
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} describe --always --dirty --abbrev=12
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} OUTPUT_VARIABLE _rev OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE _rc ERROR_QUIET)
  if(_rc EQUAL 0 AND _rev)
    set(OPBENCH_GIT_REVISION "${_rev}")
  endif()
endif()
