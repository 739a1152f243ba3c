/*
 * The one reading of a link rate, for every option that takes one:
 * ddlprof-report --bw, ddlprof-sim --bw, ddlprof --perturb-net rate=
 * (checked by the launcher, applied by the preload library from
 * DDLPROF_PERTURB_NET) and the report's reading of that setting from a
 * trace. A static inline function on libc only, since the preload library
 * may depend on nothing else. Internal to ddlprof; not an API.
 *
 * A rate is a decimal number and a unit, in bits per second:
 *
 *     25gbit  400mbit  1.5Tbit/s  10G  100M  2000kbps  10Gb/s  25
 *
 * The unit's prefix k, m, g or t (any case: 10^3, 10^6, 10^9, 10^12),
 * then optionally bit, bits or a lower-case b, then optionally /s or ps.
 * A bare number is Gbit/s. An upper-case B is bytes, which no option
 * takes: "25GB" is refused rather than read as 25 Gbit/s, eight times
 * less than meant. Accepted: 1 kbit/s to 100 Tbit/s.
 */
#ifndef DDLPROF_RATE_H
#define DDLPROF_RATE_H

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DDL_RATE_MIN_BPS 1e3  /* 1 kbit/s */
#define DDL_RATE_MAX_BPS 1e14 /* 100 Tbit/s */

/*
 * Reads the N bytes at S as a rate into *BPS (bits per second). Returns 0,
 * or -1 with why in WHY (WHYLEN bytes; it names the value, the caller the
 * option) and *BPS untouched.
 */
static inline int ddl_rate_parse(const char *s, size_t n, double *bps, char *why, size_t whylen)
{
	char buf[64];
	if (n == 0 || n >= sizeof buf) {
		snprintf(why, whylen, "%s: give a number with a unit, such as 25gbit, 400mbit or 10G",
		         n ? "too long" : "no rate");
		return -1;
	}
	memcpy(buf, s, n);
	buf[n] = 0;
	/* the number by hand: strtod would take "nan", "inf", hex and blanks */
	size_t k = 0, digits = 0;
	while (isdigit((unsigned char)buf[k]))
		k++, digits++;
	if (buf[k] == '.')
		for (k++; isdigit((unsigned char)buf[k]); k++)
			digits++;
	if (digits && (buf[k] == 'e' || buf[k] == 'E')) {
		size_t e = k + 1 + (buf[k + 1] == '+' || buf[k + 1] == '-');
		if (isdigit((unsigned char)buf[e])) {
			for (k = e; isdigit((unsigned char)buf[k]);)
				k++;
		}
	}
	if (!digits) {
		snprintf(why, whylen, "'%s' is %s", buf,
		         buf[0] == '-' ? "negative: a rate is above 0"
		                       : "not a rate: give a number with a unit, such as 25gbit, "
		                         "400mbit or 10G");
		return -1;
	}
	char num[64];
	memcpy(num, buf, k);
	num[k] = 0;
	double v = strtod(num, NULL), mult = 1e9; /* a bare number: Gbit/s */
	const char *u = buf + k;
	static const char prefixes[] = "kmgt";
	const char *p = *u ? strchr(prefixes, tolower((unsigned char)*u)) : NULL;
	int have_prefix = p != NULL, have_bits = 0;
	if (p) {
		mult = 1;
		for (const char *q = prefixes; q <= p; q++)
			mult *= 1e3;
		u++;
	}
	if (*u == 'B' && strncasecmp(u, "bit", 3)) {
		char lo[2] = {have_prefix ? (char)tolower((unsigned char)u[-1]) : 0, 0};
		char up[2] = {(char)toupper((unsigned char)lo[0]), 0};
		snprintf(why, whylen, "'%s': B is bytes; give the rate in bits (%.6g%sbit for %.6g %sB/s)",
		         buf, v * 8, lo, v, up);
		return -1;
	}
	size_t body = !strncasecmp(u, "bits", 4) ? 4 : !strncasecmp(u, "bit", 3) ? 3 : *u == 'b';
	u += body;
	have_bits = body > 0;
	if (have_bits && !have_prefix)
		mult = 1;
	if ((have_prefix || have_bits) && (!strcasecmp(u, "/s") || !strcasecmp(u, "ps")))
		u += 2;
	if (*u) {
		snprintf(why, whylen, "'%s': unknown unit '%s' (use bit, kbit, mbit, gbit or tbit, or "
		         "K, M, G or T for kbit/s to Tbit/s)", buf, buf + k);
		return -1;
	}
	double r = v * mult;
	if (!(r > 0)) {
		snprintf(why, whylen, "'%s': a rate is above 0", buf);
		return -1;
	}
	if (r < DDL_RATE_MIN_BPS || r > DDL_RATE_MAX_BPS) {
		snprintf(why, whylen, "'%s' is %s (%g bit/s); rates from 1kbit to 100tbit are taken", buf,
		         r < DDL_RATE_MIN_BPS ? "below 1 kbit/s" : "above 100 Tbit/s", r);
		return -1;
	}
	*bps = r;
	return 0;
}

/*
 * ddlprof --perturb-net's SPEC (DDLPROF_PERTURB_NET): delay=USEC, a whole
 * number of microseconds in 1..10000000 added to every send, into *DELAY_US
 * (*BPS 0); or rate=RATE, into *BPS (*DELAY_US 0). Returns 0, or -1 with
 * why in WHY.
 */
static inline int ddl_perturb_spec_parse(const char *spec, long *delay_us, double *bps, char *why,
                                         size_t whylen)
{
	*delay_us = 0;
	*bps = 0;
	if (!strncmp(spec, "rate=", 5))
		return ddl_rate_parse(spec + 5, strlen(spec + 5), bps, why, whylen);
	if (strncmp(spec, "delay=", 6)) {
		snprintf(why, whylen, "give delay=USEC or rate=RATE (e.g. rate=100mbit)");
		return -1;
	}
	char *end;
	long us = strtol(spec + 6, &end, 10);
	if (*end || end == spec + 6 || !isdigit((unsigned char)spec[6]) || us < 1 || us > 10000000) {
		snprintf(why, whylen, "delay= takes whole microseconds in 1..10000000");
		return -1;
	}
	*delay_us = us;
	return 0;
}

#endif
