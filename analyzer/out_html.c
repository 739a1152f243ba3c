/*
 * --format html: the report as one self-contained HTML page (inline CSS and
 * SVG; no scripts, fonts or links to fetch), to attach to a ticket or open
 * from a CI artifact. It shows the run summary, the iteration breakdown per
 * rank with a stacked bar each, the job's shares, the network-sensitivity
 * prediction, how much communication hid under compute, the stragglers,
 * each rank's iteration times over the run, a timeline of one
 * representative iteration per rank with the breakdown drawn on its time
 * axis, then the communicators, GPU work, top kernels and network tables of
 * the text report. It reads only the report model (report.h): what it
 * draws, the analysis computed.
 *
 * The page fits any window from about 800 pixels wide: charts are drawn in
 * percentages of their width (SVG lengths in %, or a viewBox stretched only
 * sideways), so their text keeps its size, and wide tables scroll on their
 * own rather than push the page wider.
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
/* Ranks' lines in the chart of iteration times: none of the colours above,
 * then the same eight dashed, then dotted. */
static const char *const ddl_rank_color[] = {"#222222", "#8c564b", "#e377c2", "#bcbd22",
                                             "#17becf", "#6a3d9a", "#b8860b", "#005f73"};
static const char *const ddl_rank_dash[] = {"", "7 3", "2 2"};
#define DDL_RANK_LINES 24 /* ranks past these are drawn thin and grey, as "other ranks" */

