# coopmpi - top-level build.
#
#   make              install missing packages, build library, tests, module
#   make check        everything above, then every test: natively (library,
#                     shm provider) and in a QEMU VM against the real module
#
# KDIR selects the kernel build tree for the module (default: the newest
# installed /lib/modules/*/build).

SHELL := /bin/bash

.PHONY: all deps lib module tests check clean

all: deps lib module tests

deps:
	@scripts/deps.sh

lib: deps
	$(MAKE) -C lib

module: deps
	$(MAKE) -C kmod

tests: lib
	$(MAKE) -C tests/kmod
	$(MAKE) -C tests/lib

check: all
	@scripts/check.sh

clean:
	$(MAKE) -C lib clean
	$(MAKE) -C kmod clean
	$(MAKE) -C tests/kmod clean
	$(MAKE) -C tests/dmatest clean
	$(MAKE) -C tests/lib clean
