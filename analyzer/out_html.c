/*
 * --format html: the report as one self-contained HTML page (inline CSS and
 * SVG; no scripts, fonts or links to fetch), to attach to a ticket or open
 * from a CI artifact. It shows the run summary, the iteration breakdown per
 * rank with a stacked bar each, the job's shares, the network-sensitivity
 * prediction, a timeline of one representative iteration per rank, then the
 * communicators, GPU work, top kernels and network tables of the text
 * report.
 *
 * Every piece of text from a trace (host, thread, kernel and marker names,
 * addresses, command lines) goes through one escaper: markup characters
 * become entities and bytes that are not UTF-8 become U+FFFD, so a hostile
 * name shows as text and never as markup.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report.h"

/* Memory ran out while this page was written: it lacks something, and
 * ddl_out_html fails (ENOMEM). */
static int ddl_html_nomem;

/* The five parts' colours, in DDL_PARTS order, and their labels. */
static const char *const ddl_part_color[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#bab0ac"};
static const char *const ddl_part_label[] = {"compute", "data stall", "interconnect stall",
                                             "network stall", "idle"};
/* Device intervals by DDL_DEV_*: kernels, collectives inside and across machines, copies. */
static const char *const ddl_dev_color[] = {"#4e79a7", "#59a14f", "#e15759", "#b07aa1"};
static const char *const ddl_dev_label[] = {"kernel (compute)", "collective inside a machine",
                                            "collective across machines", "memory copy"};
/* Host rows of processes without device intervals. */
enum { DDL_H_REMOTE, DDL_H_LOCAL, DDL_H_SOCKWAIT, DDL_H_OTHER, DDL_H_N };
static const char *const ddl_host_color[] = {"#e15759", "#59a14f", "#76b7b2", "#bab0ac"};
static const char *const ddl_host_label[] = {"send/receive with another host",
                                             "send/receive on this host", "wait on sockets",
                                             "other wait"};

/* S as HTML text or attribute value. */
static void ddl_h(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	while (*p) {
		size_t n = ddl_utf8_len(p);
		if (n == 0 || (*p < 0x20 && *p != '\t' && *p != '\n') || *p == 0x7f) {
			fputs("&#xfffd;", f);
			p++;
			continue;
		}
		switch (*p) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fwrite(p, 1, n, f); break;
		}
		p += n;
	}
}

/* The five parts as an array, in DDL_PARTS order. */
static void ddl_parts_v(const struct ddl_parts *p, double v[5])
{
	int k = 0;
#define DDL_X_V(n) v[k++] = p->n;
	DDL_PARTS(DDL_X_V)
#undef DDL_X_V
}

static const char *ddl_bytes(uint64_t b, char *buf, size_t n)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	int u = 0;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, n, "%" PRIu64 " B", b);
	else
		snprintf(buf, n, "%.2f %s", v, unit[u]);
	return buf;
}

static void ddl_proc_label(FILE *f, const struct ddl_report *r, const struct ddl_proc *p)
{
	char what[64];
	if (*ddl_proc_what(r, p, what, sizeof what))
		fputs(what, f);
	else
		fprintf(f, "pid %u", p->pid);
}

static void ddl_head(const struct ddl_report *r, FILE *f)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	      "<meta name=\"generator\" content=\"ddlprof-report " DDLPROF_VERSION "\">\n<title>ddlprof: run ",
	      f);
	ddl_h(f, r->run->id);
	fputs("</title>\n<style>\n"
	      "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;"
	      "color:#1f2328;background:#fff;margin:0 auto;max-width:1240px;padding:20px 24px 40px}\n"
	      "h1{font-size:22px;margin:0 0 4px}\n"
	      "h2{font-size:17px;margin:30px 0 10px;padding-bottom:4px;border-bottom:1px solid #d8dee4}\n"
	      "h3{font-size:14px;margin:18px 0 4px}\n"
	      ".sub{color:#59636e}\n.note{color:#59636e;font-size:13px;margin:6px 0}\n"
	      ".warn{background:#fff8e6;border-left:4px solid #f28e2b;padding:6px 10px;margin:8px 0}\n"
	      "table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin:4px 0}\n"
	      "th,td{padding:4px 10px;text-align:right;border-bottom:1px solid #eaeef2;white-space:nowrap;"
	      "vertical-align:middle}\n"
	      "th{background:#f6f8fa;font-weight:600;border-bottom:1px solid #d8dee4}\n"
	      ".l{text-align:left}\ntr.job td{font-weight:600;border-top:2px solid #d8dee4}\n"
	      "tr.thread td{color:#59636e;font-size:13px}\ntr.thread td.l{padding-left:28px}\n"
	      "td.cmd{white-space:normal;max-width:380px}\n"
	      ".cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(140px,1fr));gap:10px;"
	      "margin:14px 0}\n"
	      ".card{border:1px solid #d8dee4;border-radius:6px;padding:8px 12px}\n"
	      ".card b{display:block;font-size:20px}\n.card span{color:#59636e;font-size:12px}\n"
	      ".legend{margin:6px 0;font-size:13px}\n.legend span{margin-right:16px;white-space:nowrap}\n"
	      ".sw{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:5px;"
	      "vertical-align:-1px}\n"
	      "svg{display:block}\nsvg text{font:11px system-ui,-apple-system,'Segoe UI',sans-serif;"
	      "fill:#1f2328}\n"
	      "code{font-size:12px;word-break:break-all}\nfooter{margin-top:36px;color:#59636e;"
	      "font-size:12px}\n"
	      "</style>\n</head>\n<body>\n",
	      f);
}