/* The N bytes at S as HTML text or attribute value. */
static void ddl_hn(FILE *f, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	while (p < end) {
		size_t n = ddl_utf8_len(p);
		if (n == 0 || n > (size_t)(end - p) || (*p < 0x20 && *p != '\t' && *p != '\n') || *p == 0x7f) {
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

/* S as HTML text or attribute value. */
static void ddl_h(FILE *f, const char *s)
{
	ddl_hn(f, s ? s : "", s ? strlen(s) : 0);
}

/*
 * S with each of its words (split at spaces) kept on one line, so that the
 * page wraps it only at a space; a word of more than 60 bytes may break
 * anywhere.
 */
static void ddl_h_words(FILE *f, const char *s)
{
	for (const char *w = s ? s : ""; *w;) {
		size_t n = strcspn(w, " ");
		if (n == 0) {
			fputc(' ', f);
			w++;
			continue;
		}
		fputs(n <= 60 ? "<span>" : "", f);
		ddl_hn(f, w, n);
		fputs(n <= 60 ? "</span>" : "", f);
		w += n;
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

/* "rank 0 on host" */
static void ddl_proc_on(FILE *f, const struct ddl_report *r, const struct ddl_proc *p)
{
	ddl_proc_label(f, r, p);
	fputs(" on ", f);
	ddl_h(f, p->host);
}

/* A table of ranks opened, as wide as the page, with the heads of its
 * columns: rank, host, then the cells COLS (th elements). */
static void ddl_rank_table(FILE *f, const char *cols)
{
	fprintf(f, "<div class=\"wide\"><table class=\"fill\">\n<tr><th class=\"l\">rank</th><th class=\"l\">"
	        "host</th>%s</tr>\n", cols);
}

/* A table row of P opened (of class CLS; NULL: none) with its first two
 * cells: what P is, and its host. */
static void ddl_row_head(FILE *f, const struct ddl_report *r, const struct ddl_proc *p, const char *cls)
{
	fprintf(f, "<tr%s%s%s><td class=\"l\">", cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "");
	ddl_proc_label(f, r, p);
	fputs("</td><td class=\"l\">", f);
	ddl_h(f, p->host);
	fputs("</td>", f);
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
	      ".wide{max-width:100%;overflow-x:auto}\n"
	      "table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin:4px 0}\n"
	      "th,td{padding:4px 10px;text-align:right;border-bottom:1px solid #eaeef2;white-space:nowrap;"
	      "vertical-align:middle}\n"
	      "th{background:#f6f8fa;font-weight:600;border-bottom:1px solid #d8dee4;white-space:normal}\n"
	      ".l{text-align:left}\ntr.job td{font-weight:600;border-top:2px solid #d8dee4}\n"
	      "tr.thread td{color:#59636e;font-size:13px}\ntr.thread td.l{padding-left:28px}\n"
	      "tr.cmd td{white-space:normal;padding-left:28px;color:#59636e}\n"
	      "tr.cmd code span{white-space:nowrap}\n"
	      "table.fill{width:100%}\ntd.bar{width:36%;min-width:120px}\n"
	      "td.bar svg{display:block;height:16px}\n"
	      ".cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(140px,1fr));gap:10px;"
	      "margin:14px 0}\n"
	      ".card{border:1px solid #d8dee4;border-radius:6px;padding:8px 12px}\n"
	      ".card b{display:block;font-size:20px}\n.card span{color:#59636e;font-size:12px}\n"
	      ".legend{margin:6px 0;font-size:13px}\n.legend span{margin-right:16px;white-space:nowrap;"
	      "display:inline-block}\n"
	      ".sw{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:5px;"
	      "vertical-align:-1px}\n"
	      ".ln{display:inline-block;width:26px;height:0;border-top:2px solid;margin-right:5px;"
	      "vertical-align:4px}\n"
	      "svg{display:block;overflow:visible}\nsvg text{font:12px system-ui,-apple-system,'Segoe UI',"
	      "sans-serif;fill:#1f2328}\n"
	      ".tl{display:grid;grid-template-columns:170px minmax(0,1fr);column-gap:10px;margin:4px 0 14px}\n"
	      ".tll div{height:18px;line-height:18px;margin-bottom:5px;font-size:12px;text-align:right;"
	      "white-space:nowrap;overflow:hidden;text-overflow:ellipsis}\n"
	      ".tll div.sep{margin-top:9px;font-weight:600}\n.tll div.train{font-weight:600}\n"
	      ".chart{display:grid;grid-template-columns:64px minmax(0,1fr);column-gap:6px;"
	      "margin:4px 16px 4px 0}\n"
	      ".xlabel{grid-column:2;text-align:center;font-size:12px;color:#59636e;margin-top:2px}\n"
	      "code{font-size:12px;overflow-wrap:break-word}\ncode.any{overflow-wrap:anywhere}\n"
	      "footer{margin-top:36px;color:#59636e;font-size:12px}\n"
	      "@media (max-width:1000px){body{padding:16px 16px 32px}th,td{padding:4px 6px}"
	      ".tl{grid-template-columns:150px minmax(0,1fr)}}\n"
	      "</style>\n</head>\n<body>\n",
	      f);
}

/* The job's communication per iteration and the part of it hidden under
 * compute: sums over the ranks with iterations; 0 when there was none. */
static double ddl_job_overlap(const struct ddl_report *r, double *comm)
{
	double c = 0, o = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].niter) {
			c += r->procs[i].comm_s;
			o += r->procs[i].overlap_s;
		}
	*comm = c;
	return o;
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
	if (r->iter_disagree) {
		fputs("<div class=\"warn\"><b>The ranks disagree</b> on their iterations, so the job has no "
		      "count:", f);
		for (size_t i = 0; i < r->nprocs; i++) {
			const struct ddl_proc *p = &r->procs[i];
			if (!p->iter_disagrees)
				continue;
			if (p->niter_found)
				fprintf(f, " rank %d found %zu of %.3f ms;", p->rank, p->niter_found,
				        p->iter_period_s * 1e3);
			else
				fprintf(f, " rank %d found none;", p->rank);
		}
		fprintf(f, " the ranks' median is %ld of %.3f ms.</div>\n", r->iter_found_median,
		        r->iter_period_s * 1e3);
	}
	fputs("<div class=\"cards\">\n", f);
	if (r->iter_disagree)
		fprintf(f, "<div class=\"card\"><span>iterations per rank</span><b>?</b><span>found by %s; "
		        "the ranks disagree</span></div>\n", r->iteration_method);
	else
		fprintf(f, "<div class=\"card\"><span>iterations per rank</span><b>%ld</b><span>%ld found "
		        "by %s, %d warm-up skipped</span></div>\n", r->iterations, r->iterations_found,
		        r->iteration_method, r->warmup);
	fprintf(f, "<div class=\"card\"><span>mean iteration</span><b>%.2f ms</b><span>p50 %.2f ms, "
	        "p99 %.2f ms</span></div>\n", r->iter_mean_s * 1e3, r->iter_p50_s * 1e3,
	        r->iter_p99_s * 1e3);
	double pct[5];
	ddl_parts_v(&r->pct, pct);
	for (int k = 0; k < 5; k++)
		fprintf(f, "<div class=\"card\"><span><i class=\"sw\" style=\"background:%s\"></i>%s</span>"
		        "<b>%.1f%%</b><span>of iteration time</span></div>\n", ddl_part_color[k],
		        ddl_part_label[k], pct[k]);
	double comm, hidden = ddl_job_overlap(r, &comm);
	if (comm > 0)
		fprintf(f, "<div class=\"card\"><span>communication overlap</span><b>%.1f%%</b><span>hidden under "
		        "compute</span></div>\n", 100 * hidden / comm);
	fputs("</div>\n", f);
}

/*
 * A stacked bar of the five parts, SHARE (0 to 1) of its cell wide, each
 * part its value's share of TOTAL; the values shown in UNIT ("ms" or "%")
 * after multiplying by SCALE.
 */
static void ddl_bar(FILE *f, const struct ddl_parts *pp, double total, double share, double scale,
                    const char *unit)
{
	double v[5];
	ddl_parts_v(pp, v);
	fprintf(f, "<svg style=\"width:%.1f%%\" role=\"img\">", 100 * share);
	double x = 0;
	for (int k = 0; k < 5; k++) {
		double pw = total > 0 && v[k] > 0 ? 100 * v[k] / total : 0;
		if (pw <= 0)
			continue;
		fprintf(f, "<rect x=\"%.3f%%\" y=\"1\" width=\"%.3f%%\" height=\"14\" fill=\"%s\"><title>%s: "
		        "%.2f %s</title></rect>", x, pw, ddl_part_color[k], ddl_part_label[k], v[k] * scale,
		        unit);
		x += pw;
	}
	fputs("</svg>", f);
}

/* A legend of N colour swatches and their labels, after TITLE (NULL: none). */
static void ddl_legend(FILE *f, const char *title, const char *const *color, const char *const *label,
                       int n)
{
	fputs("<div class=\"legend\">", f);
	if (title)
		fprintf(f, "<b>%s</b> ", title);
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
	        "iteration, split on the %s (see ddlprof-report(1)); each bar stacks the parts end to end, "
	        "to one scale across ranks.</div>\n",
	        r->nprocs && r->procs[0].gpu_breakdown ? "device timeline" : "training thread");
	ddl_legend(f, NULL, ddl_part_color, ddl_part_label, 5);
	ddl_rank_table(f, "<th>pid</th><th>iterations</th><th>mean&nbsp;ms</th><th>compute</th><th>data</th>"
	               "<th>interconnect</th><th>network</th><th>idle</th><th class=\"l\">breakdown</th>");
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!p->niter)
			continue;
		ddl_row_head(f, r, p, "rank");
		fprintf(f, "<td>%u</td><td>%zu</td><td>%.2f</td>", p->pid, p->niter, p->iter_mean_s * 1e3);
		double v[5];
		ddl_parts_v(&p->per_iter, v);
		for (int k = 0; k < 5; k++)
			fprintf(f, "<td>%.2f</td>", v[k] * 1e3);
		fputs("<td class=\"l bar\">", f);
		ddl_bar(f, &p->per_iter, p->iter_mean_s, longest > 0 ? p->iter_mean_s / longest : 0, 1e3, "ms");
		fputs("</td></tr>\n", f);
	}
	fprintf(f, "<tr class=\"job\"><td class=\"l\" colspan=\"4\">job (share of time)</td>"
	        "<td>%.2f</td>", r->iter_mean_s * 1e3);
	double pct[5];
	ddl_parts_v(&r->pct, pct);
	for (int k = 0; k < 5; k++)
		fprintf(f, "<td>%.1f%%</td>", pct[k]);
	fputs("<td class=\"l bar\">", f);
	ddl_bar(f, &r->pct, 100, 1, 1, "%");
	fputs("</td></tr>\n</table></div>\n", f);
	if (r->have_sensitivity)
		fprintf(f, "<p><b>Network sensitivity %.2f:</b> predicted iteration %.1f ms in one machine, "
		        "%.1f ms in a rack (&times;%.2f), %.1f ms across racks (&times;%.2f), at %.3g, %.3g "
		        "and %.3g Gbit/s (<code>--bw</code>).</p>\n",
		        r->sensitivity, r->predicted_s[0] * 1e3, r->predicted_s[1] * 1e3, r->slowdown[1],
		        r->predicted_s[2] * 1e3, r->slowdown[2], r->bw[0] * 8 / 1e9, r->bw[1] * 8 / 1e9,
		        r->bw[2] * 8 / 1e9);
}

