# coopmpi - top-level build.
#
#   make              install missing packages, build library, tests, module,
#                     the UCX transport (lib/ucx/libuct_coop.so) and Open
#                     MPI's btl uct (scripts/ompi-btl-uct.sh)
#   make check        everything above, then the quick test tier (what CI
#                     runs): every component natively and in a QEMU VM
#                     against the real module
#   make check-full   the same, then every heavy suite (scripts/check.sh
#                     --list shows each stage's tier)
#   make bench        the full benchmark suite (bench/results/full/)
#   make bench-quick  headline numbers in < 90 s, ending in key=value lines
#   make bench-patterns  collective patterns and 3-D stencil per protocol
#                     (bench/results/patterns/; BENCH_VM=1: also in the VM)
#
# KDIR selects the kernel build tree for the module (default: the newest
# installed /lib/modules/*/build).

SHELL := /bin/bash

.PHONY: all deps lib ucx module tests check check-full bench bench-quick bench-patterns clean

all: deps lib ucx module tests

deps:
	@scripts/deps.sh

lib: deps
	$(MAKE) -C lib

# against Debian's UCX; its internal headers: scripts/ucx-src.sh (cached).
# Open MPI's btl uct and ob1 for scripts/coopmpi-run's default Open MPI
# path: scripts/ompi-btl-uct.sh (cached; the VM only reads the cache)
ucx: lib
	$(MAKE) -C lib/ucx
	@scripts/ompi-btl-uct.sh >/dev/null

module: deps
	$(MAKE) -C kmod

tests: lib
	$(MAKE) -C tests/kmod
	$(MAKE) -C tests/lib
	$(MAKE) -C bench

check: all
	@scripts/check.sh

check-full: all
	@scripts/check.sh --full

bench: all
	@bench/run-suite.sh full

bench-quick: all
	@bench/run-suite.sh quick

bench-patterns: all
	@bench/run-suite.sh patterns

clean:
	$(MAKE) -C lib clean
	$(MAKE) -C lib/ucx clean
	$(MAKE) -C kmod clean
	$(MAKE) -C tests/kmod clean
	$(MAKE) -C tests/dmatest clean
	$(MAKE) -C tests/lib clean
	$(MAKE) -C bench clean
	$(MAKE) -C bench -f Makefile.suite clean