static void ddl_summary(const struct ddl_report *r, FILE *f)
{
	char when[64] = "?";
	time_t sec = (time_t)(r->start_real_ns / 1000000000);
	struct tm tm;
	if (r->nprocs && gmtime_r(&sec, &tm))
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
	double wall = r->nprocs ? (double)(r->end_real_ns - r->start_real_ns) / 1e9 : 0;
	fputs("<h1>ddlprof report</h1>\n<div class=\"sub\">run <b>", f);
	ddl_h(f, r->run->id);
	fprintf(f, "</b> &middot; %zu process%s on %d host%s, %d rank%s &middot; started %s &middot; "
	        "%.3f s</div>\n", r->nprocs, r->nprocs == 1 ? "" : "es", r->nhosts,
	        r->nhosts == 1 ? "" : "s", r->nranks, r->nranks == 1 ? "" : "s", when, wall);
	for (size_t k = 0; k < r->set->nruns; k++)
		if (&r->set->runs[k] != r->run) {
			fputs("<div class=\"note\">Also in these traces: run ", f);
			ddl_h(f, r->set->runs[k].id);
			fputs(" (report it with <code>--run ", f);
			ddl_h(f, r->set->runs[k].id);
			fputs("</code>)</div>\n", f);
		}
	if (r->incomplete)
		fputs("<div class=\"warn\"><b>Incomplete:</b> memory ran out; not every trace was read or "
		      "analysed in full, and the figures miss what was not.</div>\n", f);
	if (r->truncated)
		fputs("<div class=\"warn\"><b>Truncated:</b> some traces were cut short; the figures cover "
		      "what was written.</div>\n", f);
	const char *pert = r->nprocs ? ddl_trace_meta(r->procs[0].tr[0], "DDLPROF_PERTURB_NET") : NULL;
	if (pert) {
		fputs("<div class=\"warn\"><b>Perturbed:</b> the job's sends were slowed on purpose "
		      "(<code>--perturb-net ", f);
		ddl_h(f, pert);
		fputs("</code>).</div>\n", f);
	}
	if (r->iterations <= 0)
		return;
	fputs("<div class=\"cards\">\n", f);
	fprintf(f, "<div class=\"card\"><span>iterations per rank</span><b>%ld</b><span>found by %s, "
	        "%d warm-up skipped</span></div>\n", r->iterations, r->iteration_method, r->warmup);
	fprintf(f, "<div class=\"card\"><span>mean iteration</span><b>%.2f ms</b><span>p50 %.2f ms, "
	        "p99 %.2f ms</span></div>\n", r->iter_mean_s * 1e3, r->iter_p50_s * 1e3,
	        r->iter_p99_s * 1e3);
	double pct[5];
	ddl_parts_v(&r->pct, pct);
	for (int k = 0; k < 5; k++)
		fprintf(f, "<div class=\"card\"><span><i class=\"sw\" style=\"background:%s\"></i>%s</span>"
		        "<b>%.1f%%</b><span>of iteration time</span></div>\n", ddl_part_color[k],
		        ddl_part_label[k], pct[k]);
	fputs("</div>\n", f);
}

/* A stacked bar of the five parts: W pixels for TOTAL, values in UNIT ("ms" or "%"). */
static void ddl_bar(FILE *f, const struct ddl_parts *pp, double total, double w, double scale,
                    const char *unit)
{
	double v[5];
	ddl_parts_v(pp, v);
	fprintf(f, "<svg width=\"%.0f\" height=\"16\" role=\"img\">", w);
	double x = 0;
	for (int k = 0; k < 5; k++) {
		double pw = total > 0 && v[k] > 0 ? v[k] / total * w : 0;
		if (pw <= 0)
			continue;
		fprintf(f, "<rect x=\"%.2f\" y=\"1\" width=\"%.2f\" height=\"14\" fill=\"%s\"><title>%s: "
		        "%.2f %s</title></rect>", x, pw, ddl_part_color[k], ddl_part_label[k], v[k] * scale,
		        unit);
		x += pw;
	}
	fputs("</svg>", f);
}

static void ddl_legend(FILE *f, const char *const *color, const char *const *label, int n)
{
	fputs("<div class=\"legend\">", f);
	for (int k = 0; k < n; k++)
		fprintf(f, "<span><i class=\"sw\" style=\"background:%s\"></i>%s</span>", color[k], label[k]);
	fputs("</div>\n", f);
}

