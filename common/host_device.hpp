#pragma once
// Marks functions that both the CUDA kernels and the host tests run: __host__ __device__ under
// nvcc, plain functions elsewhere. A kernel's per-element logic lives in such functions so a host
// test can run the very same code against the CPU providers on a machine without a GPU.
#if defined(__CUDACC__)
#define OPBENCH_HD __host__ __device__
// Templates whose functors are device-only in kernels and host-only in tests: nvcc checks each
// instantiation where it is used instead of warning about the other side.
#define OPBENCH_HD_TEMPLATE _Pragma("nv_exec_check_disable")
#else
#define OPBENCH_HD
#define OPBENCH_HD_TEMPLATE
#endif
