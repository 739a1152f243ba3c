# ddlprof: plain GNU make. `make` builds build/bin and build/lib; see README.
PREFIX ?= /usr/local
DESTDIR ?=
VERSION := 0.1.0

CC ?= cc
CFLAGS ?= -O2 -g
# make SAN=1 B=build-san: tools and tests under AddressSanitizer and
# UndefinedBehaviorSanitizer; the preload library under UBSan only (ASan
# must come first in a process, which a preloaded library cannot promise).
ifeq ($(SAN),1)
TOOL_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
LIB_SAN := -fsanitize=undefined -fno-sanitize-recover=undefined
endif
FUZZ_SECONDS ?= 60
WARN := -std=c11 -Wall -Wextra -Werror -Wno-missing-field-initializers -Wno-format-truncation
CPPFLAGS += -D_GNU_SOURCE -Iinclude -DDDLPROF_VERSION=\"$(VERSION)\"
B ?= build

# Quiet build lines, as the Linux kernel's kbuild prints them
# ("  CC      libddlprof/core.c"); make V=1 prints the whole commands, make -s
# neither.
V ?= 0
ifeq ($(V),1)
say :=
else ifneq ($(findstring s,$(firstword -$(MAKEFLAGS))),)
say := @
else
say = @printf '  %-7s %s\n' '$(1)' '$(2)';
endif

# Optional libraries of the tools; the preload library itself needs libc only.
JANSSON_LIBS := $(shell pkg-config --libs jansson 2>/dev/null || echo -ljansson)
ZSTD_LIBS := $(shell pkg-config --libs libzstd 2>/dev/null || echo -lzstd)
LZ4_LIBS := $(shell pkg-config --libs liblz4 2>/dev/null || echo -llz4)
# ddlprof-report --sqlite: Debian's libsqlite3 (libsqlite3-dev).
SQLITE_LIBS := $(shell pkg-config --libs sqlite3 2>/dev/null || echo -lsqlite3)

