/*
 * gpu_knobs.h - the GPU engine's tuning check for callers that only need to
 * know whether a tuning string is one the engine accepts (the daemon's
 * admission), without the device API of gpu.h. Plain C, in lcn_gpuref, so
 * every build has it, with CUDA or without.
 */
#ifndef LCN_GPU_KNOBS_H
#define LCN_GPU_KNOBS_H

#include <stddef.h>

/* 0 when gpu_solver_params_parse accepts tuning over the defaults, else
 * LCN_EINVAL with err naming the knob. */
int gpu_tuning_check(const char *tuning, char *err, size_t errlen);

#endif
