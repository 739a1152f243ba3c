/*
 * The projection: one iteration of a measured (or described) job on COUNT
 * instances of one catalog type, data parallel. Compute scales with the
 * GPUs' relative throughput and, at a fixed global batch (strong scaling),
 * with the share of the batch each GPU gets; data stall and idle time stay
 * as measured; communication is the all-reduce of the gradients, costed
 * per level of the machine (inside an instance, across instances) by
 *
 *     t(n, S, B) = (lat^p + bw^p)^(1/p)
 *     lat = alpha * m * steps(n),   bw = beta * factor(n) * S / B
 *
 *     ring:  steps = 2(n-1)        factor = 2(n-1)/n
 *     tree:  steps = 2 ceil(log2 n) factor = 2            (n > 1; 0 at n = 1)
 *
 * with S the gradient bytes, m the collectives per iteration, B the link's
 * bytes per second and p the catalog's "norm_p" (1: the terms add, as
 * NCCL's; larger: the latency hides under the transfer, as on the
 * emulation). Of the communication, what ran under compute in the profile
 * runs under compute again: at most the measured overlap window in seconds
 * (scaled with the compute), never the last collective of the step (it
 * starts when the backward pass is done) and never more than the compute.
 * ddlprof-recommend(1), MODEL, has the whole derivation.
 */
#include <math.h>

#include "rec.h"

double ddl_model_rel(const struct ddl_gpu_model *g, int fp16)
{
	return g ? (fp16 ? g->fp16_rel : g->fp32_rel) : 1.0;
}

double ddl_model_level(int n, double bytes, double bw, double collectives,
                       const struct ddl_settings *s)
{
	if (n <= 1)
		return 0;
	double steps, factor;
	if (s->algo == DDL_TREE) {
		steps = 2 * ceil(log2((double)n));
		factor = 2;
	} else {
		steps = 2.0 * (n - 1);
		factor = 2.0 * (n - 1) / n;
	}
	double lat = s->coef.alpha_s * collectives * steps, xfer = 0;
	if (bytes > 0 && bw > 0)
		xfer = s->coef.beta * factor * bytes / bw;
	double p = s->coef.norm_p;
	if (p <= 1 || lat <= 0 || xfer <= 0)
		return lat + xfer;
	/* the larger term factored out keeps the powers finite */
	double hi = lat > xfer ? lat : xfer, lo = lat > xfer ? xfer : lat;
	return hi * pow(1 + pow(lo / hi, p), 1 / p);
}

double ddl_model_hidden(const struct ddl_profile *p, double comm, double compute)
{
	double hidden;
	if (p->structural) {
		hidden = p->overlap_frac * comm; /* --overlap: a fraction, nothing measured */
	} else {
		/*
		 * Buckets are all-reduced as the backward pass finishes them, so
		 * communication can run under the backward pass still to come:
		 * a window of compute, measured as overlap_s, that stays the same
		 * whatever the network (a slower one fills it and stalls the
		 * rest). It shrinks and grows with the compute per GPU.
		 */
		double window = p->compute_s > 0 ? p->overlap_s * compute / p->compute_s : 0;
		double tail = p->collectives >= 2 ? comm / p->collectives : 0;
		hidden = comm - tail < window ? comm - tail : window;
	}
	if (hidden > compute)
		hidden = compute;
	return hidden > 0 ? hidden : 0;
}

void ddl_model_project(const struct ddl_profile *p, const struct ddl_instance *i, int count,
                       const struct ddl_settings *s, struct ddl_projection *out)
{
	int g = i->gpus, k = count, n = g * k;
	double speed = ddl_model_rel(p->gpu, s->fp16) / ddl_model_rel(i->gpu, s->fp16);
	double share = s->scaling == DDL_STRONG ? (double)p->ranks / n : 1.0;
	out->compute_s = p->compute_s * speed * share;
	out->data_s = p->data_s;
	out->idle_s = p->idle_s;
	double intra_bw = i->intra_gbs * 1e9, net_bw = i->network_gbps * 1e9 / 8;
	double bytes = p->grad_bytes, m = p->collectives;
	enum ddl_allreduce ar = s->allreduce;
	if (ar == DDL_AR_AUTO)
		ar = p->hierarchical ? DDL_AR_HIER : DDL_AR_FLAT;
	out->ic_comm_s = out->net_comm_s = 0;
	if (k == 1) {
		out->ic_comm_s = ddl_model_level(g, bytes, intra_bw, m, s);
	} else if (ar == DDL_AR_HIER) {
		/*
		 * Reduce-scatter and all-gather inside, then g all-reduces of S/g
		 * across at once: through one NIC of net_bw, or each on its own
		 * link of net_bw when the network is paced per link.
		 */
		out->ic_comm_s = ddl_model_level(g, bytes, intra_bw, m, s);
		out->net_comm_s = ddl_model_level(k, bytes / g, i->network_per_link ? net_bw : net_bw / g,
		                                  m, s);
	} else {
		/* one ring over every GPU: as fast as its slowest link */
		double bw = g > 1 && intra_bw < net_bw ? intra_bw : net_bw;
		out->net_comm_s = ddl_model_level(n, bytes, bw, m, s);
	}
	double comm = out->ic_comm_s + out->net_comm_s;
	out->hidden_s = ddl_model_hidden(p, comm, out->compute_s);
	double hidden = out->hidden_s;
	double keep = comm > 0 ? 1 - hidden / comm : 0;
	out->ic_stall_s = out->ic_comm_s * keep;
	out->net_stall_s = out->net_comm_s * keep;
	out->iteration_s =
	        out->compute_s + out->data_s + out->idle_s + out->ic_stall_s + out->net_stall_s;
}
