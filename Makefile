# fencegate — a fencing-token enforcing storage proxy.
#
#   make            build bin/fencegate, bin/fencectl, lib/libfencelock.a
#   make run        build and start the proxy on its embedded default (PORT=, LISTEN=)
#   make test       every suite, then one verdict line: N passed, N failed
#   make chaos      the fault campaign over real processes (TRIALS=, UNFENCED=1)
#   make help       every target
#
# Missing Debian packages are installed first by deploy/install-deps.sh.

PKG_CONFIG ?= pkg-config
CC         ?= cc
PREFIX     ?= /usr/local
DESTDIR    ?=
SYSCONFDIR ?= /etc
UNITDIR    ?= $(PREFIX)/lib/systemd/system
DOCDIR     ?= $(PREFIX)/share/doc/fencegate
MANDIR     ?= $(PREFIX)/share/man
VERSION    := 0.1.0
O          ?= .
# O=DIR puts build/, bin/ and lib/ under DIR (parallel work trees share sources).

PKGS    := libevent libevent_openssl libevent_pthreads libcurl openssl libcjson expat
WARN    := -Wall -Wextra -Wshadow -Wformat=2 -Wmissing-prototypes -Wno-unused-parameter
ifeq ($(CI),true)
WARN    += -Werror
endif
CFLAGS  ?= -O2 -g
CPPFLAGS_ALL = -std=c11 -D_GNU_SOURCE -DFENCE_VERSION='"$(VERSION)"' -I. -Iproxy \
	$(WARN) $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
LIBS     = $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null) -lhttp_parser -lpthread -lm
SAN      = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

ifneq ($(V),1)
Q = @
E = @printf '  %-7s %s\n'
else
Q =
E = @true
endif