/* ---- overlap and stragglers ---- */

/*
 * Communication against computation, per rank (breakdown.c, breakdown_gpu.c):
 * of the time communication ran in an iteration, what ran under compute,
 * and the exposed rest as the stall it became.
 */
static void ddl_overlap_table(const struct ddl_report *r, FILE *f)
{
	static const char *const color[] = {"#4e79a7", "#59a14f", "#e15759", "#f28e2b"};
	static const char *const label[] = {"hidden under compute", "exposed: interconnect stall",
	                                    "exposed: network stall", "exposed: during data waits"};
	double comm, hidden = ddl_job_overlap(r, &comm), most = 0;
	int dev = 0, waits = 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!p->niter)
			continue;
		most = p->comm_s > most ? p->comm_s : most;
		dev |= p->gpu_breakdown;
		/* exposed, yet no stall: traffic while the thread waited for data */
		waits |= p->comm_s - p->overlap_s - p->per_iter.interconnect_stall -
		         p->per_iter.network_stall > 1e-6 * p->comm_s;
	}
	fputs("<h2>Communication and computation overlap</h2>\n", f);
	if (comm <= 0) {
		fputs("<p class=\"note\">No communication ran inside the iterations.</p>\n", f);
		return;
	}
	fprintf(f, "<div class=\"note\">Per iteration, the time %s, and how much of it ran while the %s "
	        "computed: hidden, at no cost. The rest is exposed and shows as stall in the breakdown. "
	        "Over the job, <b>%.1f%%</b> of communication was hidden (the overlap ratio of HTA's "
	        "communication-computation overlap).</div>\n",
	        dev ? "collectives ran on the device" : "each rank's traffic was in flight",
	        dev ? "device" : "training thread", 100 * hidden / comm);
	ddl_legend(f, NULL, color, label, waits ? 4 : 3);
	ddl_rank_table(f, "<th>communication&nbsp;ms</th><th>hidden&nbsp;ms</th><th>exposed&nbsp;ms</th>"
	               "<th>overlap</th><th class=\"l\">communication, to one scale</th>");
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!p->niter)
			continue;
		double ic = p->per_iter.interconnect_stall, nt = p->per_iter.network_stall;
		double exposed = p->comm_s - p->overlap_s, rest = exposed - ic - nt;
		double v[4] = {p->overlap_s, ic, nt, rest > 1e-6 * p->comm_s ? rest : 0};
		ddl_row_head(f, r, p, NULL);
		fprintf(f, "<td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%.1f%%</td><td class=\"l bar\">",
		        p->comm_s * 1e3, p->overlap_s * 1e3, exposed * 1e3,
		        p->comm_s > 0 ? 100 * p->overlap_s / p->comm_s : 0.0);
		double sum = v[0] + v[1] + v[2] + v[3];
		fprintf(f, "<svg style=\"width:%.1f%%\" role=\"img\">", most > 0 ? 100 * p->comm_s / most : 0);
		double x = 0;
		for (int k = 0; k < 4 && sum > 0; k++) {
			double w = 100 * v[k] / sum;
			if (w <= 0)
				continue;
			fprintf(f, "<rect x=\"%.3f%%\" y=\"1\" width=\"%.3f%%\" height=\"14\" fill=\"%s\"><title>"
			        "%s: %.3f ms an iteration</title></rect>", x, w, color[k], label[k], v[k] * 1e3);
			x += w;
		}
		fputs("</svg></td></tr>\n", f);
	}
	fputs("</table></div>\n", f);
}

