/*
 * The built-in slowdown table: how much slower a model trains when its
 * GPUs span several machines of one rack, or several racks, than on one
 * machine. Loaders attach these figures to each job by model name (a trace
 * may override them: our CSV's slowdown_* columns, later a ddlprof
 * profile's job.sensitivity.slowdown); the engine turns them into speed.
 *
 * Where the figures come from. Only the RANKING is published: the Tiresias
 * paper (Gu et al., NSDI 2019, its study of placement sensitivity) measured
 * that models with large, skewed tensors (VGG family, AlexNet) slow down
 * markedly when spread over machines, while ResNet and Inception barely do;
 * the Gandiva paper (Xiao et al., OSDI 2018, its study of intra-server
 * locality) reports the same sensitivity varying widely across models.
 * EVERY NUMBER below is our assumption, placed on that ranking by the
 * bytes a model all-reduces each iteration (its parameter count, from the
 * model's own paper) against how much compute an iteration has, at the
 * reference bandwidths (DDL_SIM_REF_BW_RACK 100 Gbit/s within a rack,
 * DDL_SIM_REF_BW_CLUSTER 40 Gbit/s across racks). None is a measurement;
 * the man page's SLOWDOWN TABLE says the same. Replace them with profiled
 * figures (ddlprof-sim --profiles) when you have them.
 */
#include <string.h>
#include <strings.h>

#include "sim.h"

static const struct ddl_sim_model ddl_sim_models[] = {
	/* name          machine rack  cluster */
	/* Tiresias: sensitive (large fully-connected layers). Assumed ~40%
	 * of an iteration communicating in a rack: AlexNet 61M parameters
	 * with little convolution compute, VGG16 138M with more. */
	{"alexnet", {1.0, 1.60, 2.00}},
	{"vgg", {1.0, 1.50, 1.90}},
	/* Tiresias: insensitive (small, even tensors, compute-bound).
	 * Assumed a few percent: ResNet-50 25.6M, Inception-v3 23.8M,
	 * GoogLeNet 6.8M parameters; other ResNet depths a little more. */
	{"resnet50", {1.0, 1.05, 1.10}},
	{"resnet", {1.0, 1.07, 1.15}},
	{"inception", {1.0, 1.03, 1.08}},
	{"googlenet", {1.0, 1.03, 1.08}},
	/* Not in Tiresias or Gandiva's tables. Assumed from parameter
	 * counts (BERT-large 340M, GPT-2 1.5B, Transformer 65M base to 213M
	 * big), tempered by their heavier compute per step. */
	{"bert", {1.0, 1.30, 1.60}},
	{"gpt2", {1.0, 1.40, 1.80}},
	{"transformer", {1.0, 1.25, 1.50}},
	/* No published figure and sizes that vary by configuration: a
	 * middle value, our assumption. */
	{"lstm", {1.0, 1.20, 1.40}},
	{"deepspeech", {1.0, 1.20, 1.40}},
};

/* Unknown models: mildly sensitive (our assumption: most jobs in the
 * published traces are small, and small jobs communicate little). */
static const double ddl_sim_default_slow[DDL_SIM_LEVELS] = {1.0, 1.10, 1.20};

const struct ddl_sim_model *ddl_sim_model_table(size_t *n)
{
	*n = sizeof ddl_sim_models / sizeof ddl_sim_models[0];
	return ddl_sim_models;
}

int ddl_sim_model_slowdown(const char *model, double slow[DDL_SIM_LEVELS])
{
	for (size_t i = 0; i < sizeof ddl_sim_models / sizeof ddl_sim_models[0]; i++) {
		const char *name = ddl_sim_models[i].name;
		if (!strncasecmp(model, name, strlen(name))) {
			memcpy(slow, ddl_sim_models[i].slow, sizeof ddl_sim_models[i].slow);
			return 1;
		}
	}
	memcpy(slow, ddl_sim_default_slow, sizeof ddl_sim_default_slow);
	return 0;
}
