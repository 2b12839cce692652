# Finds cuDNN 9 (cudnn.h, libcudnn) next to the CUDA toolkit or under CUDNN_ROOT; defines CUDNN::cudnn.
include(${CMAKE_CURRENT_LIST_DIR}/FindCudaLibrary.cmake)
find_cuda_library(CUDNN cudnn.h cudnn cudnn_version.h CUDNN_MAJOR CUDNN_MINOR CUDNN_PATCHLEVEL CUDNN::cudnn)