/* Who kept the others waiting at the collectives (align.c). */
static void ddl_straggler_table(const struct ddl_report *r, FILE *f)
{
	double most = 0;
	int measured = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].coll_instances) {
			measured++;
			most = r->procs[i].imposed_wait_s > most ? r->procs[i].imposed_wait_s : most;
		}
	fputs("<h2>Stragglers</h2>\n", f);
	if (!measured) {
		fputs("<p class=\"note\">Not measured: no collective was seen on more than one rank.</p>\n", f);
		return;
	}
	fputs("<div class=\"note\">At every collective the rank that starts it last makes the others "
	      "wait. In each iteration the rank that made them wait longest, standing out, is late, and "
	      "so is the rank it spent most of that time waiting on, in turn: the last of that chain is "
	      "the cause. A straggler is the cause in at least half the iterations and makes the others "
	      "wait more than 0.5 ms and 5% of the iteration, over twice the ranks' median; a victim is "
	      "late as often, because it waits on another.</div>\n", f);
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!p->straggler)
			continue;
		fputs("<div class=\"warn\"><b>Straggler: ", f);
		ddl_proc_on(f, r, p);
		fprintf(f, "</b> is late to its collectives by its own doing in %.0f%% of the iterations and "
		        "makes the others wait %.3f ms an iteration", p->late_fraction * 100, p->imposed_wait_s * 1e3);
		if (!strcmp(p->straggler_cause, "compute") || !strcmp(p->straggler_cause, "data"))
			fprintf(f, "; its %s takes %.3f ms an iteration, the other ranks' %.3f",
			        !strcmp(p->straggler_cause, "data") ? "data stall" : "compute", p->cause_s * 1e3,
			        p->cause_others_s * 1e3);
		fputs(".</div>\n", f);
	}
	if (!r->nstragglers)
		fputs("<p>No straggler: no rank keeps the others waiting much longer than the rest do.</p>\n", f);
	ddl_rank_table(f, "<th>late</th><th>makes others wait, ms an iteration</th>"
	               "<th class=\"l\">verdict</th><th class=\"l\">waits most on</th>"
	               "<th class=\"l\">wait imposed, to one scale</th>");
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!p->coll_instances)
			continue;
		ddl_row_head(f, r, p, NULL);
		fprintf(f, "<td>%.0f%% of iterations</td><td>%.3f</td><td class=\"l\">", p->late_fraction * 100,
		        p->imposed_wait_s * 1e3);
		if (p->straggler)
			fputs("<b>straggler</b>", f);
		else if (p->victim)
			fprintf(f, "victim of rank %d", r->procs[p->victim_of].rank);
		else
			fputs("on time", f);
		fputs("</td><td class=\"l\">", f);
		if (p->waits_on >= 0)
			fprintf(f, "rank %d, %.3f ms an iteration", r->procs[p->waits_on].rank, p->waits_on_s * 1e3);
		fprintf(f, "</td><td class=\"l bar\"><svg style=\"width:%.1f%%\" role=\"img\"><rect x=\"0\" "
		        "y=\"1\" width=\"100%%\" height=\"14\" fill=\"%s\"><title>%.3f ms an iteration</title>"
		        "</rect></svg></td></tr>\n",
		        most > 0 ? 100 * p->imposed_wait_s / most : 0, p->straggler ? "#e15759" : "#8c959f",
		        p->imposed_wait_s * 1e3);
	}
	fputs("</table></div>\n", f);
}

/* ---- one iteration's timeline ---- */

#define DDL_TL_ROWS  12
#define DDL_TL_UNITS 1000.0 /* the plot's width in units of its own: about a pixel at the widest */
#define DDL_TL_ROWH  18.0
#define DDL_TL_GAP   5.0
#define DDL_TL_SEP   9.0    /* more room above the breakdown's row */

struct ddl_tlrow {
	uint64_t key;       /* streams: image << 32 | stream, top bit set; threads: OS tid */
	char label[96];
	/* a rectangle not drawn yet, to merge neighbours less than a unit
	 * apart: its span in units, colour, first name, how many more, and
	 * their start, time and bytes */
	double x0, x1;
	int color, merged;
	const char *name;
	int64_t at, ns;
	uint64_t bytes;
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

/* NS as the page writes a duration: "12.345 ms", "81.2 us", "640 ns". */
static const char *ddl_dur(int64_t ns, char *buf, size_t n)
{
	if (ns >= 1000000)
		snprintf(buf, n, "%.3f ms", (double)ns / 1e6);
	else if (ns >= 1000)
		snprintf(buf, n, "%.1f us", (double)ns / 1e3);
	else
		snprintf(buf, n, "%" PRId64 " ns", ns);
	return buf;
}

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

/* The row, colour, name and bytes of event I of image K, or NULL when it is not drawn. */
static struct ddl_tlrow *ddl_tl_classify(struct ddl_tl *tl, size_t k, size_t i,
                                         const struct ddl_devcalls *dc, int add, int *color,
                                         const char **name, uint64_t *bytes)
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
			*bytes = d.args && e->kind != DDL_EV_DEV_KERNEL ? d.args->bytes : 0;
		}
		return w;
	}
	if (!ddl_event_is_net(e->kind) && cls != DDL_CLASS_SYNC)
		return NULL;
	uint32_t tid = e->tid < t->nthreads ? t->threads[e->tid].tid : 0;
	w = ddl_tl_row(tl, tid, add);
	if (w && !w->label[0])
		snprintf(w->label, sizeof w->label, "thread %u %.40s", tid, ddl_thread_name(tl->p, t, e->tid));
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
		int moved = (cls == DDL_CLASS_TX || (cls == DDL_CLASS_RX && !(e->flags & DDL_EVF_PEEK))) &&
		            e->result > 0;
		*bytes = moved ? (uint64_t)e->result : 0;
	}
	return w;
}

/*
 * A shape's hover text: "NAME: 1.234 ms at +5.000 ms, 4.00 MiB" for one
 * interval, "NAME and 3 more: 4 intervals, 4.936 ms in all from +5.000 ms,
 * ..." for neighbours drawn as one (MORE of them after the first).
 */