static void ddl_breakdown_table(const struct ddl_report *r, FILE *f)
{
	double longest = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].niter && r->procs[i].iter_mean_s > longest)
			longest = r->procs[i].iter_mean_s;
	fprintf(f, "<h2>Where an iteration's time goes</h2>\n<div class=\"note\">Mean milliseconds per "
	        "iteration, split on the %s (see ddlprof-report(1)); bars are to scale across ranks.</div>\n",
	        r->nprocs && r->procs[0].gpu_breakdown ? "device timeline" : "training thread");
	ddl_legend(f, ddl_part_color, ddl_part_label, 5);
	fputs("<table>\n<tr><th class=\"l\">rank</th><th class=\"l\">host</th><th>pid</th>"
	      "<th>iterations</th><th>mean ms</th><th>compute</th><th>data</th><th>interconnect</th>"
	      "<th>network</th><th>idle</th><th class=\"l\">breakdown</th></tr>\n", f);
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!p->niter)
			continue;
		fputs("<tr class=\"rank\"><td class=\"l\">", f);
		ddl_proc_label(f, r, p);
		fputs("</td><td class=\"l\">", f);
		ddl_h(f, p->host);
		fprintf(f, "</td><td>%u</td><td>%zu</td><td>%.2f</td>", p->pid, p->niter, p->iter_mean_s * 1e3);
		double v[5];
		ddl_parts_v(&p->per_iter, v);
		for (int k = 0; k < 5; k++)
			fprintf(f, "<td>%.2f</td>", v[k] * 1e3);
		fputs("<td class=\"l\">", f);
		ddl_bar(f, &p->per_iter, p->iter_mean_s, longest > 0 ? 360 * p->iter_mean_s / longest : 0,
		        1e3, "ms");
		fputs("</td></tr>\n", f);
	}
	fprintf(f, "<tr class=\"job\"><td class=\"l\" colspan=\"4\">job (share of time)</td>"
	        "<td>%.2f</td>", r->iter_mean_s * 1e3);
	double pct[5];
	ddl_parts_v(&r->pct, pct);
	for (int k = 0; k < 5; k++)
		fprintf(f, "<td>%.1f%%</td>", pct[k]);
	fputs("<td class=\"l\">", f);
	ddl_bar(f, &r->pct, 100, 360, 1, "%");
	fputs("</td></tr>\n</table>\n", f);
	if (r->have_sensitivity)
		fprintf(f, "<p><b>Network sensitivity %.2f:</b> predicted iteration %.1f ms in one machine, "
		        "%.1f ms in a rack (&times;%.2f), %.1f ms across racks (&times;%.2f), at %.3g, %.3g "
		        "and %.3g Gbit/s (<code>--bw</code>).</p>\n",
		        r->sensitivity, r->predicted_s[0] * 1e3, r->predicted_s[1] * 1e3, r->slowdown[1],
		        r->predicted_s[2] * 1e3, r->slowdown[2], r->bw[0] * 8 / 1e9, r->bw[1] * 8 / 1e9,
		        r->bw[2] * 8 / 1e9);
}

/* ---- one iteration's timeline ---- */

#define DDL_TL_ROWS  12
#define DDL_TL_LEFT  170.0 /* label gutter */
#define DDL_TL_PLOT  1010.0
#define DDL_TL_ROWH  18.0
#define DDL_TL_GAP   5.0

struct ddl_tlrow {
	uint64_t key;       /* streams: image << 32 | stream, top bit set; threads: OS tid */
	char label[64];
	/* a rectangle not drawn yet, to merge neighbours less than a pixel apart */
	double x0, x1;
	int color, merged;
	const char *name;
};

struct ddl_tl {
	FILE *f;
	const struct ddl_report *r;
	const struct ddl_proc *p;
	int64_t a, b;       /* the iteration */
	int device;         /* rows are streams, else threads */
	struct ddl_tlrow row[DDL_TL_ROWS];
	int nrows;
};

static struct ddl_tlrow *ddl_tl_row(struct ddl_tl *tl, uint64_t key, int add)
{
	for (int i = 0; i < tl->nrows; i++)
		if (tl->row[i].key == key)
			return &tl->row[i];
	if (!add || tl->nrows == DDL_TL_ROWS)
		return NULL;
	struct ddl_tlrow *w = &tl->row[tl->nrows++];
	memset(w, 0, sizeof *w);
	w->key = key;
	w->color = -1;
	return w;
}

/* The row and colour of event I of image K, or NULL when it is not drawn. */
static struct ddl_tlrow *ddl_tl_classify(struct ddl_tl *tl, size_t k, size_t i,
                                         const struct ddl_devcalls *dc, int add, int *color,
                                         const char **name)
{
	const struct ddl_trace *t = tl->p->tr[k];
	const struct ddl_event *e = &t->ev[i];
	int cls = ddl_event_class(e->kind);
	struct ddl_tlrow *w;
	if (tl->device) {
		if (cls != DDL_CLASS_DEVICE)
			return NULL;
		w = ddl_tl_row(tl, 1ull << 63 | (uint64_t)k << 32 | e->peer, add);
		if (w && !w->label[0]) {
			int dev = e->peer < t->nstreams && t->streams[e->peer].dev >= 0 ? t->streams[e->peer].dev
			                                                                : e->fd;
			snprintf(w->label, sizeof w->label, "stream %u (device %d)", e->peer & 0x7fffffffu, dev);
		}
		if (w && color) {
			struct ddl_devinfo d;
			ddl_device_info(t, i, dc, &d);
			*color = d.part;
			/* the row keeps the name: not one in D's own buffer */
			*name = d.name == d.buf ? ddl_event_name(e->kind) : d.name;
		}
		return w;
	}
	if (!ddl_event_is_net(e->kind) && cls != DDL_CLASS_SYNC)
		return NULL;
	uint32_t tid = e->tid < t->nthreads ? t->threads[e->tid].tid : 0;
	w = ddl_tl_row(tl, tid, add);
	if (w && !w->label[0]) {
		const char *tn = e->tid < t->nthreads ? t->threads[e->tid].name : NULL;
		snprintf(w->label, sizeof w->label, "thread %u %.40s", tid, tn ? tn : "");
	}
	if (w && color) {
		int remote = e->peer && e->peer < t->npeers && t->peers[e->peer].text && !t->peers[e->peer].local;
		*color = cls == DDL_CLASS_SYNC                 ? DDL_H_OTHER
		         : cls == DDL_CLASS_WAIT               ? (e->flags & DDL_EVF_SOCKWAIT ? DDL_H_SOCKWAIT
		                                                                              : DDL_H_OTHER)
		         : cls == DDL_CLASS_CONN || !remote    ? DDL_H_LOCAL
		                                               : DDL_H_REMOTE;
		if (cls == DDL_CLASS_TX || cls == DDL_CLASS_RX)
			*color = remote ? DDL_H_REMOTE : DDL_H_LOCAL;
		*name = ddl_event_name(e->kind);
	}
	return w;
}

