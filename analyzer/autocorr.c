/*
 * The autocorrelation of a series (autocorr.h), by fast Fourier transforms
 * of radix 2.
 */
#include <math.h>
#include <stdlib.h>

#include "autocorr.h"

/* In-place radix-2 FFT of the N (a power of two) values RE + i IM; INV:
 * the inverse, unscaled. */
static void ddl_fft(double *re, double *im, size_t n, int inv)
{
	for (size_t i = 1, j = 0; i < n; i++) {
		size_t bit = n >> 1;
		for (; j & bit; bit >>= 1)
			j ^= bit;
		j ^= bit;
		if (i < j) {
			double tr = re[i], ti = im[i];
			re[i] = re[j];
			im[i] = im[j];
			re[j] = tr;
			im[j] = ti;
		}
	}
	for (size_t len = 2; len <= n; len <<= 1) {
		double ang = (inv ? 2 : -2) * 3.14159265358979323846 / (double)len;
		double wr = cos(ang), wi = sin(ang);
		for (size_t i = 0; i < n; i += len) {
			double cr = 1, ci = 0;
			for (size_t k = 0; k < len / 2; k++) {
				size_t u = i + k, v = u + len / 2;
				double xr = re[v] * cr - im[v] * ci, xi = re[v] * ci + im[v] * cr;
				re[v] = re[u] - xr;
				im[v] = im[u] - xi;
				re[u] += xr;
				im[u] += xi;
				double nr = cr * wr - ci * wi;
				ci = cr * wi + ci * wr;
				cr = nr;
			}
		}
	}
}

/* e^(SIGN 2 pi i K / N) into *C + i *S, asked for K = 0, 1, 2 ... in
 * turn: the one before times the step (STEP, set at K = 0), and from cos
 * and sin anew every 64, so that the products' error stays small. */
static void ddl_twiddle(size_t k, size_t n, double sign, double step[2], double *c, double *s)
{
	if (k % 64 == 0) {
		double ang = sign * 2 * 3.14159265358979323846 * (double)k / (double)n;
		*c = cos(ang);
		*s = sin(ang);
		if (k == 0) {
			step[0] = cos(sign * 2 * 3.14159265358979323846 / (double)n);
			step[1] = sin(sign * 2 * 3.14159265358979323846 / (double)n);
		}
		return;
	}
	double nc = *c * step[0] - *s * step[1];
	*s = *c * step[1] + *s * step[0];
	*c = nc;
}

/* As the inverse transform of the power spectrum of the series and N
 * zeros after it (no wrap-around), each transform of those 2N real values
 * made as one of N complex ones (the even values the real parts, the odd
 * the imaginary), half the work of transforming them as 2N complex values. */
int ddl_autocorr(const double *x, size_t n, double *r)
{
	double *zr = calloc(4 * n, sizeof *zr), *zi = zr ? zr + n : NULL, *pw = zr ? zr + 2 * n : NULL;
	if (!zr)
		return -1;
	double m = 0;
	for (size_t i = 0; i < n; i++)
		m += x[i];
	m /= (double)n;
	for (size_t k = 0; k < n / 2; k++) { /* the 2N values: X's, then zeros */
		zr[k] = x[2 * k] - m;
		zi[k] = x[2 * k + 1] - m;
	}
	ddl_fft(zr, zi, n, 0);
	/* the spectrum at K of 2N points from Z's at K and N - K: the even
	 * values' part E and the odd values' O, turned by e^(-2 pi i K / 2N) */
	double step[2] = {1, 0}, c = 1, sn = 0;
	for (size_t k = 0; k <= n; k++) {
		ddl_twiddle(k, 2 * n, -1, step, &c, &sn);
		size_t a = k % n, b = (n - k) % n;
		double er = (zr[a] + zr[b]) / 2, ei = (zi[a] - zi[b]) / 2;
		double odr = (zi[a] + zi[b]) / 2, odi = (zr[b] - zr[a]) / 2;
		double xr = er + c * odr - sn * odi, xi = ei + c * odi + sn * odr;
		pw[k] = xr * xr + xi * xi;
	}
	for (size_t k = 1; k < n; k++)
		pw[2 * n - k] = pw[k]; /* a real series' power is even */
	/* back: the even lags from the sum of the halves, the odd from their
	 * difference turned by e^(2 pi i K / 2N), as one transform */
	for (size_t k = 0; k < n; k++) {
		ddl_twiddle(k, 2 * n, 1, step, &c, &sn);
		double a = pw[k] + pw[k + n], d = pw[k] - pw[k + n];
		zr[k] = a - d * sn;
		zi[k] = d * c;
	}
	ddl_fft(zr, zi, n, 1);
	double r0 = zr[0];
	for (size_t l = 0; l < n; l++) {
		double v = l % 2 ? zi[l / 2] : zr[l / 2];
		r[l] = r0 > 0 ? v / r0 * (double)n / (double)(n - l) : 0;
	}
	free(zr);
	return 0;
}
