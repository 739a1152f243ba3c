/*
 * The built-in slowdown table: how much slower a model trains when its
 * GPUs span several machines of one rack, or several racks, than on one
 * machine. Loaders attach these figures to each job by model name (a trace
 * may override them: our CSV's slowdown_* columns, later a ddlprof
 * profile's job.sensitivity.slowdown); the engine turns them into speed.
 *
 * Where the figures come from. The shape is published: the Tiresias paper
 * (Gu et al., NSDI 2019, section 2.2) measured that models with large,
 * skewed tensors (VGG family, AlexNet) slow down markedly when spread over
 * machines, while ResNet and Inception barely do; the Gandiva paper (Xiao
 * et al., OSDI 2018, section 3.1) reports the same intra-server locality
 * sensitivity varying widely across models. The NUMBERS below are our
 * assumptions chosen to follow that ranking at the reference bandwidths
 * (DDL_SIM_REF_BW_RACK 100 Gbit/s within a rack, DDL_SIM_REF_BW_CLUSTER
 * 40 Gbit/s across racks); they are not measurements. Replace them with
 * profiled figures when you have them.
 */
#include <string.h>
#include <strings.h>

#include "sim.h"

static const struct ddl_sim_model ddl_sim_models[] = {
	/* name          machine rack  cluster */
	/* Large fully-connected layers: ~60% of time communicating once
	 * spread (assumption following Tiresias' VGG/AlexNet finding). */
	{"alexnet", {1.0, 1.60, 2.00}},
	{"vgg", {1.0, 1.50, 1.90}},
	/* Residual/inception nets: small, even tensors, compute-bound
	 * (assumption following Tiresias' ResNet/Inception finding). */
	{"resnet50", {1.0, 1.05, 1.10}},
	{"resnet", {1.0, 1.07, 1.15}},
	{"inception", {1.0, 1.03, 1.08}},
	{"googlenet", {1.0, 1.03, 1.08}},
	/* Language models: assumptions from parameter counts (BERT-large
	 * 340M, GPT-2 1.5B parameters all-reduced every step). */
	{"bert", {1.0, 1.30, 1.60}},
	{"gpt2", {1.0, 1.40, 1.80}},
	{"transformer", {1.0, 1.25, 1.50}},
	{"lstm", {1.0, 1.20, 1.40}},
	{"deepspeech", {1.0, 1.20, 1.40}},
};

/* Unknown models: mildly sensitive (assumption). */
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