# --- sources: the folders are the table of contents ------------------------
#   wire/           codecs and AWS wire formats every layer speaks (SigV4, creds)
#   lock/store/     the object-store interface, its fs and S3 backends, dialects, clocks
#   lock/core/      the lock protocol: acquire, renew, release, keeper, mark, self-test
#   lock/lib/       libfencelock's public API (fencelock.h), its symbol map and .pc
#   lock/cli/       fencectl, and its client of the proxy's lock HTTP API
#   policy/         the configuration and permissions
#   proxy/ops/      logs, access log, metrics
#   proxy/http/     connections, parsing, limits, TLS, request lifecycle, upstream
#   proxy/s3/       S3 authentication and aws-chunked bodies
#   proxy/fence/    the verdict, lock registry, object CAS, lock API, barrier
#   proxy/local/    the embedded S3 server over the local-directory store
# Each layer includes only the ones above it in this list (tests/layering.sh).
WIRE_SRC   := $(wildcard wire/*.c)
LOCK_DIRS  := lock/store lock/core lock/lib
LOCK_SRC   := $(WIRE_SRC) $(foreach d,$(LOCK_DIRS),$(wildcard $(d)/*.c))
FENCECTL_SRC := $(wildcard lock/cli/*.c)
PROXY_DIRS := proxy/ops proxy/http proxy/s3 proxy/fence proxy/local
PROXY_SRC  := $(foreach d,$(PROXY_DIRS),$(wildcard $(d)/*.c))
POLICY_SRC := $(wildcard policy/*.c)
CORE_SRC   := $(POLICY_SRC) $(PROXY_SRC)
UNIT_SRC   := $(wildcard tests/unit/*/test_*.c)
ITEST_SRC  := $(wildcard tests/integration/itest_*.c)
FUZZ_SRC   := $(wildcard tests/fuzz/fuzz_*.c)
SIM_SRC    := $(wildcard tests/sim/sim*.c)
HEADERS    := $(wildcard wire/*.h lock/*/*.h policy/*.h proxy/*.h $(addsuffix /*.h,$(PROXY_DIRS)))

LOCK_OBJ   := $(LOCK_SRC:%.c=$(O)/build/obj/%.o)
PIC_OBJ    := $(LOCK_SRC:%.c=$(O)/build/pic/%.o)
SOVERSION  := 0
SHLIB      := $(O)/lib/libfencelock.so.$(SOVERSION)
CORE_OBJ   := $(CORE_SRC:%.c=$(O)/build/obj/%.o)
SAN_OBJ    := $(LOCK_SRC:%.c=$(O)/build/san/%.o) $(CORE_SRC:%.c=$(O)/build/san/%.o)
UNIT_BIN   := $(addprefix $(O)/build/test/,$(notdir $(UNIT_SRC:.c=)))
ITEST_BIN  := $(ITEST_SRC:tests/integration/%.c=$(O)/build/test/%)
FUZZ_BIN   := $(FUZZ_SRC:tests/fuzz/%.c=$(O)/build/fuzz/%)
SIM_BIN    := $(O)/build/test/sim
SEEDS      ?= 100000
# each suite's output and count (tests/suite.py); make test's verdict reads them
RESULTS    := $(abspath $(O)/build/results)
export FENCE_RESULTS = $(RESULTS)

PROGRAMS   := $(O)/bin/fencectl $(O)/bin/fencegate

# keep sanitizer objects between runs (they are prerequisites of pattern rules)
.SECONDARY:

.PHONY: FORCE all deps deps-test deps-bench run test layering man-check man-check-run unit integration bench fuzz fuzz-smoke lint sim sim-smoke \
	chaos chaos-smoke install uninstall clean help
all: deps $(PROGRAMS) $(O)/lib/libfencelock.a $(SHLIB) $(O)/lib/libfencelock.pc \
	$(O)/build/fencegate.service

deps:
	$(Q)deploy/install-deps.sh build
deps-test:
	$(Q)deploy/install-deps.sh test
deps-bench:
	$(Q)deploy/install-deps.sh bench

$(O)/build/obj/%.o: %.c $(HEADERS) | deps
	@mkdir -p $(dir $@)
	$(E) CC $<
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(O)/build/san/%.o: %.c $(HEADERS) | deps-test
	@mkdir -p $(dir $@)
	$(E) CC-SAN $<
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CPPFLAGS) -O1 -g $(SAN) -c -o $@ $<

# the programs link the whole lock layer (build/libfencelock-all.a); the
# installed static library is one relocatable object in which only the
# public API (fencelock.h: fence_*) stays global, so a program that links it
# statically meets none of our internal names (lock_open, store_put, ...)
$(O)/build/libfencelock-all.a: $(LOCK_OBJ)
	@mkdir -p $(O)/build
	$(E) AR $@
	$(Q)rm -f $@ && ar rcs $@ $^

$(O)/lib/libfencelock.a: $(LOCK_OBJ)
	@mkdir -p $(O)/lib $(O)/build
	$(E) AR $@
	$(Q)ld -r -o $(O)/build/fencelock-public.o $^ && \
		objcopy --wildcard --keep-global-symbol='fence_*' $(O)/build/fencelock-public.o && \
		rm -f $@ && ar rcs $@ $(O)/build/fencelock-public.o

# the shared library: soname libfencelock.so.0, only the installed headers'
# functions exported (lock/lib/libfencelock.map)
$(O)/build/pic/%.o: %.c $(HEADERS) | deps
	@mkdir -p $(dir $@)
	$(E) CC-PIC $<
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CPPFLAGS) $(CFLAGS) -fPIC -c -o $@ $<

$(SHLIB): $(PIC_OBJ) lock/lib/libfencelock.map
	@mkdir -p $(O)/lib
	$(E) LD $@
	$(Q)$(CC) -shared -Wl,-soname,libfencelock.so.$(SOVERSION) \
		-Wl,--version-script=lock/lib/libfencelock.map -o $@ $(PIC_OBJ) $(LIBS) $(LDFLAGS)
	$(Q)ln -sf libfencelock.so.$(SOVERSION) $(O)/lib/libfencelock.so

$(O)/lib/libfencelock.pc: lock/lib/libfencelock.pc.in Makefile
	@mkdir -p $(O)/lib
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

FORCE:

# the systemd unit with the installed paths (PREFIX, SYSCONFDIR, UNITDIR, DOCDIR)
$(O)/build/fencegate.service: deploy/systemd/fencegate.service.in Makefile FORCE
	@mkdir -p $(O)/build
	$(Q)sed -e 's|@BINDIR@|$(PREFIX)/bin|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
		-e 's|@UNITDIR@|$(UNITDIR)|g' -e 's|@DOCDIR@|$(DOCDIR)|g' $< > $@.tmp && \
		mv $@.tmp $@

$(O)/bin/fencectl: $(FENCECTL_SRC:%.c=$(O)/build/obj/%.o) $(O)/build/libfencelock-all.a
	@mkdir -p $(O)/bin
	$(E) LD $@
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LIBS) $(LDFLAGS)

$(O)/bin/fencegate: $(O)/build/obj/proxy/main.o $(O)/build/obj/proxy/cli.o \
		$(O)/build/obj/proxy/workers.o $(CORE_OBJ) \
		$(O)/build/libfencelock-all.a
	@mkdir -p $(O)/bin
	$(E) LD $@
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LIBS) $(LDFLAGS)

vpath test_%.c $(sort $(dir $(UNIT_SRC)))
$(O)/build/test/test_%: test_%.c $(SAN_OBJ) $(HEADERS) | deps-test
	@mkdir -p $(O)/build/test
	$(E) LD-SAN $@
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CPPFLAGS) -O1 -g $(SAN) -o $@ $< $(SAN_OBJ) \
		$$($(PKG_CONFIG) --cflags --libs cmocka) $(LIBS)

$(O)/build/test/itest_%: tests/integration/itest_%.c $(SAN_OBJ) $(HEADERS) | deps-test
	@mkdir -p $(O)/build/test
	$(E) LD-SAN $@
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CPPFLAGS) -O1 -g $(SAN) -o $@ $< $(SAN_OBJ) \
		$$($(PKG_CONFIG) --cflags --libs cmocka) $(LIBS)

# the deterministic simulation (tests/sim/sim.h): optimized, not sanitized,
# so that many schedules run; `make sim SEEDS=N`
$(SIM_BIN): $(SIM_SRC) tests/sim/sim.h $(LOCK_OBJ) $(CORE_OBJ) $(HEADERS) | deps
	@mkdir -p $(dir $@)
	$(E) LD $@
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CPPFLAGS) $(CFLAGS) -o $@ $(SIM_SRC) $(LOCK_OBJ) $(CORE_OBJ) $(LIBS)

sim: $(SIM_BIN)
	$(Q)$(SIM_BIN) --seeds $(SEEDS)
	$(Q)$(SIM_BIN) --seeds $(SEEDS) --mode s3 --identical

# what make test runs: a bounded number of schedules of the final logic, and
# the checker shown to catch issue 7's old logic and an unfenced control
sim-smoke: $(SIM_BIN)
	$(Q)fail=0; \
	tests/suite.py run "sim 2000 schedules" $(SIM_BIN) --seeds 2000 || fail=1; \
	tests/suite.py run "sim 6000 s3 schedules" $(SIM_BIN) --seeds 6000 --first-seed 2000001 \
		--mode s3 --identical || fail=1; \
	for old in "--mode s3 --old-idle" "--mode s3 --old-renew" \
		"--mode s3 --identical --old-cas" "--mode http --old-barrier" "--mode s3 --bad-unread" \
		"--mode s3 --unfenced"; do \
		tests/suite.py run "sim catches $$(echo $$old | sed 's/--mode //;s/ --/ /g')" \
			$(SIM_BIN) --seeds 3000 $$old --expect-violations || fail=1; \
	done; exit $$fail

# fuzz targets share one instrumented build of the sources
FUZZ_OBJ   := $(LOCK_SRC:%.c=$(O)/build/fuzzobj/%.o) $(CORE_SRC:%.c=$(O)/build/fuzzobj/%.o)
FUZZ_CFLAGS := -O1 -g -fsanitize=fuzzer-no-link,address,undefined

$(O)/build/fuzzobj/%.o: %.c $(HEADERS) | deps-test
	@mkdir -p $(dir $@)
	$(E) CC-FUZZ $<
	$(Q)clang $(CPPFLAGS_ALL) $(FUZZ_CFLAGS) -c -o $@ $<

$(O)/build/fuzz/%: tests/fuzz/%.c $(FUZZ_OBJ) $(HEADERS) | deps-test
	@mkdir -p $(O)/build/fuzz
	$(E) FUZZ $@
	$(Q)clang $(CPPFLAGS_ALL) -O1 -g -fsanitize=fuzzer,address,undefined -o $@ $< \
		$(FUZZ_OBJ) $(LIBS)

# make run PORT=9000, or LISTEN=ADDR:PORT (the hint URLs use loopback when
# LISTEN is a wildcard address); DATA=DIR serves another directory
PORT       ?= 8080
LISTEN     ?= 127.0.0.1:$(PORT)
DATA       ?= ./fencegate-data
RUN_URL    := http://$(patsubst 0.0.0.0:%,127.0.0.1:%,$(patsubst :%,127.0.0.1:%,$(LISTEN)))

run: all
	$(Q)mkdir -p $(DATA)
	@echo "fencegate $(VERSION): serving $(DATA) on http://$(LISTEN) (Ctrl-C to stop). Try:"
	@echo "  curl -X PUT $(RUN_URL)/demo-bucket"
	@echo "  curl -i -X PUT --data-binary v1 $(RUN_URL)/demo-bucket/a.txt          # 428: no token"
	@echo "  curl -X POST -d '{\"ttlMs\":30000}' $(RUN_URL)/_fence/locks/demo-bucket/acquire"
	@echo "  curl -i -X PUT --data-binary v1 -H 'X-Fencing-Token: 1' $(RUN_URL)/demo-bucket/a.txt"
	$(Q)exec $(O)/bin/fencegate --listen $(LISTEN) --data $(DATA)

# every suite runs (make -k) and records its count (tests/suite.py); the
# last line is the verdict over all of them, and the status says if any failed
test: all deps-test
	$(Q)rm -rf $(RESULTS)
	$(Q)st=0; $(MAKE) --no-print-directory -k \
		layering man-check unit sim-smoke fuzz-smoke integration chaos-smoke || st=$$?; \
		tests/suite.py verdict $(RESULTS) $$st

# the man pages format without a warning; fencegate.json(5) is the key table of
# policy/README.md
man-check:
	$(Q)tests/suite.py run man-check $(MAKE) --no-print-directory man-check-run

man-check-run:
	$(Q)for m in man/*.[1358]; do groff -man -ww -z $$m 2>&1 | grep . && \
		{ echo "man-check: $$m has warnings"; exit 1; }; true; done
	$(Q)man/gen-config-man.py | cmp -s - man/fencegate.json.5 || \
		{ echo "man-check: man/fencegate.json.5 is not what man/gen-config-man.py makes" \
			"of policy/README.md; run: man/gen-config-man.py > man/fencegate.json.5"; exit 1; }

layering:
	$(Q)tests/suite.py run layering tests/layering.sh

unit: $(UNIT_BIN)
	$(Q)fail=0; for t in $(UNIT_BIN); do \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
			tests/suite.py run "unit $$(basename $$t)" $$t || fail=1; \
	done; exit $$fail

integration: all $(ITEST_BIN) $(UNIT_BIN)
	$(Q)FENCE_BIN=$(abspath $(O)/bin) FENCE_TESTBIN=$(abspath $(O)/build/test) \
		tests/integration/run.sh $(E2E)

bench: all deps-bench
	$(Q)FENCE_BIN=$(abspath $(O)/bin) tests/bench/run.sh

# the fault campaign (tests/chaos/run.py, README "Fault testing"): TRIALS
# trials of each fault type against fencegate replicas, BACKEND=moto|rgw;
# UNFENCED=1 runs the same workload with the fence off (it must find
# violations); CHAOS_ARGS= passes more (--lanes, --types, --out DIR, --seed)
TRIALS     ?= 1000
BACKEND    ?= moto
CHAOS_CI_TRIALS ?= 2
CHAOS      = tests/chaos/run.py --backend $(BACKEND)

chaos: all deps-test
	$(Q)FENCE_BIN=$(abspath $(O)/bin) $(CHAOS) --trials $(TRIALS) $(if $(UNFENCED),--unfenced) $(CHAOS_ARGS)

# what make test runs: CHAOS_CI_TRIALS of each fault type (about 40 s), and
# the same with the fence off, which must report violations
chaos-smoke: all
	$(Q)fail=0; export FENCE_BIN=$(abspath $(O)/bin); \
	tests/suite.py run "chaos $(CHAOS_CI_TRIALS) trials per fault type" \
		$(CHAOS) --trials $(CHAOS_CI_TRIALS) || fail=1; \
	tests/suite.py run "chaos catches the unfenced control" \
		$(CHAOS) --trials $(CHAOS_CI_TRIALS) --unfenced --expect-violations || fail=1; \
	exit $$fail

# make test: each target over its corpus for a fixed number of runs from a
# fixed seed and an empty scratch corpus, so the same tree gives the same
# result (the safety assertions run); `make fuzz` explores for real
fuzz-smoke: $(FUZZ_BIN)
	$(Q)fail=0; for f in $(FUZZ_BIN); do n=$$(basename $$f); \
		scratch=$(O)/build/fuzz/smoke-$$n; rm -rf $$scratch; mkdir -p $$scratch; \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		tests/suite.py run "fuzz-smoke $$n" $$f -seed=1 -runs=$${FUZZ_SMOKE_RUNS:-50000} \
			-max_total_time=$${FUZZ_SMOKE_SECONDS:-120} \
			-rss_limit_mb=1024 -artifact_prefix=$(O)/build/fuzz/ $$scratch \
			tests/fuzz/corpus/$$n || fail=1; done; exit $$fail

fuzz: $(FUZZ_BIN)
	$(Q)for f in $(FUZZ_BIN); do n=$$(basename $$f); echo "== $$n"; \
		mkdir -p $(O)/build/fuzz/corpus-$$n; \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 $$f -max_total_time=$${FUZZ_SECONDS:-20} -rss_limit_mb=1024 \
			-artifact_prefix=$(O)/build/fuzz/ \
			$(O)/build/fuzz/corpus-$$n tests/fuzz/corpus/$$n || exit 1; done

lint: deps
	$(Q)clang-tidy --quiet $(LOCK_SRC) $(FENCECTL_SRC) $(CORE_SRC) proxy/main.c proxy/cli.c \
		proxy/workers.c -- $(CPPFLAGS_ALL)
	$(Q)cppcheck --quiet --error-exitcode=1 --enable=warning,portability \
		--suppress=missingIncludeSystem -I. -Iproxy wire lock proxy policy

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
		$(DESTDIR)$(PREFIX)/include/fencegate $(DESTDIR)$(UNITDIR) $(DESTDIR)$(DOCDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(DOCDIR)/examples
	install -m 644 $(O)/build/fencegate.service $(DESTDIR)$(UNITDIR)/fencegate.service
	install -m 644 README.md $(DESTDIR)$(DOCDIR)/README.md
	install -m 755 $(PROGRAMS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(O)/lib/libfencelock.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(SHLIB) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libfencelock.so.$(SOVERSION) $(DESTDIR)$(PREFIX)/lib/libfencelock.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' lock/lib/libfencelock.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/libfencelock.pc
	install -m 644 man/fencectl.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 644 man/libfencelock.3 $(DESTDIR)$(MANDIR)/man3/
	install -m 644 man/fencegate.json.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 644 man/fencegate.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 644 lock/lib/fencelock.h $(DESTDIR)$(PREFIX)/include/fencegate/
	install -m 644 examples/hold.c examples/worker.c examples/worker.sh examples/worker.py \
		examples/worker.cjs \
		$(DESTDIR)$(DOCDIR)/examples/

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/fencectl $(DESTDIR)$(PREFIX)/bin/fencegate \
		$(DESTDIR)$(PREFIX)/lib/libfencelock.a $(DESTDIR)$(PREFIX)/lib/pkgconfig/libfencelock.pc \
		$(DESTDIR)$(PREFIX)/lib/libfencelock.so $(DESTDIR)$(PREFIX)/lib/libfencelock.so.$(SOVERSION) \
		$(DESTDIR)$(MANDIR)/man1/fencectl.1 $(DESTDIR)$(MANDIR)/man8/fencegate.8 \
		$(DESTDIR)$(MANDIR)/man3/libfencelock.3 $(DESTDIR)$(MANDIR)/man5/fencegate.json.5 \
		$(DESTDIR)$(UNITDIR)/fencegate.service
	rm -rf $(DESTDIR)$(PREFIX)/include/fencegate $(DESTDIR)$(DOCDIR)

clean:
	rm -rf $(O)/build $(O)/bin $(O)/lib

help:
	@echo "targets:"
	@echo "  all (default)  build bin/fencectl, bin/fencegate, lib/libfencelock.a"
	@echo "  run            build and start fencegate on 127.0.0.1:8080 over ./fencegate-data"
	@echo "                 (PORT=N, or LISTEN=ADDR:PORT, chooses the address; DATA=DIR the directory)"
	@echo "  test           every suite (unit under ASan+UBSan, simulation, fuzz smoke, integration,"
	@echo "                 e2e); the last line is the verdict: N passed, N failed"
	@echo "  unit           unit tests only;  integration: integration and e2e tests only"
	@echo "                 (E2E=\"tests/e2e/test_x.py ...\": only those files)"
	@echo "  bench          benchmarks against nginx and HAProxy (not a test)"
	@echo "  chaos          fault campaign: TRIALS=N per fault type (1000), BACKEND=moto|rgw,"
	@echo "                 UNFENCED=1 (the control: must report violations)"
	@echo "  fuzz           run each fuzz target for FUZZ_SECONDS (default 20)"
	@echo "  sim            the deterministic simulation, SEEDS=N schedules (default 100000)"
	@echo "  lint           clang-tidy and cppcheck"
	@echo "  install        install to DESTDIR/PREFIX (PREFIX=$(PREFIX))"
	@echo "  clean          remove build outputs"
	@echo "variables: V=1 (verbose), CI=true (warnings are errors), PKG_CONFIG, CC, PREFIX, DESTDIR,"
	@echo "           SYSCONFDIR (/etc), UNITDIR, DOCDIR (the systemd unit's paths)"