static void ddl_tl_flush(struct ddl_tl *tl, struct ddl_tlrow *w, double y)
{
	if (w->color < 0)
		return;
	const char *const *colors = tl->device ? ddl_dev_color : ddl_host_color;
	fprintf(tl->f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" fill=\"%s\"><title>",
	        w->x0, y, w->x1 - w->x0 < 0.6 ? 0.6 : w->x1 - w->x0, DDL_TL_ROWH, colors[w->color]);
	ddl_h(tl->f, w->name);
	if (w->merged)
		fprintf(tl->f, " and %d more", w->merged);
	fputs("</title></rect>", tl->f);
	w->color = -1;
}

/* Adds [a, b) of colour C to row W at height Y, merging with the one before. */
static void ddl_tl_rect(struct ddl_tl *tl, struct ddl_tlrow *w, double y, int64_t a, int64_t b,
                        int c, const char *name)
{
	double len = (double)(tl->b - tl->a);
	a = a < tl->a ? tl->a : a;
	b = b > tl->b ? tl->b : b;
	double x0 = DDL_TL_LEFT + (double)(a - tl->a) / len * DDL_TL_PLOT;
	double x1 = DDL_TL_LEFT + (double)(b - tl->a) / len * DDL_TL_PLOT;
	if (w->color == c && x0 <= w->x1 + 1.0 && x0 >= w->x0) {
		if (x1 > w->x1)
			w->x1 = x1;
		w->merged++;
		return;
	}
	ddl_tl_flush(tl, w, y);
	w->x0 = x0;
	w->x1 = x1;
	w->color = c;
	w->merged = 0;
	w->name = name;
}

/* Finds the rows (DRAW 0), or draws every event of the process that
 * overlaps the iteration on its row (DRAW 1). */
static void ddl_tl_pass(struct ddl_tl *tl, int draw)
{
	for (size_t k = 0; k < tl->p->ntr; k++) {
		const struct ddl_trace *t = tl->p->tr[k];
		struct ddl_devcalls dc = {0};
		if (draw && tl->device && ddl_devcalls_build(tl->r, t, &dc) < 0)
			ddl_html_nomem = 1; /* intervals would go unnamed */
		for (size_t i = 0; i < t->nev; i++) {
			const struct ddl_event *e = &t->ev[i];
			int64_t a = ddl_trace_real_ns(t, e->start), b = a + ddl_trace_dur_ns(t, e);
			if (b <= tl->a || a >= tl->b || ddl_event_class(e->kind) == DDL_CLASS_ARGS)
				continue;
			int color = 0;
			const char *name = NULL;
			struct ddl_tlrow *w = ddl_tl_classify(tl, k, i, &dc, !draw, draw ? &color : NULL, &name);
			if (w && draw)
				ddl_tl_rect(tl, w, DDL_TL_GAP + (double)(w - tl->row) * (DDL_TL_ROWH + DDL_TL_GAP), a,
				            b, color, name);
		}
		ddl_devcalls_free(&dc);
	}
	for (int i = 0; draw && i < tl->nrows; i++)
		ddl_tl_flush(tl, &tl->row[i], DDL_TL_GAP + (double)i * (DDL_TL_ROWH + DDL_TL_GAP));
}

/* Rows in order of stream (image, then id) or of thread id. */
static int ddl_tlrow_cmp(const void *x, const void *y)
{
	const struct ddl_tlrow *a = x, *b = y;
	return a->key < b->key ? -1 : a->key > b->key;
}

/* Tick spacing of 1, 2 or 5 times a power of ten giving about six ticks. */
static double ddl_tick(double span_ms)
{
	double raw = span_ms / 6, p = pow(10, floor(log10(raw > 0 ? raw : 1)));
	return raw / p < 1.5 ? p : raw / p < 3.5 ? 2 * p : raw / p < 7.5 ? 5 * p : 10 * p;
}

static int ddl_dbl_cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

/* The first iteration whose duration is the median of the rank's (the
 * lower one of an even count); the first one without memory. */
static size_t ddl_median_iter(const struct ddl_proc *p)
{
	double *v = malloc(p->niter * sizeof *v);
	if (!v) {
		ddl_html_nomem = 1;
		return 0;
	}
	memcpy(v, p->iter_s, p->niter * sizeof *v);
	qsort(v, p->niter, sizeof *v, ddl_dbl_cmp);
	double m = v[(p->niter - 1) / 2];
	free(v);
	size_t k = 0;
	while (k + 1 < p->niter && p->iter_s[k] != m)
		k++;
	return k;
}