static void ddl_tl_title(FILE *f, const char *name, int more, const char *what, int64_t at, int64_t ns,
                         uint64_t bytes)
{
	char d[32], s[32], b[32];
	fputs("<title>", f);
	ddl_h(f, name);
	if (more)
		fprintf(f, " and %d more: %d %s, %s in all from +%s", more, more + 1, what,
		        ddl_dur(ns, d, sizeof d), ddl_dur(at, s, sizeof s));
	else
		fprintf(f, ": %s at +%s", ddl_dur(ns, d, sizeof d), ddl_dur(at, s, sizeof s));
	if (bytes)
		fprintf(f, ", %s", ddl_bytes(bytes, b, sizeof b));
	fputs("</title>", f);
}

/* A rectangle of the plot: X0 to X1 in units, at height Y. */
static void ddl_tl_box(FILE *f, double x0, double x1, double y, const char *fill)
{
	double w = x1 - x0 < 0.6 ? 0.6 : x1 - x0;
	fprintf(f, "<rect x=\"%.2f%%\" y=\"%.1f\" width=\"%.2f%%\" height=\"%.0f\" fill=\"%s\">",
	        x0 / DDL_TL_UNITS * 100, y, w / DDL_TL_UNITS * 100, DDL_TL_ROWH, fill);
}

static void ddl_tl_flush(struct ddl_tl *tl, struct ddl_tlrow *w, double y)
{
	if (w->color < 0)
		return;
	const char *const *colors = tl->device ? ddl_dev_color : ddl_host_color;
	ddl_tl_box(tl->f, w->x0, w->x1, y, colors[w->color]);
	ddl_tl_title(tl->f, w->name, w->merged, "intervals", w->at - tl->a, w->ns, w->bytes);
	fputs("</rect>", tl->f);
	w->color = -1;
}

/* Units from the iteration's start at instant AT. */
static double ddl_tl_x(const struct ddl_tl *tl, int64_t at)
{
	at = at < tl->a ? tl->a : at > tl->b ? tl->b : at;
	return (double)(at - tl->a) / (double)(tl->b - tl->a) * DDL_TL_UNITS;
}

/* Adds [a, b) of colour C to row W at height Y, merging with the one before. */
static void ddl_tl_rect(struct ddl_tl *tl, struct ddl_tlrow *w, double y, int64_t a, int64_t b,
                        int c, const char *name, uint64_t bytes)
{
	double x0 = ddl_tl_x(tl, a), x1 = ddl_tl_x(tl, b);
	a = a < tl->a ? tl->a : a;
	b = b > tl->b ? tl->b : b;
	if (w->color == c && x0 <= w->x1 + 1.0 && x0 >= w->x0) {
		if (x1 > w->x1)
			w->x1 = x1;
		w->merged++;
		w->ns += b - a;
		w->bytes += bytes;
		return;
	}
	ddl_tl_flush(tl, w, y);
	w->x0 = x0;
	w->x1 = x1;
	w->color = c;
	w->merged = 0;
	w->name = name;
	w->at = a;
	w->ns = b - a;
	w->bytes = bytes;
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
			uint64_t bytes = 0;
			struct ddl_tlrow *w = ddl_tl_classify(tl, k, i, &dc, !draw, draw ? &color : NULL, &name,
			                                      &bytes);
			if (w && draw)
				ddl_tl_rect(tl, w, (double)(w - tl->row) * (DDL_TL_ROWH + DDL_TL_GAP), a, b, color,
				            name, bytes);
		}
		ddl_devcalls_free(&dc);
	}
	for (int i = 0; draw && i < tl->nrows; i++)
		ddl_tl_flush(tl, &tl->row[i], (double)i * (DDL_TL_ROWH + DDL_TL_GAP));
}

/* Rows in order of stream (image, then id) or of thread id, the row keyed
 * *FIRST (the training thread's) before the others. */
static int ddl_tlrow_cmp(const void *x, const void *y, void *first)
{
	const struct ddl_tlrow *a = x, *b = y;
	uint64_t k = *(const uint64_t *)first;
	if ((a->key == k) != (b->key == k))
		return a->key == k ? -1 : 1;
	return a->key < b->key ? -1 : a->key > b->key;
}

/* Tick spacing of 1, 2 or 5 times a power of ten giving about six ticks. */
static double ddl_tick(double span)
{
	double raw = span / 6, p = pow(10, floor(log10(raw > 0 ? raw : 1)));
	return raw / p < 1.5 ? p : raw / p < 3.5 ? 2 * p : raw / p < 7.5 ? 5 * p : 10 * p;
}

/*
 * The breakdown of the iteration drawn on its time axis, at height Y: each
 * piece of the model's (breakdown.c) in its part's colour; per part,
 * pieces less than a unit apart as one, idle drawn first so that the other
 * parts show over it.
 */
static void ddl_tl_pieces(const struct ddl_tl *tl, double y)
{
	static const int order[] = {4, 0, 1, 2, 3};
	const struct ddl_proc *p = tl->p;
	for (int o = 0; o < 5; o++) {
		int part = order[o], n = 0;
		double x0 = 0, x1 = 0;
		int64_t at = 0, ns = 0;
		for (size_t i = 0; i <= p->npieces; i++) {
			const struct ddl_piece *q = i < p->npieces ? &p->pieces[i] : NULL;
			if (q && q->part != part)
				continue;
			double qx0 = q ? ddl_tl_x(tl, q->a) : 0, qx1 = q ? ddl_tl_x(tl, q->b) : 0;
			if (q && n && qx0 <= x1 + 1.0) {
				x1 = qx1;
				ns += q->b - q->a;
				n++;
				continue;
			}
			if (n) {
				ddl_tl_box(tl->f, x0, x1, y, ddl_part_color[part]);
				ddl_tl_title(tl->f, ddl_part_label[part], n - 1, "stretches", at - tl->a, ns, 0);
				fputs("</rect>", tl->f);
			}
			if (q) {
				x0 = qx0;
				x1 = qx1;
				at = q->a;
				ns = q->b - q->a;
				n = 1;
			}
		}
	}
}