LIB_SRC := $(wildcard libddlprof/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(B)/obj/%.o)
READ_SRC := $(wildcard analyzer/trace_*.c)
READ_OBJ := $(READ_SRC:%.c=$(B)/obj/%.o)
REPORT_SRC := $(filter-out $(READ_SRC),$(wildcard analyzer/*.c))
REPORT_OBJ := $(REPORT_SRC:%.c=$(B)/obj/%.o)
SIM_SRC := $(wildcard scheduler/*.c)
SIM_OBJ := $(SIM_SRC:%.c=$(B)/obj/%.o)
REC_SRC := $(wildcard recommender/*.c)
REC_OBJ := $(REC_SRC:%.c=$(B)/obj/%.o)

# The GPU path. CUDA headers (and nvcc) from CUDA_HOME; without them the
# library is built without its CUDA and NCCL wrappers and the GPU examples
# are skipped. Nothing here links the library against CUDA: it is found at
# run time.
CUDA_HOME ?= /usr/local/cuda
HAVE_CUDA := $(if $(wildcard $(CUDA_HOME)/include/cuda_runtime_api.h),1)
NVCC ?= $(wildcard $(CUDA_HOME)/bin/nvcc)
# Turing's PTX (any newer GPU compiles it at load) and Hopper's own code.
NVCC_ARCH ?= -gencode arch=compute_75,code=[sm_75,compute_75] -gencode arch=compute_90,code=sm_90
ifeq ($(HAVE_CUDA),1)
CUDA_CPPFLAGS := -DDDL_HAVE_CUDA -isystem $(CUDA_HOME)/include
CUDA_LIBDIR := $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/lib))
EMU_SRC := $(wildcard kernels/emu/*.c)
EMU_OBJ := $(EMU_SRC:%.c=$(B)/obj/%.o)
EMU_LIB := $(if $(EMU_SRC),$(B)/lib/libddlemu.so)
SYNTH := $(if $(wildcard examples/ddlsynth.c),$(B)/examples/ddlsynth $(if $(NVCC),$(B)/examples/ddlsynth-gpu))
endif
TEST_SRC := $(wildcard tests/*.c)
PROG_SRC := $(wildcard tests/progs/*.c)
EXAMPLE_SRC := $(filter-out examples/ddlsynth.c examples/mpi_allreduce.c,$(wildcard examples/*.c))
# The MPI example, only where Open MPI's (or another MPI's) mpicc is found.
MPICC := $(shell command -v mpicc 2>/dev/null)
BENCH_SRC := $(if $(HAVE_CUDA),$(wildcard bench/*.c),$(filter-out bench/launch.c,$(wildcard bench/*.c)))

BINS := $(B)/bin/ddlprof $(B)/bin/ddlprof-report $(if $(SIM_SRC),$(B)/bin/ddlprof-sim) \
	$(if $(REC_SRC),$(B)/bin/ddlprof-recommend)
# The Python hook (python/): copied beside the library, where the launcher finds it.
PY_SRC := $(wildcard python/*.py python/ddlprof_hook/*.py)
PY_OUT := $(PY_SRC:python/%=$(B)/lib/ddlprof/python/%)
# ... compiled where a python3 is found, so processes that may not write
# there (an installed prefix, PYTHONDONTWRITEBYTECODE) need not compile it
PYTHON3 := $(shell command -v python3 2>/dev/null)
PY_PYC := $(if $(PYTHON3),$(B)/lib/ddlprof/python/.compiled)
LIBS := $(B)/lib/libddlprof.so $(B)/lib/libddlread.a $(EMU_LIB) $(PY_OUT) $(PY_PYC)
PROGS := $(PROG_SRC:tests/progs/%.c=$(B)/tests/progs/%)
# Test programs on the real CUDA runtime and NCCL (they run without a GPU too).
GPU_TEST_SRC := $(if $(HAVE_CUDA),$(wildcard tests/gpu/*.c))
PROGS += $(GPU_TEST_SRC:tests/gpu/%.c=$(B)/tests/gpu/%)
# Test programs on MPI (tests/t_mpi.c), where mpicc is found.
MPI_TEST_SRC := $(if $(MPICC),$(wildcard tests/mpi/*.c))
PROGS += $(MPI_TEST_SRC:tests/mpi/%.c=$(B)/tests/mpi/%)
# A stand-in libcupti fed by the emulation, to test the CUPTI back end without a GPU.
PROGS += $(if $(EMU_LIB),$(if $(wildcard tests/cupti/fakecupti.c),$(B)/tests/cupti/libcupti.so))
# the big synthetic job's trace writer, for the report of many ranks
PROGS += $(B)/bench/bigtrace
EXAMPLES := $(EXAMPLE_SRC:examples/%.c=$(B)/examples/%) \
	$(if $(MPICC),$(if $(wildcard examples/mpi_allreduce.c),$(B)/examples/mpi_allreduce))
BENCHES := $(BENCH_SRC:bench/%.c=$(B)/bench/%) $(if $(HAVE_CUDA),$(B)/bench/libfakecudart.so) \
	$(if $(HAVE_CUDA),$(if $(NVCC),$(B)/bench/launch_gpu))

# A recipe of its own, so that a build with nothing to do says nothing (make
# demo's output is the demo's).
all: $(LIBS) $(BINS) $(EXAMPLES) $(SYNTH)
	@:

$(B)/obj/libddlprof/%.o: libddlprof/%.c $(wildcard libddlprof/*.h include/ddlprof/*.h)
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(CPPFLAGS) $(CUDA_CPPFLAGS) $(WARN) $(CFLAGS) $(LIB_SAN) -fPIC -fvisibility=hidden -ftls-model=initial-exec -c $< -o $@

# gloo's C++ exceptions (a peer gone) pass through its wrappers' frames.
$(B)/obj/libddlprof/gloo.o: CFLAGS += -fexceptions

# The CPU emulation of the CUDA runtime and NCCL subset (DESIGN.md section 9):
# a shared library exporting the real API names, so the preload library
# interposes on it exactly as on libcudart and libnccl.
$(B)/obj/kernels/%.o: kernels/%.c $(wildcard kernels/*.h kernels/emu/*.h)
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(CPPFLAGS) $(CUDA_CPPFLAGS) -Ikernels $(WARN) $(CFLAGS) $(LIB_SAN) -fPIC -c $< -o $@

$(B)/lib/libddlemu.so: $(EMU_OBJ)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(LIB_SAN) -shared -Wl,-soname,libddlemu.so -o $@ $^ -lpthread -lm

# ddlsynth on the emulation, and on the real CUDA runtime and NCCL when nvcc
# is here (it builds in CI; it runs only where there is a GPU).
$(B)/examples/ddlsynth: examples/ddlsynth.c $(B)/obj/kernels/emu_kernels.o $(EMU_LIB) kernels/kernels.h
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) $(CPPFLAGS) $(CUDA_CPPFLAGS) -Ikernels $(WARN) $(CFLAGS) $(LIB_SAN) -pthread -o $@ examples/ddlsynth.c \
		$(B)/obj/kernels/emu_kernels.o -L$(B)/lib -lddlemu -Wl,-rpath,'$$ORIGIN/../lib' -lm

$(B)/obj/kernels/kernels_cu.o: kernels/kernels.cu kernels/kernels.h
	@mkdir -p $(@D)
	$(call say,NVCC,$<)$(NVCC) -O2 $(NVCC_ARCH) -Ikernels -Xcompiler -fPIC -c $< -o $@

$(B)/examples/ddlsynth-gpu: examples/ddlsynth.c $(B)/obj/kernels/kernels_cu.o kernels/kernels.h
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) $(CPPFLAGS) $(CUDA_CPPFLAGS) -DDDL_REAL_CUDA -Ikernels $(WARN) $(CFLAGS) -pthread -o $@ examples/ddlsynth.c \
		$(B)/obj/kernels/kernels_cu.o -L$(CUDA_LIBDIR) -lcudart -lnccl -Wl,-rpath,$(CUDA_LIBDIR) -lstdc++ -lm

$(B)/obj/%.o: %.c $(wildcard include/ddlprof/*.h launcher/*.h analyzer/*.h scheduler/*.h recommender/*.h)
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(CPPFLAGS) -Ianalyzer -Ischeduler -Irecommender $(WARN) $(CFLAGS) $(TOOL_SAN) -c $< -o $@

$(B)/lib/libddlprof.so: $(LIB_OBJ)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(LIB_SAN) -shared -Wl,-z,now -Wl,-soname,libddlprof.so -o $@ $^ -ldl -lpthread

$(B)/lib/ddlprof/python/%.py: python/%.py
	@mkdir -p $(@D)
	$(call say,CP,$@)cp $< $@

$(B)/lib/ddlprof/python/.compiled: $(PY_OUT)
	$(call say,PYC,$(B)/lib/ddlprof/python)$(PYTHON3) -m compileall -q $(B)/lib/ddlprof/python
	@touch $@

$(B)/lib/libddlread.a: $(READ_OBJ)
	@mkdir -p $(@D)
	$(call say,AR,$@)$(AR) rcs $@ $^

# The launcher needs libc only: it reads the headers of traces itself (trace.h).
$(B)/bin/ddlprof: $(B)/obj/launcher/ddlprof.o
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(TOOL_SAN) -o $@ $^

$(B)/bin/ddlprof-report: $(REPORT_OBJ) $(B)/lib/libddlread.a
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(TOOL_SAN) -o $@ $^ $(JANSSON_LIBS) $(SQLITE_LIBS) $(ZSTD_LIBS) $(LZ4_LIBS) -lstdc++ -lm

$(B)/bin/ddlprof-recommend: $(REC_OBJ)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(TOOL_SAN) -o $@ $^ $(JANSSON_LIBS) -lm

$(B)/bin/ddlprof-sim: $(SIM_OBJ)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(TOOL_SAN) -o $@ $^ $(JANSSON_LIBS) -lm

$(B)/tests/progs/%: tests/progs/%.c tests/progs/progs.h
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) -Iinclude $(WARN) $(CFLAGS) -pthread -o $@ $<

$(B)/tests/gpu/%: tests/gpu/%.c
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) $(CPPFLAGS) $(CUDA_CPPFLAGS) $(WARN) $(CFLAGS) -pthread -o $@ $< \
		-L$(CUDA_LIBDIR) -lcudart -lnccl -Wl,-rpath,$(CUDA_LIBDIR)

$(B)/tests/cupti/libcupti.so: tests/cupti/fakecupti.c kernels/ddlemu.h
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) $(CPPFLAGS) $(CUDA_CPPFLAGS) -Ikernels $(WARN) $(CFLAGS) -fPIC -shared -o $@ $< -lpthread -ldl

$(B)/examples/mpi_allreduce: examples/mpi_allreduce.c
	@mkdir -p $(@D)
	$(call say,MPICC,$@)$(MPICC) $(CPPFLAGS) $(WARN) $(CFLAGS) -o $@ $<

$(B)/tests/mpi/%: tests/mpi/%.c
	@mkdir -p $(@D)
	$(call say,MPICC,$@)$(MPICC) $(CPPFLAGS) $(WARN) $(CFLAGS) -o $@ $<

$(B)/examples/%: examples/%.c
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) -pthread -o $@ $< -lm

$(B)/bench/libfakecudart.so: bench/lib/fakecudart.c
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) $(CPPFLAGS) $(CUDA_CPPFLAGS) $(WARN) -O2 -fPIC -shared -o $@ $<

$(B)/bench/launch: bench/launch.c
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) $(CPPFLAGS) $(CUDA_CPPFLAGS) $(WARN) $(CFLAGS) -o $@ $< -ldl

# A real kernel launched through the real (shared) libcudart: for the GPU machine.
$(B)/bench/launch_gpu: bench/launch_gpu.cu
	@mkdir -p $(@D)
	$(call say,NVCC,$@)$(NVCC) -O2 $(NVCC_ARCH) -cudart shared -Xlinker -rpath,$(CUDA_LIBDIR) -o $@ $< -ldl

$(B)/bench/%: bench/%.c $(B)/lib/libddlread.a
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) $(CPPFLAGS) -Ianalyzer $(WARN) $(CFLAGS) -pthread -o $@ $< $(B)/lib/libddlread.a $(ZSTD_LIBS) $(LZ4_LIBS) -ldl

# (the tests read each command's option table: launcher/launcher_opts.h, ...)
$(B)/tests/ddltest: $(TEST_SRC) analyzer/autocorr.c analyzer/ivset.c analyzer/keep.c analyzer/slowiters.c $(B)/lib/libddlread.a $(wildcard tests/*.h include/ddlprof/*.h analyzer/*.h) \
	$(wildcard launcher/*_opts.h scheduler/*_opts.h recommender/*_opts.h)
	@mkdir -p $(@D)
	$(call say,CCLD,$@)$(CC) $(CPPFLAGS) -Ianalyzer -Itests $(WARN) $(CFLAGS) $(TOOL_SAN) -pthread -o $@ $(TEST_SRC) analyzer/autocorr.c analyzer/ivset.c analyzer/keep.c analyzer/slowiters.c \
		$(B)/lib/libddlread.a $(JANSSON_LIBS) $(ZSTD_LIBS) $(LZ4_LIBS) -lz -ldl -lm

# The Debian packages of each target (scripts/install-deps.sh lists them):
# the build's for make, make demo and make tsan; the tests' too for make
# check; clang for make fuzz. As root, what is missing is installed; make
# deps: every target's.
deps:
	@scripts/install-deps.sh

deps-build deps-demo deps-check deps-fuzz deps-bench:
	@scripts/install-deps.sh $(@:deps-%=%)

# Builds inside check run in parallel (JOBS, default: the machine's cores).
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

check: deps-check
	@$(MAKE) --no-print-directory -j$(JOBS) all $(PROGS) $(B)/tests/ddltest
	$(B)/tests/ddltest
	@echo "== the same tests under AddressSanitizer and UndefinedBehaviorSanitizer"
	@$(MAKE) --no-print-directory -j$(JOBS) SAN=1 B=build-san all $(PROGS:$(B)/%=build-san/%) \
		build-san/tests/ddltest
	ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		build-san/tests/ddltest
	@echo "== the library's hot path under ThreadSanitizer"
	@$(MAKE) --no-print-directory tsan

# libFuzzer (clang) on the trace reader, the report pipeline, the instance
# catalog, the job-trace loaders, ddlprof-sim's profile loader and
# --slurm's --wait-history, FUZZ_SECONDS each, from the seeds in
# tests/fuzz (tests/t_fuzzseeds.c reads every seed in the ordinary build).
FUZZ_CC := clang $(CPPFLAGS) $(filter-out -Wno-format-truncation,$(WARN)) -g -O1 \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_RUN = -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	-artifact_prefix=$(B)/fuzz/crashes/
# FUZZ_REPORT=0 leaves out the report pipeline (fuzz_report), the slowest
# target to build and run (about 100 execs/s).
FUZZ_REPORT ?= 1
FUZZ_TARGETS := $(B)/fuzz/fuzz_trace $(if $(filter 1,$(FUZZ_REPORT)),$(B)/fuzz/fuzz_report) \
	$(if $(REC_SRC),$(B)/fuzz/fuzz_catalog $(B)/fuzz/fuzz_slurm) \
	$(if $(SIM_SRC),$(B)/fuzz/fuzz_jobs $(B)/fuzz/fuzz_profile)
fuzz: deps-fuzz $(FUZZ_TARGETS)
	@mkdir -p $(B)/fuzz/crashes $(foreach t,$(FUZZ_TARGETS),$(t)_corpus)
	$(B)/fuzz/fuzz_trace $(FUZZ_RUN) $(B)/fuzz/fuzz_trace_corpus tests/fuzz/seeds
	$(if $(filter 1,$(FUZZ_REPORT)),$(B)/fuzz/fuzz_report $(FUZZ_RUN) \
		$(B)/fuzz/fuzz_report_corpus tests/fuzz/report_seeds tests/fuzz/seeds)
	$(if $(REC_SRC),$(B)/fuzz/fuzz_catalog $(FUZZ_RUN) $(B)/fuzz/fuzz_catalog_corpus \
		tests/fuzz/catalog_seeds)
	$(if $(REC_SRC),$(B)/fuzz/fuzz_slurm $(FUZZ_RUN) -dict=tests/fuzz/report.dict \
		$(B)/fuzz/fuzz_slurm_corpus \
		tests/fuzz/slurm_seeds)
	$(if $(SIM_SRC),$(B)/fuzz/fuzz_jobs $(FUZZ_RUN) -dict=tests/fuzz/jobs.dict \
		$(B)/fuzz/fuzz_jobs_corpus tests/fuzz/jobs_seeds)
	$(if $(SIM_SRC),$(B)/fuzz/fuzz_profile $(FUZZ_RUN) -dict=tests/fuzz/report.dict \
		$(B)/fuzz/fuzz_profile_corpus \
		tests/fuzz/profile_seeds)

$(B)/fuzz/fuzz_catalog: tests/fuzz/fuzz_catalog.c $(filter-out recommender/recommend.c recommender/search.c recommender/output.c,$(REC_SRC)) $(wildcard recommender/*.h)
	@mkdir -p $(@D)
	$(call say,FUZZ,$@)$(FUZZ_CC) -Irecommender -o $@ tests/fuzz/fuzz_catalog.c recommender/catalog.c \
		recommender/profile.c recommender/spawn.c recommender/model.c $(JANSSON_LIBS) -lm

$(B)/fuzz/fuzz_slurm: tests/fuzz/fuzz_slurm.c recommender/slurm.c recommender/spawn.c $(wildcard recommender/*.h)
	@mkdir -p $(@D)
	$(call say,FUZZ,$@)$(FUZZ_CC) -Irecommender -o $@ tests/fuzz/fuzz_slurm.c recommender/slurm.c recommender/spawn.c \
		$(JANSSON_LIBS) -lm

# ddlprof-sim's job-trace loaders; the first input byte picks the format.
$(B)/fuzz/fuzz_jobs: tests/fuzz/fuzz_jobs.c $(wildcard scheduler/load_*.c scheduler/*.h) scheduler/trace.c scheduler/models.c analyzer/progress.h
	@mkdir -p $(@D)
	$(call say,FUZZ,$@)$(FUZZ_CC) -Ischeduler -Ianalyzer -o $@ tests/fuzz/fuzz_jobs.c $(wildcard scheduler/load_*.c) \
		scheduler/trace.c scheduler/models.c $(JANSSON_LIBS) -lm

$(B)/fuzz/fuzz_profile: tests/fuzz/fuzz_profile.c scheduler/load_profile.c $(wildcard scheduler/*.h) analyzer/progress.h
	@mkdir -p $(@D)
	$(call say,FUZZ,$@)$(FUZZ_CC) -Ischeduler -Ianalyzer -o $@ tests/fuzz/fuzz_profile.c scheduler/load_profile.c $(JANSSON_LIBS) -lm

$(B)/fuzz/fuzz_trace: tests/fuzz/fuzz_trace.c tests/fuzz/trace_mutator.h $(READ_SRC) $(wildcard analyzer/*.h include/ddlprof/*.h)
	@mkdir -p $(@D)
	$(call say,FUZZ,$@)$(FUZZ_CC) -Ianalyzer -o $@ tests/fuzz/fuzz_trace.c $(READ_SRC) $(ZSTD_LIBS) $(LZ4_LIBS)

# What analyzer/report.c's main() calls, on one or two fuzzed traces.
$(B)/fuzz/fuzz_report: tests/fuzz/fuzz_report.c tests/fuzz/trace_mutator.h $(filter-out analyzer/report.c,$(wildcard analyzer/*.c)) $(wildcard analyzer/*.h include/ddlprof/*.h)
	@mkdir -p $(@D)
	$(call say,FUZZ,$@)$(FUZZ_CC) -Ianalyzer -o $@ tests/fuzz/fuzz_report.c $(filter-out analyzer/report.c,$(wildcard analyzer/*.c)) \
		$(JANSSON_LIBS) $(SQLITE_LIBS) $(ZSTD_LIBS) $(LZ4_LIBS) -lstdc++ -lm

# ThreadSanitizer over the preload library's hot path (tests/tsan/hot.c says
# how) and its MPI wrappers (tests/tsan/mpi_hot.c): the library's sources
# compiled into the test program with gcc, whose shared libtsan then sits
# behind the wrappers; a preloaded TSan library cannot start before the
# runtime. A build folder of its own. Where the CUDA
# headers are, the GPU path too (tests/tsan/gpu_hot.c): the library with its
# CUDA and NCCL wrappers, compiled the same way into a program linked against
# the emulation (libddlemu), itself built with TSan.
TSAN_B ?= build-tsan
TSAN_CC ?= gcc
TSAN_CFLAGS := $(CPPFLAGS) -Ianalyzer $(WARN) -O1 -g -fsanitize=thread
TSAN_RUN := DDLPROF_DISABLE=1 TSAN_OPTIONS="halt_on_error=0 exitcode=66 $(TSAN_OPTIONS)"
TSAN_DEPS := tests/tsan/harness.c tests/tsan/harness.h $(LIB_SRC) $(READ_SRC) \
	$(wildcard libddlprof/*.h analyzer/*.h include/ddlprof/*.h)
TSAN_GPU := $(if $(EMU_SRC),$(TSAN_B)/tests/tsan/gpu_hot)
tsan: deps-build $(TSAN_B)/tests/tsan/hot $(TSAN_B)/tests/tsan/mpi_hot $(TSAN_GPU) \
		$(TSAN_B)/bin/ddlprof-report $(B)/bench/bigtrace $(if $(EMU_SRC),all)
	$(TSAN_RUN) $(TSAN_B)/tests/tsan/hot
	$(TSAN_RUN) $(TSAN_B)/tests/tsan/mpi_hot
	$(if $(TSAN_GPU),$(TSAN_RUN) $(TSAN_GPU))
	@rm -rf $(TSAN_B)/bigtrace && $(B)/bench/bigtrace $(TSAN_B)/bigtrace 12 20000 >/dev/null
	$(TSAN_RUN) $(TSAN_B)/bin/ddlprof-report -q --threads 4 --json $(TSAN_B)/bigtrace >$(TSAN_B)/report.json
	$(TSAN_RUN) $(TSAN_B)/bin/ddlprof-report -q --threads 4 --html $(TSAN_B)/bigtrace >$(TSAN_B)/report.html
	$(TSAN_RUN) $(TSAN_B)/bin/ddlprof-report -q --threads 4 --memory 0 --json $(TSAN_B)/bigtrace \
		>$(TSAN_B)/report0.json && cmp $(TSAN_B)/report.json $(TSAN_B)/report0.json
	$(if $(EMU_SRC),@rm -rf $(TSAN_B)/synth && $(B)/bin/ddlprof -q -o $(TSAN_B)/synth -- $(B)/examples/ddlsynth \
		--ranks 4 --ranks-per-host 2 --layers 4 --params-per-layer 200k --compute-ms 2 --iterations 8 --markers >/dev/null)
	$(if $(EMU_SRC),$(TSAN_RUN) $(TSAN_B)/bin/ddlprof-report -q --threads 4 --json $(TSAN_B)/synth >$(TSAN_B)/synth.json)
	$(if $(EMU_SRC),$(TSAN_RUN) $(TSAN_B)/bin/ddlprof-report -q --threads 4 --memory 0 --json $(TSAN_B)/synth \
		>$(TSAN_B)/synth0.json && cmp $(TSAN_B)/synth.json $(TSAN_B)/synth0.json)

# The report's per-process stages on several threads (analyzer/parallel.c),
# under ThreadSanitizer, on bench/bigtrace's socket job of 12 ranks and,
# with the emulation, on a GPU job of ddlsynth; and again with --memory 0,
# every hold reading its events again and the socket records spilled
# (analyzer/trace_events.c, flight.c), the same report.
$(TSAN_B)/bin/ddlprof-report: $(REPORT_SRC) $(READ_SRC) $(wildcard analyzer/*.h include/ddlprof/*.h)
	@mkdir -p $(@D)
	$(call say,TSAN,$@)$(TSAN_CC) $(TSAN_CFLAGS) -pthread -o $@ $(REPORT_SRC) $(READ_SRC) \
		$(JANSSON_LIBS) $(SQLITE_LIBS) $(ZSTD_LIBS) $(LZ4_LIBS) -lstdc++ -lm

$(TSAN_B)/tests/tsan/hot: tests/tsan/hot.c $(TSAN_DEPS)
	@mkdir -p $(@D)
	$(call say,TSAN,$@)$(TSAN_CC) $(TSAN_CFLAGS) -ftls-model=initial-exec -pthread -o $@ tests/tsan/hot.c \
		tests/tsan/harness.c $(LIB_SRC) $(READ_SRC) -ldl $(ZSTD_LIBS) $(LZ4_LIBS)

# The MPI wrappers, their real functions faked (tests/tsan/mpi_hot.c says how).
$(TSAN_B)/tests/tsan/mpi_hot: tests/tsan/mpi_hot.c $(TSAN_DEPS)
	@mkdir -p $(@D)
	$(call say,TSAN,$@)$(TSAN_CC) $(TSAN_CFLAGS) -ftls-model=initial-exec -pthread -o $@ tests/tsan/mpi_hot.c \
		tests/tsan/harness.c $(LIB_SRC) $(READ_SRC) -ldl $(ZSTD_LIBS) $(LZ4_LIBS)

$(TSAN_B)/lib/libddlemu.so: $(EMU_SRC) $(wildcard kernels/*.h kernels/emu/*.h)
	@mkdir -p $(@D)
	$(call say,TSAN,$@)$(TSAN_CC) $(TSAN_CFLAGS) $(CUDA_CPPFLAGS) -Ikernels -fPIC -shared -Wl,-soname,libddlemu.so \
		-o $@ $(EMU_SRC) -lpthread -lm

$(TSAN_B)/tests/tsan/gpu_hot: tests/tsan/gpu_hot.c $(TSAN_DEPS) $(TSAN_B)/lib/libddlemu.so
	@mkdir -p $(@D)
	$(call say,TSAN,$@)$(TSAN_CC) $(TSAN_CFLAGS) $(CUDA_CPPFLAGS) -Ikernels -ftls-model=initial-exec -pthread -o $@ \
		tests/tsan/gpu_hot.c tests/tsan/harness.c $(LIB_SRC) $(READ_SRC) -L$(TSAN_B)/lib -lddlemu \
		-Wl,-rpath,'$$ORIGIN/../../lib' -ldl $(ZSTD_LIBS) $(LZ4_LIBS) -lm

.PHONY: tsan

demo: deps-demo
	@$(MAKE) --no-print-directory all
	@scripts/demo.sh

bench: deps-bench
	@$(MAKE) --no-print-directory all $(BENCHES)
	@scripts/bench.sh

install: all
	install -D -m 0755 $(B)/bin/ddlprof $(DESTDIR)$(PREFIX)/bin/ddlprof
	install -D -m 0755 $(B)/bin/ddlprof-report $(DESTDIR)$(PREFIX)/bin/ddlprof-report
	$(if $(SIM_SRC),install -D -m 0755 $(B)/bin/ddlprof-sim $(DESTDIR)$(PREFIX)/bin/ddlprof-sim)
	$(if $(REC_SRC),install -D -m 0755 $(B)/bin/ddlprof-recommend $(DESTDIR)$(PREFIX)/bin/ddlprof-recommend)
	$(if $(REC_SRC),for f in recommender/catalog/*.json; do \
		install -D -m 0644 $$f $(DESTDIR)$(PREFIX)/share/ddlprof/catalog/$${f##*/}; done)
	install -D -m 0755 $(B)/lib/libddlprof.so $(DESTDIR)$(PREFIX)/lib/libddlprof.so
	install -D -m 0644 include/ddlprof/trace.h $(DESTDIR)$(PREFIX)/include/ddlprof/trace.h
	install -D -m 0644 include/ddlprof/ddlprof.h $(DESTDIR)$(PREFIX)/include/ddlprof/ddlprof.h
	install -D -m 0644 include/ddlprof/python.h $(DESTDIR)$(PREFIX)/include/ddlprof/python.h
	for f in $(PY_SRC); do \
		install -D -m 0644 $$f $(DESTDIR)$(PREFIX)/lib/ddlprof/$$f; done
	$(if $(PYTHON3),$(PYTHON3) -m compileall -q $(DESTDIR)$(PREFIX)/lib/ddlprof/python)
	for m in $(wildcard man/*.[1-9]); do \
		install -D -m 0644 $$m $(DESTDIR)$(PREFIX)/share/man/man$${m##*.}/$${m##*/}; done

clean:
	rm -rf $(B) build-san build-tsan

.PHONY: all deps deps-build deps-demo deps-check deps-fuzz deps-bench check demo bench install clean fuzz