static void ddl_timeline(const struct ddl_report *r, const struct ddl_proc *p, FILE *f)
{
	size_t it = ddl_median_iter(p);
	struct ddl_tl tl = {f, r, p, p->iter[it].start_ns, p->iter[it].end_ns, p->gpu.device_intervals > 0};
	if (tl.b <= tl.a)
		return;
	double ms = (double)(tl.b - tl.a) / 1e6;
	fputs("<h3>", f);
	ddl_proc_label(f, r, p);
	fputs(" on ", f);
	ddl_h(f, p->host);
	fprintf(f, ": iteration %zu, %.2f ms (the median)</h3>\n", it + (size_t)p->warmup_skipped, ms);
	ddl_tl_pass(&tl, 0);
	qsort(tl.row, (size_t)tl.nrows, sizeof tl.row[0], ddl_tlrow_cmp);
	double rows_h = (double)tl.nrows * (DDL_TL_ROWH + DDL_TL_GAP);
	double bar_y = DDL_TL_GAP + rows_h + 4, axis_y = bar_y + DDL_TL_ROWH + 16;
	fprintf(f, "<svg width=\"%.0f\" height=\"%.0f\" role=\"img\">\n", DDL_TL_LEFT + DDL_TL_PLOT + 10,
	        axis_y + 8);
	fprintf(f, "<rect x=\"%.0f\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#f6f8fa\"/>\n",
	        DDL_TL_LEFT, DDL_TL_PLOT, bar_y + DDL_TL_ROWH + 2);
	for (int i = 0; i < tl.nrows; i++) {
		fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">", DDL_TL_LEFT - 8,
		        DDL_TL_GAP + (double)i * (DDL_TL_ROWH + DDL_TL_GAP) + 13);
		ddl_h(f, tl.row[i].label);
		fputs("</text>\n", f);
	}
	if (!tl.nrows)
		fprintf(f, "<text x=\"%.0f\" y=\"18\">no %s in this iteration</text>\n", DDL_TL_LEFT + 8,
		        tl.device ? "device intervals" : "socket calls or waits");
	ddl_tl_pass(&tl, 1);
	fputc('\n', f);
	/* this iteration's parts, to the same scale */
	const struct ddl_parts *pp = p->iter_parts ? &p->iter_parts[it] : &p->per_iter;
	double v[5];
	ddl_parts_v(pp, v);
	fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">breakdown</text>", DDL_TL_LEFT - 8,
	        bar_y + 13);
	double x = DDL_TL_LEFT, total = p->iter_parts ? p->iter_s[it] : p->iter_mean_s;
	for (int k = 0; k < 5; k++) {
		double w = total > 0 && v[k] > 0 ? v[k] / total * DDL_TL_PLOT : 0;
		if (w <= 0)
			continue;
		fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" fill=\"%s\"><title>%s: "
		        "%.3f ms</title></rect>", x, bar_y, w, DDL_TL_ROWH, ddl_part_color[k], ddl_part_label[k],
		        v[k] * 1e3);
		x += w;
	}
	double step = ddl_tick(ms);
	for (double t = 0; t <= ms + 1e-9; t += step) {
		double tx = DDL_TL_LEFT + t / ms * DDL_TL_PLOT;
		fprintf(f, "\n<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#8c959f\"/>"
		        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g ms</text>", tx, axis_y - 12, tx,
		        axis_y - 8, tx, axis_y + 4, t);
	}
	fputs("\n</svg>\n", f);
}

static void ddl_timelines(const struct ddl_report *r, FILE *f)
{
	fputs("<h2>One iteration per rank</h2>\n<div class=\"note\">The iteration of median length on "
	      "each rank, from its start to its end; under it, how the breakdown split it. Hover for "
	      "names; neighbours less than a pixel apart are drawn as one.</div>\n", f);
	int dev = 0, host = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].niter) {
			dev |= r->procs[i].gpu.device_intervals > 0;
			host |= r->procs[i].gpu.device_intervals == 0;
		}
	if (dev)
		ddl_legend(f, ddl_dev_color, ddl_dev_label, 4);
	if (host)
		ddl_legend(f, ddl_host_color, ddl_host_label, DDL_H_N);
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].niter)
			ddl_timeline(r, &r->procs[i], f);
}

/* ---- marker ranges and marks ---- */

#define DDL_MK_NAMES 256 /* distinct names kept; more are summed as one row */
#define DDL_MK_DEPTH 64

struct ddl_mkname {
	const char *name;
	uint64_t ranges, marks;
	int64_t total_ns;
};

struct ddl_mkopen {
	uint16_t tidx;
	int depth;
	int64_t at[DDL_MK_DEPTH];
	const char *name[DDL_MK_DEPTH];
};

static struct ddl_mkname *ddl_mk_get(struct ddl_mkname *v, size_t *n, const char *name)
{
	for (size_t i = 0; i < *n; i++) /* the trace's own string: most often the same pointer */
		if (v[i].name == name)
			return &v[i];
	for (size_t i = 0; i < *n; i++)
		if (!strcmp(v[i].name, name))
			return &v[i];
	if (*n == DDL_MK_NAMES)
		return &v[DDL_MK_NAMES]; /* the "other names" row */
	v[*n] = (struct ddl_mkname){name, 0, 0, 0};
	return &v[(*n)++];
}

