# gga top-level Makefile.
#   make           configure with defaults if needed, then build into build/
#   make test      install packages, build, run every test (normal + ASan/UBSan + VM)
#   make test-vm   the SoftRoCE/NVMe-oF interop tests in a qemu VM (test/vm/)
#   make demo      install packages, build, run the demo
#   make bench     run the benchmarks (docs/BENCHMARKS.md)
#   make bench-compare REF=<commit>  the work tree's build against REF's, alternating, in
#                  one run: the I/O path's regression guard (BENCH_ARGS="-t 5 -r 3", --quick)
#   make torture   the seeded torture run of the gga bdev for GGA_TORTURE_STEPS steps per
#                  geometry (default 24000, ten times make test's); GGA_TORTURE_SEED=S
#                  replays a run (docs/TESTING.md); the lifecycle checker one event
#                  deeper for 2 + 1 (GGA_LC_DEPTH, default 7), the packed log's checker
#                  two deeper (GGA_PK_DEPTH, default 9); then gga_heal.sh and
#                  gga_recovery_passes.sh under ASan+UBSan (make test runs them unsanitized)
#   make fuzz      build the libFuzzer harnesses (clang) and fuzz each for 3.5 minutes
#                  (GGA_FUZZ_SECONDS; at least 10 million runs in all), then run the
#                  NVMe/TCP connection fuzzer for 10 minutes (GGA_CONN_FUZZ_SECONDS)
#                  and the JSON-RPC fuzzer for 10 minutes (GGA_RPC_FUZZ_SECONDS)
#   make mutants   mutation testing of the gga bdev: each slip of test/mutants/mutants.txt
#                  applied alone to a scratch copy, rebuilt, its unit tests run; prints the
#                  survivors (GGA_MUTANTS=id1,id2 runs some; docs/TESTING.md)
#   make check-format  check the C sources against .clang-format (CI runs it first)
#   make format    format the C sources as .clang-format says (scripts/check_format.sh --fix)
#   make install   install binaries, libraries, headers, the systemd unit gga_tgt@.service,
#                  the man page and gga_rpc's bash completion (PREFIX/DESTDIR)
#   make O=DIR CONFIG_ASAN=y   a second build tree with other settings

GGA_ROOT := $(CURDIR)
O ?= $(GGA_ROOT)/build
export O
SRC_DIRS := lib initiator module bdev_gga target app
MAKEFLAGS += --no-print-directory

all: build

# Configure with defaults on first use. Not a rule for mk/config.mk: the
# -include below would make every target (even `make test`, which installs
# the packages configure needs) run configure first.
build:
	@[ -f mk/config.mk ] || ./configure
	@for d in $(SRC_DIRS); do $(MAKE) -C $$d all || exit 1; done

unittests: build
	@$(MAKE) -C test/unit all

test:
	@bash test/run.sh

test-vm:
	@bash test/vm/run_tests.sh $(O)

demo:
	@bash scripts/demo.sh

bench:
	@bash scripts/bench.sh

bench-compare: build
	@[ -n "$(REF)" ] || { echo "make bench-compare REF=<commit> [BENCH_ARGS=...]" >&2; exit 2; }
	@bash scripts/bench_compare.sh $(REF) $(BENCH_ARGS)

# The ASan runs of the longest scenario tests (make test runs them in its
# normal lane only): a build-asan tree, then those tests with GGA_TORTURE=1.
TORTURE_ASAN_TESTS := gga_heal.sh gga_recovery_passes.sh gga_stay_up.sh gga_front_pause.sh \
	gga_two_fronts.sh gga_takeover_member_lost.sh
