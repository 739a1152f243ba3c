# ddlprof: plain GNU make. `make` builds build/bin and build/lib; see README.
PREFIX ?= /usr/local
DESTDIR ?=
VERSION := 0.1.0

CC ?= cc
CFLAGS ?= -O2 -g
WARN := -std=c11 -Wall -Wextra -Werror -Wno-missing-field-initializers -Wno-format-truncation
CPPFLAGS += -D_GNU_SOURCE -Iinclude -DDDLPROF_VERSION=\"$(VERSION)\"
B := build

# Optional libraries of the tools; the preload library itself needs libc only.
JANSSON_LIBS := $(shell pkg-config --libs jansson 2>/dev/null || echo -ljansson)
ZSTD_LIBS := $(shell pkg-config --libs libzstd 2>/dev/null || echo -lzstd)

LIB_SRC := $(wildcard libddlprof/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(B)/obj/%.o)
READ_SRC := $(wildcard analyzer/trace_*.c)
READ_OBJ := $(READ_SRC:%.c=$(B)/obj/%.o)
REPORT_SRC := $(filter-out $(READ_SRC),$(wildcard analyzer/*.c))
REPORT_OBJ := $(REPORT_SRC:%.c=$(B)/obj/%.o)
TEST_SRC := $(wildcard tests/*.c)
PROG_SRC := $(wildcard tests/progs/*.c)
EXAMPLE_SRC := $(wildcard examples/*.c)
BENCH_SRC := $(wildcard bench/*.c)

BINS := $(B)/bin/ddlprof $(B)/bin/ddlprof-report
LIBS := $(B)/lib/libddlprof.so $(B)/lib/libddlread.a
PROGS := $(PROG_SRC:tests/progs/%.c=$(B)/tests/progs/%)
EXAMPLES := $(EXAMPLE_SRC:examples/%.c=$(B)/examples/%)
BENCHES := $(BENCH_SRC:bench/%.c=$(B)/bench/%)

all: $(LIBS) $(BINS) $(EXAMPLES)

$(B)/obj/libddlprof/%.o: libddlprof/%.c $(wildcard libddlprof/*.h include/ddlprof/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) -fPIC -fvisibility=hidden -ftls-model=initial-exec -c $< -o $@

$(B)/obj/%.o: %.c $(wildcard include/ddlprof/*.h analyzer/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ianalyzer $(WARN) $(CFLAGS) -c $< -o $@

$(B)/lib/libddlprof.so: $(LIB_OBJ)
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-z,now -Wl,-soname,libddlprof.so -o $@ $^ -ldl -lpthread

$(B)/lib/libddlread.a: $(READ_OBJ)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^

$(B)/bin/ddlprof: $(B)/obj/launcher/ddlprof.o $(B)/lib/libddlread.a
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(ZSTD_LIBS)

$(B)/bin/ddlprof-report: $(REPORT_OBJ) $(B)/lib/libddlread.a
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(JANSSON_LIBS) $(ZSTD_LIBS) -lm

$(B)/tests/progs/%: tests/progs/%.c tests/progs/progs.h
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CFLAGS) -pthread -o $@ $<

$(B)/examples/%: examples/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) -pthread -o $@ $< -lm

$(B)/bench/%: bench/%.c $(B)/lib/libddlread.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ianalyzer $(WARN) $(CFLAGS) -pthread -o $@ $< $(B)/lib/libddlread.a $(ZSTD_LIBS) -ldl

$(B)/tests/ddltest: $(TEST_SRC) $(B)/lib/libddlread.a $(wildcard tests/*.h include/ddlprof/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ianalyzer -Itests $(WARN) $(CFLAGS) -pthread -o $@ $(TEST_SRC) \
		$(B)/lib/libddlread.a $(JANSSON_LIBS) $(ZSTD_LIBS) -ldl

deps:
	@scripts/install-deps.sh

check: deps
	@$(MAKE) --no-print-directory all $(PROGS) $(B)/tests/ddltest
	$(B)/tests/ddltest

demo: deps
	@$(MAKE) --no-print-directory all
	@scripts/demo.sh

bench: deps
	@$(MAKE) --no-print-directory all $(BENCHES)
	@scripts/bench.sh

install: all
	install -D -m 0755 $(B)/bin/ddlprof $(DESTDIR)$(PREFIX)/bin/ddlprof
	install -D -m 0755 $(B)/bin/ddlprof-report $(DESTDIR)$(PREFIX)/bin/ddlprof-report
	install -D -m 0755 $(B)/lib/libddlprof.so $(DESTDIR)$(PREFIX)/lib/libddlprof.so
	install -D -m 0644 include/ddlprof/trace.h $(DESTDIR)$(PREFIX)/include/ddlprof/trace.h
	for m in $(wildcard man/*.[1-9]); do \
		install -D -m 0644 $$m $(DESTDIR)$(PREFIX)/share/man/man$${m##*.}/$${m##*/}; done

clean:
	rm -rf $(B)

.PHONY: all deps check demo bench install clean
