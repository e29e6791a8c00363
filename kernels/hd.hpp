// TP_HD marks functions compiled for both host and device (CUDA); empty elsewhere.
//   struct Add { TP_HD float operator()(float a, float b) const { return a + b; } };
//   #include "kernels/hd.hpp" before any shared header that uses it
#pragma once

#if defined(__CUDACC__)
#define TP_HD __host__ __device__
#else
#define TP_HD
#endif