torture: build
	@$(MAKE) -C test/unit/bdev_gga/bdev_gga_torture all
	@GGA_TORTURE_STEPS=$${GGA_TORTURE_STEPS:-24000} \
		GGA_TORTURE_SEED=$${GGA_TORTURE_SEED:-$$(date +%s%N)} \
		$(O)/test/unit/bdev_gga/bdev_gga_torture/bdev_gga_torture_ut
	@$(MAKE) -C test/unit/bdev_gga/gga_lifecycle all
	@GGA_LC_DEPTH=$${GGA_LC_DEPTH:-7} $(O)/test/unit/bdev_gga/gga_lifecycle/gga_lifecycle_ut
	@$(MAKE) -C test/unit/bdev_gga/gga_packed all
	@GGA_PK_DEPTH=$${GGA_PK_DEPTH:-9} $(O)/test/unit/bdev_gga/gga_packed/gga_packed_ut
	@$(MAKE) O=$(GGA_ROOT)/build-asan CONFIG_ASAN=y CONFIG_TEST_HOOKS=y build
	@ASAN_OPTIONS=$${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1:halt_on_error=1} \
		UBSAN_OPTIONS=$${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
		GGA_LANE=asan GGA_TORTURE=1 GGA_TEST_FILTER="$(TORTURE_ASAN_TESTS)" \
		bash test/integration/run.sh $(GGA_ROOT)/build-asan

fuzz: build
	@rc=0; bash test/fuzz/run.sh $(O) $${GGA_FUZZ_SECONDS:-210} \
		$${GGA_FUZZ_MIN_RUNS:-10000000} || { [ $$? -eq 77 ] || rc=1; }; \
	python3 test/fuzz/tcp_conn_fuzz.py --build $(O) --seconds $${GGA_CONN_FUZZ_SECONDS:-600} \
		$${GGA_CONN_FUZZ_SEED:+--seed $$GGA_CONN_FUZZ_SEED} || rc=1; \
	python3 test/fuzz/rpc_fuzz.py --build $(O) --seconds $${GGA_RPC_FUZZ_SECONDS:-600} \
		$${GGA_RPC_FUZZ_SEED:+--seed $$GGA_RPC_FUZZ_SEED} || rc=1; \
	exit $$rc

-include mk/config.mk
PREFIX ?= $(CONFIG_PREFIX)
# systemd reads units under /usr/local/lib/systemd/system too; /etc/gga holds
# the configurations of gga_tgt@NAME.
UNITDIR ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= /etc
SHAREDIR := $(PREFIX)/share
install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/gga \
		$(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/gga $(DESTDIR)$(SHAREDIR)/gga \
		$(DESTDIR)$(SHAREDIR)/man/man8 $(DESTDIR)$(SHAREDIR)/bash-completion/completions
	install -m 755 $(O)/bin/gga_tgt $(O)/bin/bdevperf $(O)/bin/gga_rpc $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(O)/lib/*.a $(DESTDIR)$(PREFIX)/lib/
	install -m 644 include/gga/*.h $(DESTDIR)$(PREFIX)/include/gga/
	sed 's|@BINDIR@|$(PREFIX)/bin|g' app/gga_tgt/systemd/gga_tgt@.service.in \
		>$(DESTDIR)$(UNITDIR)/gga_tgt@.service
	chmod 644 $(DESTDIR)$(UNITDIR)/gga_tgt@.service
	install -m 644 app/gga_tgt/systemd/gga_tgt.env.example $(DESTDIR)$(SHAREDIR)/gga/
	install -m 644 docs/man/gga_tgt.8 $(DESTDIR)$(SHAREDIR)/man/man8/
	install -m 644 app/gga_rpc/gga_rpc.bash-completion \
		$(DESTDIR)$(SHAREDIR)/bash-completion/completions/gga_rpc

uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/bin/,gga_tgt bdevperf gga_rpc)
	rm -f $(DESTDIR)$(PREFIX)/lib/libgga_*.a
	rm -rf $(DESTDIR)$(PREFIX)/include/gga $(DESTDIR)$(SHAREDIR)/gga
	rm -f $(DESTDIR)$(UNITDIR)/gga_tgt@.service $(DESTDIR)$(SHAREDIR)/man/man8/gga_tgt.8 \
		$(DESTDIR)$(SHAREDIR)/bash-completion/completions/gga_rpc

format:
	@bash scripts/check_format.sh --fix

check-format:
	@bash scripts/check_format.sh

mutants:
	@bash scripts/mutants.sh

clean:
	rm -rf $(O) build-asan build-nordma

distclean: clean
	rm -f mk/config.mk

.PHONY: all build unittests test test-vm demo bench bench-compare torture fuzz mutants install uninstall format \
	check-format clean distclean
