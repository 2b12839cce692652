# Finds NCCL (nccl.h, libnccl) next to the CUDA toolkit or under NCCL_ROOT; defines NCCL::nccl.
include(${CMAKE_CURRENT_LIST_DIR}/FindCudaLibrary.cmake)
find_cuda_library(NCCL nccl.h nccl nccl.h NCCL_MAJOR NCCL_MINOR NCCL_PATCH NCCL::nccl)
