# find_cuda_library(PKG HEADER LIBRARY VERSION_HEADER MAJOR MINOR PATCH TARGET): one NVIDIA library
# (header and shared library) next to the CUDA toolkit or under <PKG>_ROOT, its version read from
# the #defines MAJOR, MINOR and PATCH of VERSION_HEADER, and the imported target TARGET. Sets
# <PKG>_FOUND, <PKG>_VERSION, <PKG>_INCLUDE_DIR and <PKG>_LIBRARY as a find module does; the
# Find<PKG>.cmake modules call it.
include(FindPackageHandleStandardArgs)
macro(find_cuda_library pkg header library version_header major minor patch target)
  find_path(${pkg}_INCLUDE_DIR ${header}
    HINTS $ENV{${pkg}_ROOT} ${${pkg}_ROOT} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
  find_library(${pkg}_LIBRARY ${library}
    HINTS $ENV{${pkg}_ROOT} ${${pkg}_ROOT} ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64)
  if(${pkg}_INCLUDE_DIR AND EXISTS "${${pkg}_INCLUDE_DIR}/${version_header}")
    file(STRINGS "${${pkg}_INCLUDE_DIR}/${version_header}" _defines REGEX "#define (${major}|${minor}|${patch}) ")
    string(REGEX REPLACE ".*${major} ([0-9]+).*" "\\1" _maj "${_defines}")
    string(REGEX REPLACE ".*${minor} ([0-9]+).*" "\\1" _min "${_defines}")
    string(REGEX REPLACE ".*${patch} ([0-9]+).*" "\\1" _pat "${_defines}")
    set(${pkg}_VERSION "${_maj}.${_min}.${_pat}")
  endif()
  find_package_handle_standard_args(${pkg} REQUIRED_VARS ${pkg}_LIBRARY ${pkg}_INCLUDE_DIR VERSION_VAR ${pkg}_VERSION)
  if(${pkg}_FOUND AND NOT TARGET ${target})
    add_library(${target} UNKNOWN IMPORTED)
    set_target_properties(${target} PROPERTIES
      IMPORTED_LOCATION "${${pkg}_LIBRARY}" INTERFACE_INCLUDE_DIRECTORIES "${${pkg}_INCLUDE_DIR}")
  endif()
endmacro()
