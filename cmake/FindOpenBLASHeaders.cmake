# Finds OpenBLAS's cblas.h (Debian keeps it under a per-variant directory) and
# defines OpenBLAS::headers. The library itself comes from find_package(BLAS).
find_path(OpenBLASHeaders_INCLUDE_DIR cblas.h
  PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/aarch64-linux-gnu/openblas-pthread
        /usr/include/openblas /usr/include
  NO_DEFAULT_PATH)
find_path(OpenBLASHeaders_INCLUDE_DIR cblas.h)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(OpenBLASHeaders REQUIRED_VARS OpenBLASHeaders_INCLUDE_DIR)
if(OpenBLASHeaders_FOUND AND NOT TARGET OpenBLAS::headers)
  add_library(OpenBLAS::headers INTERFACE IMPORTED)
  set_target_properties(OpenBLAS::headers PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${OpenBLASHeaders_INCLUDE_DIR}")
endif()