static void ddl_timeline(const struct ddl_report *r, const struct ddl_proc *p, FILE *f)
{
	size_t it = p->shown < p->niter ? p->shown : 0;
	struct ddl_tl tl = {f, r, p, p->iter[it].start_ns, p->iter[it].end_ns, p->gpu.device_intervals > 0};
	if (tl.b <= tl.a)
		return;
	double ms = (double)(tl.b - tl.a) / 1e6;
	fputs("<h3>", f);
	ddl_proc_on(f, r, p);
	fprintf(f, ": iteration %zu, %.2f ms (the median)</h3>\n", it + (size_t)p->warmup_skipped, ms);
	uint64_t first = tl.device ? 0 : p->train_tid;
	if (!tl.device)
		ddl_tl_row(&tl, first, 1); /* the training thread's row, first, whatever it did */
	ddl_tl_pass(&tl, 0);
	if (!tl.device && !tl.row[0].label[0])
		snprintf(tl.row[0].label, sizeof tl.row[0].label, "thread %u", p->train_tid);
	qsort_r(tl.row, (size_t)tl.nrows, sizeof tl.row[0], ddl_tlrow_cmp, &first);
	double rows_h = (double)(tl.nrows ? tl.nrows : 1) * (DDL_TL_ROWH + DDL_TL_GAP);
	double lane_y = rows_h + DDL_TL_SEP - DDL_TL_GAP, axis_y = lane_y + DDL_TL_ROWH + 4;
	int lane = p->pieces != NULL;
	if (!lane)
		axis_y = rows_h;
	/* the labels, one column; the plot beside them, as wide as there is room */
	fputs(tl.nrows ? "<div class=\"tl\"><div class=\"tll\">" : "<div class=\"tl\"><div class=\"tll\"><div></div>",
	      f);
	for (int i = 0; i < tl.nrows; i++) {
		int train = !tl.device && tl.row[i].key == first;
		fprintf(f, "<div%s title=\"", train ? " class=\"train\"" : "");
		ddl_h(f, tl.row[i].label);
		fputs(train ? ": the training thread\">" : "\">", f);
		ddl_h(f, tl.row[i].label);
		fputs("</div>", f);
	}
	if (lane)
		fprintf(f, "<div class=\"sep\" title=\"At each instant, the part of the breakdown it was "
		        "counted in: drawn in time, not a sum\">%s</div>",
		        tl.device ? "breakdown in time" : "training thread");
	fprintf(f, "</div>\n<svg width=\"100%%\" height=\"%.0f\" role=\"img\">\n", axis_y + 20);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"%.0f\" fill=\"#f6f8fa\"/>\n",
	        rows_h - DDL_TL_GAP);
	if (!tl.nrows)
		fprintf(f, "<text x=\"8\" y=\"13\">no %s in this iteration</text>\n",
		        tl.device ? "device intervals" : "socket calls or waits");
	ddl_tl_pass(&tl, 1);
	fputc('\n', f);
	if (lane) {
		fprintf(f, "<rect x=\"0\" y=\"%.1f\" width=\"100%%\" height=\"%.0f\" fill=\"#f6f8fa\"/>", lane_y,
		        DDL_TL_ROWH);
		ddl_tl_pieces(&tl, lane_y);
		fputc('\n', f);
	}
	double step = ddl_tick(ms);
	for (double t = 0; t <= ms + 1e-9; t += step) {
		double x = t / ms * 100;
		fprintf(f, "<line x1=\"%.2f%%\" y1=\"%.1f\" x2=\"%.2f%%\" y2=\"%.1f\" stroke=\"#8c959f\"/>"
		        "<text x=\"%.2f%%\" y=\"%.1f\" text-anchor=\"%s\">%g ms</text>\n", x, axis_y, x,
		        axis_y + 4, x, axis_y + 16, t == 0 ? "start" : x > 96 ? "end" : "middle", t);
	}
	fputs("</svg></div>\n", f);
}