/* Ranges are paired per thread, as iterations.c pairs them; open ones at an image's end are left out. */
static void ddl_mk_trace(const struct ddl_trace *t, struct ddl_mkname *v, size_t *n)
{
	struct ddl_mkopen open[32];
	size_t nopen = 0;
	for (size_t i = 0; i < t->nev; i++) {
		const struct ddl_event *e = &t->ev[i];
		if (ddl_event_class(e->kind) != DDL_CLASS_MARK)
			continue;
		const char *name = ddl_trace_name(t, (uint64_t)e->result);
		if (e->kind == DDL_EV_MARK) {
			ddl_mk_get(v, n, name ? name : "(unnamed)")->marks++;
			continue;
		}
		if (e->kind != DDL_EV_RANGE_PUSH && e->kind != DDL_EV_RANGE_POP)
			continue; /* start/end ranges (NVTX) are not nested */
		struct ddl_mkopen *o = NULL;
		for (size_t k = 0; k < nopen && !o; k++)
			if (open[k].tidx == e->tid)
				o = &open[k];
		if (!o && nopen == 32)
			continue; /* threads past the first 32 with markers: not counted */
		if (!o) {
			o = &open[nopen++];
			o->tidx = e->tid;
			o->depth = 0;
		}
		int64_t at = ddl_trace_real_ns(t, e->start);
		if (e->kind == DDL_EV_RANGE_PUSH) {
			if (o->depth < DDL_MK_DEPTH) {
				o->at[o->depth] = at;
				o->name[o->depth] = name ? name : "(unnamed)";
			}
			o->depth++;
		} else if (o->depth > 0 && --o->depth < DDL_MK_DEPTH) {
			struct ddl_mkname *m = ddl_mk_get(v, n, o->name[o->depth]);
			m->ranges++;
			m->total_ns = ddl_ns_sat_add(m->total_ns, at - o->at[o->depth]);
		}
	}
}

static int ddl_mk_cmp(const void *x, const void *y)
{
	const struct ddl_mkname *a = x, *b = y;
	if (a->total_ns != b->total_ns)
		return a->total_ns > b->total_ns ? -1 : 1;
	return a->marks > b->marks ? -1 : a->marks < b->marks;
}

/* The program's marker ranges and marks by name, most time first. */
static void ddl_marker_table(const struct ddl_report *r, FILE *f)
{
	struct ddl_mkname *v = calloc(DDL_MK_NAMES + 1, sizeof *v);
	if (!v) {
		ddl_html_nomem = 1;
		return;
	}
	v[DDL_MK_NAMES].name = "(other names)";
	size_t n = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		for (size_t k = 0; k < r->procs[i].ntr; k++)
			ddl_mk_trace(r->procs[i].tr[k], v, &n);
	if (v[DDL_MK_NAMES].ranges || v[DDL_MK_NAMES].marks)
		n++;
	qsort(v, n, sizeof *v, ddl_mk_cmp);
	if (n)
		fputs("<h2>Marker ranges and marks</h2>\n<div class=\"note\">Every process's ranges "
		      "and marks (<code>&lt;ddlprof/ddlprof.h&gt;</code>, NVTX), by name, most time first."
		      "</div>\n<table>\n<tr><th class=\"l\">name</th><th>ranges</th><th>total ms</th>"
		      "<th>mean ms</th><th>marks</th></tr>\n", f);
	for (size_t i = 0; i < n && i < 30; i++) {
		fputs("<tr><td class=\"l\">", f);
		ddl_h(f, v[i].name);
		fprintf(f, "</td><td>%" PRIu64 "</td><td>%.3f</td><td>%.3f</td><td>%" PRIu64 "</td></tr>\n",
		        v[i].ranges, (double)v[i].total_ns / 1e6,
		        v[i].ranges ? (double)v[i].total_ns / 1e6 / (double)v[i].ranges : 0.0, v[i].marks);
	}
	if (n)
		fprintf(f, "</table>\n%s", n > 30 ? "<div class=\"note\">Only the first 30 names are shown."
		                                     "</div>\n" : "");
	free(v);
}

/* ---- the tables of the text report ---- */

static const char *ddl_span_word(int span)
{
	return span == DDL_SPAN_INTRA ? "inside one machine"
	       : span == DDL_SPAN_INTER ? "across machines" : "unknown (members missing)";
}

static void ddl_gpu_tables(const struct ddl_report *r, FILE *f)
{
	char b1[32], b2[32], b3[32];
	fputs("<h2>Communicators</h2>\n", f);
	if (!r->ncomms) {
		fputs("<p class=\"note\">None created under ddlprof.</p>\n", f);
	} else {
		fputs("<table>\n<tr><th class=\"l\">key</th><th>ranks</th><th>traced</th><th>hosts</th>"
		      "<th class=\"l\">span</th><th class=\"l\">created by</th><th class=\"l\">host names</th>"
		      "</tr>\n", f);
		for (size_t i = 0; i < r->ncomms; i++) {
			const struct ddl_commjob *c = &r->comms[i];
			fprintf(f, "<tr><td class=\"l\"><code>%016llx</code></td><td>%d</td><td>%d</td><td>%d</td>"
			        "<td class=\"l\">%s</td><td class=\"l\">", (unsigned long long)c->key, c->nranks,
			        c->members, c->nhosts, ddl_span_word(c->span));
			ddl_h(f, c->how);
			fputs("</td><td class=\"l\">", f);
			ddl_h(f, c->hosts);
			fputs("</td></tr>\n", f);
		}
		fputs("</table>\n", f);
	}
	fprintf(f, "<h2>GPU work</h2>\n<div class=\"note\">Device time from %s.</div>\n<table>\n"
	        "<tr><th class=\"l\">process</th><th class=\"l\">host</th><th>launches</th><th>kernels "
	        "timed</th><th>kernel s</th><th>collectives</th><th>bytes</th><th>intra</th><th>inter</th>"
	        "<th>collective device s</th></tr>\n",
	        r->nprocs && r->procs[0].gpu.backend ? r->procs[0].gpu.backend : "no timed intervals");
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!p->has_gpu)
			continue;
		fputs("<tr><td class=\"l\">", f);
		ddl_proc_label(f, r, p);
		fputs("</td><td class=\"l\">", f);
		ddl_h(f, p->host);
		fprintf(f, "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%.4f</td><td>%" PRIu64 "</td>"
		        "<td>%s</td><td>%s</td><td>%s</td><td>%.4f</td></tr>\n",
		        p->gpu.launches, p->gpu.kernels_timed, p->gpu.kernel_s, p->coll.count,
		        ddl_bytes(p->coll.bytes, b1, sizeof b1), ddl_bytes(p->coll.intra_bytes, b2, sizeof b2),
		        ddl_bytes(p->coll.inter_bytes, b3, sizeof b3), p->coll.device_s);
	}
	fputs("</table>\n", f);
}

