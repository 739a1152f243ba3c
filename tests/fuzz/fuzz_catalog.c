/*
 * libFuzzer target for ddlprof-recommend's inputs: any bytes as an instance
 * catalog (recommender/catalog.c), and the same bytes as a ddlprof-report/1
 * profile (recommender/profile.c). The loaders must never crash, leak or
 * read out of bounds; a refusal must name the input; a catalog that loads
 * must merge into itself (every entry replaced), and every configuration
 * of it must project to a finite iteration time. Seeds in
 * tests/fuzz/catalog_seeds; built with clang's
 * -fsanitize=fuzzer,address,undefined.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ddl_catalog cat = {0};
	char err[2048] = "";
	if (ddl_catalog_parse(&cat, "fuzz.json", (const char *)data, size, err, sizeof err) < 0) {
		if (strncmp(err, "fuzz.json:", 10))
			abort(); /* every refusal names the file */
		if (cat.ninst || cat.ngpus)
			abort(); /* nothing of a refused file is used */
	} else {
		size_t ninst = cat.ninst, ngpus = cat.ngpus;
		if (ddl_catalog_parse(&cat, "fuzz.json", (const char *)data, size, err, sizeof err) < 0 ||
		    cat.ninst != ninst || cat.ngpus != ngpus)
			abort(); /* the same file again replaces, never adds */
		if (ddl_catalog_finish(&cat, err, sizeof err) == 0) {
			struct ddl_profile p = {0};
			p.ranks = 8;
			p.hosts = 2;
			p.gpus_per_host = 4;
			p.compute_s = 0.3;
			p.data_s = 0.01;
			p.ic_stall_s = 0.05;
			p.grad_bytes = 1e12;
			p.collectives = 1000;
			p.overlap_frac = 0.5;
			struct ddl_settings s = {0};
			s.coef.alpha_s = 1e-5;
			s.coef.beta = 1.15;
			for (size_t i = 0; i < cat.ninst; i++) {
				(void)ddl_catalog_gpu(&cat, cat.inst[i].gpu_model);
				for (int k = 1; k <= 1024; k *= 32)
					for (int h = 0; h < 2; h++) {
						struct ddl_projection out;
						s.allreduce = h ? DDL_AR_HIER : DDL_AR_FLAT;
						s.algo = h ? DDL_TREE : DDL_RING;
						ddl_model_project(&p, &cat.inst[i], k, &s, &out);
						if (!isfinite(out.iteration_s) || out.iteration_s < 0)
							abort();
					}
			}
		} else if (strncmp(err, "fuzz.json:", 10)) {
			abort();
		}
	}
	ddl_catalog_free(&cat);

	struct ddl_profile p;
	if (ddl_profile_parse(&p, "fuzz.json", (const char *)data, size, err, sizeof err) < 0) {
		if (strncmp(err, "fuzz.json:", 10))
			abort();
	} else if (!isfinite(p.grad_bytes) || !isfinite(p.compute_s) || p.iteration_s <= 0 ||
	           p.ranks < 1 || p.hosts < 1 || p.gpus_per_host < 1) {
		abort();
	}
	ddl_profile_free(&p);
	return 0;
}