static void ddl_timelines(const struct ddl_report *r, FILE *f)
{
	int dev = 0, host = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].niter) {
			dev |= r->procs[i].gpu.device_intervals > 0;
			host |= r->procs[i].gpu.device_intervals == 0;
		}
	fprintf(f, "<h2>One iteration per rank</h2>\n<div class=\"note\">The iteration of median length "
	        "on each rank, from its start to its end: one row per %s. The last row, <b>%s</b>, is "
	        "drawn on the same time axis (it is not a sum): each instant in the colour of the part "
	        "of the breakdown it was counted in%s. Hover a shape for its name, duration and bytes; "
	        "neighbours less than a thousandth of the iteration apart are drawn as one.</div>\n",
	        dev && host ? "CUDA stream, or thread where a rank has no device intervals"
	        : dev ? "CUDA stream" : "thread with socket calls or waits, the training thread first",
	        dev ? "breakdown in time" : "training thread",
	        host ? " (on the training thread: what it was doing)" : "");
	if (dev)
		ddl_legend(f, dev && host ? "streams:" : NULL, ddl_dev_color, ddl_dev_label, 4);
	if (host)
		ddl_legend(f, dev && host ? "threads:" : NULL, ddl_host_color, ddl_host_label, DDL_H_N);
	ddl_legend(f, "last row:", ddl_part_color, ddl_part_label, 5);
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].niter) {
			ddl_proc_hold(&r->procs[i]);
			ddl_timeline(r, &r->procs[i], f);
			ddl_proc_release(&r->procs[i]);
		}
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
		for (size_t k = 0; k < r->procs[i].ntr; k++) {
			const struct ddl_trace *t = r->procs[i].tr[k];
			if (!ddl_trace_has_class(t, DDL_CLASS_MARK))
				continue; /* no marker: nothing to count */
			ddl_trace_hold(t);
			ddl_mk_trace(t, v, &n);
			ddl_trace_release(t);
		}
	if (v[DDL_MK_NAMES].ranges || v[DDL_MK_NAMES].marks)
		n++;
	qsort(v, n, sizeof *v, ddl_mk_cmp);
	if (n)
		fputs("<h2>Marker ranges and marks</h2>\n<div class=\"note\">Every process's ranges "
		      "and marks (<code>&lt;ddlprof/ddlprof.h&gt;</code>, NVTX), by name, most time first."
		      "</div>\n<table>\n<tr><th class=\"l\">name</th><th>ranges</th><th>total&nbsp;ms</th>"
		      "<th>mean&nbsp;ms</th><th>marks</th></tr>\n", f);
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
		fputs("<div class=\"wide\"><table>\n<tr><th class=\"l\">key</th><th>ranks</th><th>traced</th><th>hosts</th>"
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
		fputs("</table></div>\n", f);
	}
	fprintf(f, "<h2>GPU work</h2>\n<div class=\"note\">Device time from %s.</div>\n<div class=\"wide\"><table>\n"
	        "<tr><th class=\"l\">process</th><th class=\"l\">host</th><th>launches</th><th>kernels "
	        "timed</th><th>kernel&nbsp;s</th><th>collectives</th><th>bytes</th><th>intra</th><th>inter</th>"
	        "<th>collective device&nbsp;s</th></tr>\n",
	        r->nprocs && r->procs[0].gpu.backend ? r->procs[0].gpu.backend : "no timed intervals");
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!p->has_gpu)
			continue;
		ddl_row_head(f, r, p, NULL);
		fprintf(f, "<td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%.4f</td><td>%" PRIu64 "</td>"
		        "<td>%s</td><td>%s</td><td>%s</td><td>%.4f</td></tr>\n",
		        p->gpu.launches, p->gpu.kernels_timed, p->gpu.kernel_s, p->coll.count,
		        ddl_bytes(p->coll.bytes, b1, sizeof b1), ddl_bytes(p->coll.intra_bytes, b2, sizeof b2),
		        ddl_bytes(p->coll.inter_bytes, b3, sizeof b3), p->coll.device_s);
	}
	fputs("</table></div>\n", f);
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
	fputs("<table>\n<tr><th class=\"l\">kernel</th><th>count</th><th>total&nbsp;ms</th><th>mean&nbsp;us</th>"
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
	fputs("<h2>Network activity by process and thread</h2>\n<div class=\"wide\"><table>\n<tr><th "
	      "class=\"l\">process / thread</th><th class=\"l\">host</th><th>calls</th><th>sent</th>"
	      "<th>received</th><th>in calls&nbsp;s</th><th>blocked&nbsp;s</th><th>peers local / remote</th>"
	      "</tr>\n", f);
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
		fputs("</tr>\n", f);
		if (p->command) {
			fputs("<tr class=\"cmd\"><td class=\"l\" colspan=\"8\">command: <code class=\"any\">", f);
			ddl_h_words(f, p->command);
			fprintf(f, "</code>%s%s</td></tr>\n", p->images > 1 ? " (after exec)" : "",
			        p->incomplete ? " [incomplete]" : p->truncated ? " [truncated]" : "");
		}
		for (size_t k = 0; k < p->nthreads; k++) {
			fprintf(f, "<tr class=\"thread\"><td class=\"l\">thread %u ", p->threads[k].tid);
			ddl_h(f, p->threads[k].name);
			fputs("</td><td></td>", f);
			ddl_net_cells(f, &p->threads[k].net);
			fputs("</tr>\n", f);
		}
	}
	fputs("</table></div>\n", f);
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


/*
 * Iteration time over the run: a line per rank, iteration number against
 * duration. The plot is an SVG of the page's width with a viewBox of 1000
 * units stretched sideways only (the lines keep their width), its points
 * and axis labels placed in percentages so that their text keeps its size.
 */
#define DDL_IC_H 240.0 /* the plot's height, pixels and viewBox units alike */