/* The job's top kernels by device time (kernels.c); hovering a name shows it whole. */
static void ddl_kernel_table(const struct ddl_report *r, FILE *f)
{
	if (!r->nkernels_timed && !r->kernel_runs)
		return;
	fprintf(f, "<h2>Top kernels by device time</h2>\n<div class=\"note\">All processes, %.3f ms of "
	        "kernel intervals; names demangled, the whole name on hovering it.", r->kernel_s * 1e3);
	if (r->kernel_runs)
		fprintf(f, " %.3f ms (%" PRIu64 " intervals) time runs of launches as one and are not split "
		        "by kernel.", r->kernel_runs_s * 1e3, r->kernel_runs);
	fputs("</div>\n", f);
	if (!r->nkernels_timed)
		return;
	fputs("<table>\n<tr><th class=\"l\">kernel</th><th>count</th><th>total ms</th><th>mean us</th>"
	      "<th>share</th></tr>\n", f);
	for (size_t i = 0; i < r->nkernels_timed && i < 10; i++) {
		const struct ddl_kernel *k = &r->kernels[i];
		char name[104];
		if (!ddl_kernel_shorten(k->name, name, sizeof name, 100))
			ddl_html_nomem = 1;
		fputs("<tr><td class=\"l\" title=\"", f);
		ddl_h(f, k->name);
		fputs("\"><code>", f);
		ddl_h(f, name);
		fprintf(f, "</code></td><td>%" PRIu64 "</td><td>%.3f</td><td>%.3f</td><td>%.1f%%</td></tr>\n",
		        k->count, k->total_s * 1e3, k->total_s / (double)k->count * 1e6,
		        r->kernel_s > 0 ? 100 * k->total_s / r->kernel_s : 0.0);
	}
	fputs("</table>\n", f);
	if (r->nkernels_timed > 10)
		fprintf(f, "<div class=\"note\">%zu more in <code>--json</code>.</div>\n", r->nkernels_timed - 10);
}

static void ddl_net_cells(FILE *f, const struct ddl_netsum *n)
{
	char s[32], r[32];
	fprintf(f, "<td>%" PRIu64 "</td><td>%s</td><td>%s</td><td>%.4f</td><td>%.4f</td><td>%u / %u</td>",
	        n->calls, ddl_bytes(n->bytes_sent, s, sizeof s), ddl_bytes(n->bytes_received, r, sizeof r),
	        (double)n->in_calls_ns / 1e9, (double)n->blocked_ns / 1e9, n->peers_local, n->peers_remote);
}

static void ddl_net_table(const struct ddl_report *r, FILE *f)
{
	fputs("<h2>Network activity by process and thread</h2>\n<table>\n<tr><th class=\"l\">process / "
	      "thread</th><th class=\"l\">host</th><th>calls</th><th>sent</th><th>received</th>"
	      "<th>in calls s</th><th>blocked s</th><th>peers local / remote</th>"
	      "<th class=\"l\">command</th></tr>\n", f);
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		fputs("<tr><td class=\"l\">", f);
		ddl_proc_label(f, r, p);
		if (p->rank >= 0)
			fprintf(f, " (pid %u)", p->pid);
		fputs("</td><td class=\"l\">", f);
		ddl_h(f, p->host);
		fputs("</td>", f);
		ddl_net_cells(f, &p->net);
		fputs("<td class=\"l cmd\"><code>", f);
		if (p->command) {
			char cmd[164];
			snprintf(cmd, sizeof cmd, "%.160s", p->command);
			ddl_h(f, cmd);
		}
		fprintf(f, "</code>%s%s</td></tr>\n", p->images > 1 ? " (after exec)" : "",
		        p->truncated ? " [truncated]" : "");
		for (size_t k = 0; k < p->nthreads; k++) {
			fprintf(f, "<tr class=\"thread\"><td class=\"l\">thread %u ", p->threads[k].tid);
			ddl_h(f, p->threads[k].name);
			fputs("</td><td></td>", f);
			ddl_net_cells(f, &p->threads[k].net);
			fputs("<td></td></tr>\n", f);
		}
	}
	fputs("</table>\n", f);
}

