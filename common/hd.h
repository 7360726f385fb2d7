/*
 * hd.h - one definition, two compilers.
 *
 * Small pure functions shared by the C engine and the CUDA kernels are
 * written once as `LCN_HD static inline`. Under nvcc LCN_HD expands to
 * __host__ __device__; in plain C it expands to nothing.
 */
#ifndef LCN_HD_H
#define LCN_HD_H

#ifdef __CUDACC__
#define LCN_HD __host__ __device__
#else
#define LCN_HD
#endif

#endif
