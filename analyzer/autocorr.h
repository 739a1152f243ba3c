/*
 * The autocorrelation the socket calls' period is found in (iterations.c),
 * by fast Fourier transforms: on its own so that the tests can hold it
 * against its definition.
 */
#ifndef DDL_AUTOCORR_H
#define DDL_AUTOCORR_H

#include <stddef.h>

/* The autocorrelation of X[0..N) (N a power of two, 2 at least), its mean
 * taken off: at each lag L < N the sum of the products L apart over their
 * count, over the same at lag 0, into R[0..N) (so that a lag of half the
 * series counts as much as a short one); R all 0 when X less its mean is
 * all 0. 0, or -1 without memory. */
int ddl_autocorr(const double *x, size_t n, double *r);

#endif