static void ddl_problems(const struct ddl_report *r, FILE *f)
{
	int n = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		for (size_t k = 0; k < r->procs[i].ntr; k++)
			for (int j = 0; j < r->procs[i].tr[k]->nproblems; j++) {
				fputs(n++ ? "<li>" : "<h2>Trace problems</h2>\n<ul>\n<li>", f);
				ddl_h(f, r->procs[i].tr[k]->problems[j]);
				fputs("</li>\n", f);
			}
	if (n)
		fputs("</ul>\n", f);
}

/* Iteration time over the run: one polyline per rank, in SVG. */
static void ddl_iter_chart(const struct ddl_report *r, FILE *f)
{
	static const char *const line[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
	                                   "#edc948", "#b07aa1", "#ff9da7"};
	double lo = 0, hi = 0;
	size_t most = 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		for (size_t k = 0; k < p->niter; k++) {
			double ms = p->iter_s[k] * 1e3;
			if ((!lo && !hi) || ms < lo)
				lo = ms;
			if (ms > hi)
				hi = ms;
		}
		if (p->niter > most)
			most = p->niter;
	}
	if (most < 2 || hi <= 0)
		return;
	if (hi - lo < hi * 0.05) { /* a flat run: give the lines room */
		lo = lo * 0.95;
		hi = hi * 1.05;
	}
	const double W = 900, H = 220, L = 60, B = 24, T = 8;
	fputs("<h2>Iteration time over the run</h2>\n<div class=\"note\">Each analysed iteration of "
	      "each rank, in milliseconds, in order.</div>\n", f);
	fprintf(f, "<svg width=\"%.0f\" height=\"%.0f\" role=\"img\">", W, H);
	fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#999\"/>", L, H - B,
	        W - 10, H - B);
	for (int g = 0; g <= 4; g++) {
		double v = lo + (hi - lo) * g / 4, y = H - B - (H - B - T) * g / 4;
		fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.1f</text>"
		        "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#eee\"/>",
		        L - 6, y + 4, v, L, y, W - 10, y);
	}
	for (size_t i = 0, c = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (p->niter < 2)
			continue;
		fprintf(f, "<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\"%s\" points=\"",
		        line[c++ % 8]);
		for (size_t k = 0; k < p->niter; k++) {
			double x = L + (W - 10 - L) * (double)k / (double)(most - 1);
			double y = H - B - (H - B - T) * (p->iter_s[k] * 1e3 - lo) / (hi - lo);
			fprintf(f, "%.1f,%.1f ", x, y);
		}
		fputs("\"><title>", f);
		ddl_proc_label(f, r, p);
		fputs("</title></polyline>", f);
	}
	fputs("</svg>\n", f);
}

/* Collective bytes by operation, all ranks together: horizontal bars. */
static void ddl_coll_chart(const struct ddl_report *r, FILE *f)
{
	uint64_t bytes[DDL_COLL_OPS] = {0}, count[DDL_COLL_OPS] = {0}, top = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		for (unsigned k = 0; k < DDL_COLL_OPS; k++) {
			bytes[k] += r->procs[i].coll.op_bytes[k];
			count[k] += r->procs[i].coll.op_count[k];
		}
	for (unsigned k = 0; k < DDL_COLL_OPS; k++)
		if (bytes[k] > top)
			top = bytes[k];
	if (!top)
		return;
	fputs("<h2>Communication by collective</h2>\n<div class=\"note\">Bytes of every rank's NCCL "
	      "calls over the whole run, by operation.</div>\n<table>\n", f);
	for (unsigned k = 0; k < DDL_COLL_OPS; k++) {
		if (!count[k])
			continue;
		char b[32];
		fprintf(f, "<tr><td class=\"l\">%s</td><td>%llu calls</td><td>%s</td><td class=\"l\">"
		        "<svg width=\"400\" height=\"14\" role=\"img\"><rect x=\"0\" y=\"1\" width=\"%.1f\" "
		        "height=\"12\" fill=\"#4e79a7\"/></svg></td></tr>\n",
		        ddl_coll_op_name(k), (unsigned long long)count[k],
		        ddl_bytes(bytes[k], b, sizeof b), 400.0 * (double)bytes[k] / (double)top);
	}
	fputs("</table>\n", f);
}

int ddl_out_html(const struct ddl_report *r, FILE *f)
{
	ddl_html_nomem = 0;
	ddl_head(r, f);
	ddl_summary(r, f);
	if (r->iterations > 0) {
		ddl_breakdown_table(r, f);
		ddl_iter_chart(r, f);
		ddl_timelines(r, f);
	} else {
		fputs("<h2>Iterations</h2>\n<p>None found: no marker ranges matching <code>", f);
		ddl_h(f, r->iteration_names);
		fputs("</code>, no repeating collectives, and no rhythm in the socket traffic.</p>\n", f);
	}
	if (r->has_gpu) {
		ddl_coll_chart(r, f);
		ddl_gpu_tables(r, f);
		ddl_kernel_table(r, f);
	}
	ddl_marker_table(r, f);
	ddl_net_table(r, f);
	ddl_problems(r, f);
	fputs("<footer>Written by ddlprof-report " DDLPROF_VERSION "; the same figures are in "
	      "<code>ddlprof-report --json</code>.</footer>\n</body>\n</html>\n", f);
	if (ddl_html_nomem) {
		errno = ENOMEM;
		return -1;
	}
	return ferror(f) ? -1 : 0;
}