static void ddl_iter_chart(const struct ddl_report *r, FILE *f)
{
	double lo = INFINITY, hi = 0;
	double x0 = INFINITY, x1 = -INFINITY; /* iteration numbers, as the timelines give them */
	size_t points = 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		for (size_t k = 0; k < p->niter; k++) {
			double ms = p->iter_s[k] * 1e3, x = (double)(k + (size_t)p->warmup_skipped);
			lo = ms < lo ? ms : lo;
			hi = ms > hi ? ms : hi;
			x0 = x < x0 ? x : x0;
			x1 = x > x1 ? x : x1;
		}
		points += p->niter;
	}
	if (x1 <= x0 || hi <= 0)
		return;
	if (hi - lo < hi * 0.05) { /* a flat run: its lines in the middle, not its noise magnified */
		lo = lo * 0.95;
		hi = hi * 1.05;
	}
	double step = ddl_tick(hi - lo);
	lo = floor(lo / step) * step;
	hi = ceil(hi / step) * step;
	if (hi <= lo)
		hi = lo + step;
	fputs("<h2>Iteration time over the run</h2>\n<div class=\"note\">Each analysed iteration of each "
	      "rank (warm-up left out), by its number in the run, against its duration in milliseconds. "
	      "Hover a line or point for its rank and figures.</div>\n<div class=\"legend\">", f);
	int c = 0, others = 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!p->niter)
			continue;
		if (c >= DDL_RANK_LINES) {
			others++;
			continue;
		}
		fprintf(f, "<span><i class=\"ln\" style=\"border-top:2px %s %s\"></i>", c < 8 ? "solid"
		        : c < 16 ? "dashed" : "dotted", ddl_rank_color[c % 8]);
		ddl_proc_label(f, r, p);
		fprintf(f, "%s</span>", p->straggler ? " (straggler)" : "");
		c++;
	}
	if (others)
		fprintf(f, "<span><i class=\"ln\" style=\"border-top:1px solid #afb8c1\"></i>%d other rank%s"
		        "</span>", others, others == 1 ? "" : "s");
	fputs("</div>\n<div class=\"chart\">\n", f);
	/* the y axis: its label, turned, and the ticks' values */
	fprintf(f, "<svg width=\"64\" height=\"%.0f\" role=\"img\"><text transform=\"rotate(-90)\" "
	        "x=\"%.0f\" y=\"12\" text-anchor=\"middle\">iteration time (ms)</text>", DDL_IC_H,
	        -DDL_IC_H / 2);
	for (double v = lo; v <= hi + step / 2; v += step)
		fprintf(f, "<text x=\"60\" y=\"%.1f\" text-anchor=\"end\">%g</text>",
		        DDL_IC_H - (v - lo) / (hi - lo) * DDL_IC_H + 4, v);
	fprintf(f, "</svg>\n<svg width=\"100%%\" height=\"%.0f\" role=\"img\">"
	        "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"%.0f\" fill=\"#fff\" stroke=\"#d8dee4\"/>",
	        DDL_IC_H, DDL_IC_H);
	for (double v = lo + step; v < hi - step / 2; v += step) {
		double y = DDL_IC_H - (v - lo) / (hi - lo) * DDL_IC_H;
		fprintf(f, "<line x1=\"0\" y1=\"%.1f\" x2=\"100%%\" y2=\"%.1f\" stroke=\"#eaeef2\"/>", y, y);
	}
	fprintf(f, "\n<svg viewBox=\"0 0 1000 %.0f\" preserveAspectRatio=\"none\" width=\"100%%\" "
	        "height=\"%.0f\">\n", DDL_IC_H, DDL_IC_H);
	c = 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!p->niter)
			continue;
		int own = c < DDL_RANK_LINES;
		fprintf(f, "<polyline fill=\"none\" vector-effect=\"non-scaling-stroke\" stroke-width=\"%s\" "
		        "stroke=\"%s\"%s%s%s points=\"", own ? "1.6" : "1", own ? ddl_rank_color[c % 8] : "#afb8c1",
		        own && c >= 8 ? " stroke-dasharray=\"" : "", own && c >= 8 ? ddl_rank_dash[c / 8] : "",
		        own && c >= 8 ? "\"" : "");
		for (size_t k = 0; k < p->niter; k++)
			fprintf(f, "%.1f,%.1f ", ((double)(k + (size_t)p->warmup_skipped) - x0) / (x1 - x0) * 1000,
			        DDL_IC_H - (p->iter_s[k] * 1e3 - lo) / (hi - lo) * DDL_IC_H);
		fputs("\"><title>", f);
		ddl_proc_label(f, r, p);
		fprintf(f, ": mean %.3f ms over %zu iterations</title></polyline>\n", p->iter_mean_s * 1e3,
		        p->niter);
		c++;
	}
	fputs("</svg>\n", f);
	/* the points, where there are few enough to tell apart */
	c = 0;
	for (size_t i = 0; i < r->nprocs && points <= 2000; i++) {
		const struct ddl_proc *p = &r->procs[i];
		if (!p->niter)
			continue;
		for (size_t k = 0; k < p->niter && c < DDL_RANK_LINES; k++) {
			size_t n = k + (size_t)p->warmup_skipped;
			fprintf(f, "<circle cx=\"%.2f%%\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"><title>", ((double)n - x0) /
			        (x1 - x0) * 100, DDL_IC_H - (p->iter_s[k] * 1e3 - lo) / (hi - lo) * DDL_IC_H,
			        ddl_rank_color[c % 8]);
			ddl_proc_label(f, r, p);
			fprintf(f, ", iteration %zu: %.3f ms</title></circle>", n, p->iter_s[k] * 1e3);
		}
		c++;
	}
	fputs("\n</svg>\n<div></div><svg width=\"100%\" height=\"18\" role=\"img\">", f);
	double xs = ddl_tick(x1 - x0) < 1 ? 1 : round(ddl_tick(x1 - x0));
	for (double x = ceil(x0 / xs) * xs; x <= x1 + 1e-9; x += xs) {
		double at = (x - x0) / (x1 - x0) * 100;
		fprintf(f, "<line x1=\"%.2f%%\" y1=\"0\" x2=\"%.2f%%\" y2=\"4\" stroke=\"#8c959f\"/>"
		        "<text x=\"%.2f%%\" y=\"16\" text-anchor=\"middle\">%g</text>", at, at, at, x);
	}
	fprintf(f, "</svg>\n<div class=\"xlabel\">iteration (numbered from the start of the run; the first "
	        "%d, the warm-up, left out)</div>\n</div>\n", r->warmup);
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
		        "height=\"12\" fill=\"#4e79a7\"><title>%s</title></rect></svg></td></tr>\n",
		        ddl_coll_op_name(k), (unsigned long long)count[k], ddl_bytes(bytes[k], b, sizeof b),
		        400.0 * (double)bytes[k] / (double)top, b);
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
		ddl_overlap_table(r, f);
		ddl_straggler_table(r, f);
		ddl_iter_chart(r, f);
		ddl_timelines(r, f);
	} else {
		fputs("<h2>Iterations</h2>\n<p>No iterations found: no optimizer steps from the Python hook, "
		      "no marker ranges matching <code>", f);
		ddl_h(f, r->iteration_names);
		fputs("</code>, and no period in the sequence of collectives, of socket calls or of long "
		      "waits.</p>\n", f);
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
