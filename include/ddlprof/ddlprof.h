/*
 * The ddlprof marker API: name ranges of a program's own work (a training
 * step, a data load) so ddlprof-report can cut the run into iterations.
 *
 * Nothing to link: the functions live in libddlprof.so, which ddlprof
 * preloads. They are declared weak, so the same program runs without the
 * profiler; test the function's address before calling:
 *
 *     if (ddlprof_range_push) ddlprof_range_push("step");
 *     ...
 *     if (ddlprof_range_pop) ddlprof_range_pop();
 *
 * From Python, through ctypes (the symbols are found only under ddlprof):
 *
 *     lib = ctypes.CDLL(None)
 *     push = getattr(lib, "ddlprof_range_push", None)   # None without ddlprof
 *     if push: push(b"step")
 *
 * Ranges nest per thread; pop closes the innermost open range of the
 * calling thread. Names are copied; any string up to 255 bytes.
 *
 * Programs that already use NVTX (nvtxRangePushA and the like, or
 * torch.cuda.nvtx in a CUDA build of PyTorch) need neither this header nor
 * a change: under ddlprof their ranges and marks are recorded as these same
 * events (ddlprof(1), "NVTX ranges").
 */
#ifndef DDLPROF_DDLPROF_H
#define DDLPROF_DDLPROF_H

#ifdef __cplusplus
extern "C" {
#endif

void ddlprof_range_push(const char *name) __attribute__((weak));
void ddlprof_range_pop(void) __attribute__((weak));
void ddlprof_mark(const char *name) __attribute__((weak));

#ifdef __cplusplus
}
#endif

#endif
