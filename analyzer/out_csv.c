/*
 * --format csv: one row per process and analysed iteration, with where that
 * iteration's time went (DESIGN.md section 7), for spreadsheets and
 * notebooks. A header line names the columns; fields are RFC 4180: a host
 * name holding a comma, a quote or a line break is quoted, its quotes
 * doubled; lines end in a newline alone, as Unix tools expect. Times are
 * seconds, with nine decimals. The last column, incomplete, is 1 on the
 * rows of a report that memory ran out for (the process's, or the run's:
 * every row), so that a table read without the exit status still says so.
 */
#include <string.h>

#include "report.h"

/* S as one RFC 4180 field. */
static void ddl_csv_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

int ddl_out_csv(const struct ddl_report *r, FILE *f)
{
	fputs("rank,host,pid,iteration,start_s,duration_s", f);
#define DDL_X_HEAD(n) fputs("," #n "_s", f);
	DDL_PARTS(DDL_X_HEAD)
#undef DDL_X_HEAD
	fputs(",incomplete\n", f);
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		for (size_t k = 0; k < p->niter; k++) {
			/* the means of the rank stand in only when memory ran out */
			const struct ddl_parts *pp = p->iter_parts ? &p->iter_parts[k] : &p->per_iter;
			fprintf(f, "%d,", p->rank);
			ddl_csv_field(f, p->host);
			fprintf(f, ",%u,%zu,%.9f,%.9f", p->pid, k + (size_t)p->warmup_skipped,
			        (double)(p->iter[k].start_ns - r->start_real_ns) / 1e9, p->iter_s[k]);
#define DDL_X_COL(n) fprintf(f, ",%.9f", pp->n);
			DDL_PARTS(DDL_X_COL)
#undef DDL_X_COL
			fprintf(f, ",%d\n", r->incomplete || p->incomplete);
		}
	}
	return ferror(f) ? -1 : 0;
}
