# gga top-level Makefile.
#   make           configure with defaults if needed, then build into build/
#   make test      install packages, build, run every test (normal + ASan/UBSan + VM)
#   make test-vm   the SoftRoCE/NVMe-oF interop tests in a qemu VM (test/vm/)
#   make demo      install packages, build, run the demo
#   make bench     run the benchmarks (docs/BENCHMARKS.md)
#   make fuzz      build the libFuzzer harnesses (clang) and fuzz each for 3.5 minutes
#                  (GGA_FUZZ_SECONDS; at least 10 million runs in all), then run the
#                  NVMe/TCP connection fuzzer for 10 minutes (GGA_CONN_FUZZ_SECONDS)
#   make install   install binaries, libraries and headers (PREFIX/DESTDIR)
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

fuzz: build
	@rc=0; bash test/fuzz/run.sh $(O) $${GGA_FUZZ_SECONDS:-210} \
		$${GGA_FUZZ_MIN_RUNS:-10000000} || { [ $$? -eq 77 ] || rc=1; }; \
	python3 test/fuzz/tcp_conn_fuzz.py --build $(O) --seconds $${GGA_CONN_FUZZ_SECONDS:-600} \
		$${GGA_CONN_FUZZ_SEED:+--seed $$GGA_CONN_FUZZ_SEED} || rc=1; \
	exit $$rc

-include mk/config.mk
PREFIX ?= $(CONFIG_PREFIX)
install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/gga
	install -m 755 $(O)/bin/gga_tgt $(O)/bin/bdevperf $(O)/bin/gga_rpc $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(O)/lib/*.a $(DESTDIR)$(PREFIX)/lib/
	install -m 644 include/gga/*.h $(DESTDIR)$(PREFIX)/include/gga/

uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/bin/,gga_tgt bdevperf gga_rpc)
	rm -f $(DESTDIR)$(PREFIX)/lib/libgga_*.a
	rm -rf $(DESTDIR)$(PREFIX)/include/gga

format:
	@git ls-files '*.c' '*.h' | xargs clang-format -i

clean:
	rm -rf $(O) build-asan build-nordma

distclean: clean
	rm -f mk/config.mk

.PHONY: all build unittests test test-vm demo bench fuzz install uninstall format clean distclean
