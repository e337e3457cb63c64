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
#   make bench-quick  headline numbers in ~4-5 min, ending in key=value lines
#   make bench-patterns  collective patterns and 3-D stencil per protocol
#                     (bench/results/patterns/; BENCH_VM=1: also in the VM)
#   make bench-nodes  bandwidth inside a node and between two simulated
#                     nodes, each MPI's default against coop (root)
#   make install      library, headers, coopmpi.pc, coop_info, coopmpi-run,
#                     cooprun, the UCX module and Open MPI's btl uct, the
#                     module's source for DKMS, the udev rule; PREFIX
#                     (/usr/local), DESTDIR, LIBDIR, DKMSDIR (/usr/src),
#                     UDEVDIR (/lib/udev/rules.d; empty: skip it, as
#                     DKMSDIR= does)
#   make uninstall    removes what make install put there
#   make demo         an unmodified MPI program (NetPIPE) under each MPI,
#                     its default path against coop: a table (< 3 min)
#   make deb          Debian packages into scripts/packaging/debs/
#                     (scripts/packaging/make-deb.sh; lintian-clean)
#
# KDIR selects the kernel build tree for the module (default: the running
# kernel's, else the newest installed /lib/modules/*/build).

SHELL := /bin/bash

.PHONY: all deps lib ucx module tests check check-full bench bench-quick bench-patterns bench-nodes clean \
	install install-dkms uninstall deb demo

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

bench-nodes: all
	@bench/nodes.sh

VERSION    := $(shell sed -n 's/^\#define COOPMPI_VERSION[[:space:]]*"\(.*\)"/\1/p' include/coopmpi_uapi.h)
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGLIBDIR  ?= $(LIBDIR)/coopmpi
DKMSDIR    ?= /usr/src
UDEVDIR    ?= /lib/udev/rules.d
HEADERS    := coopmpi.h coopmpi_xfer.h coopmpi_uapi.h
KMOD_SRC   := $(filter-out %.mod.c,$(wildcard kmod/*.c)) $(wildcard kmod/*.h) \
	      kmod/Kbuild kmod/Makefile
OMPI_COMPONENTS := mca_btl_uct.so mca_pml_ob1.so
D := $(DESTDIR)
# a directory under PREFIX as ${prefix}/..., so that pkg-config
# --define-prefix finds a tree installed with DESTDIR
pc_dir = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))

install: ucx $(if $(DKMSDIR),install-dkms)
	install -d $(D)$(BINDIR) $(D)$(LIBDIR)/pkgconfig $(D)$(INCLUDEDIR) \
		$(D)$(PKGLIBDIR)/ucx
	install -m 0755 lib/libcoopmpi.so.0 $(D)$(LIBDIR)/
	ln -sf libcoopmpi.so.0 $(D)$(LIBDIR)/libcoopmpi.so
	install -m 0644 lib/libcoopmpi.a $(D)$(LIBDIR)/
	install -m 0644 $(HEADERS:%=include/%) $(D)$(INCLUDEDIR)/
	sed -e 's#@PREFIX@#$(PREFIX)#; s#@LIBDIR@#$(call pc_dir,$(LIBDIR))#' \
	    -e 's#@INCLUDEDIR@#$(call pc_dir,$(INCLUDEDIR))#' \
	    -e 's#@PKGLIBDIR@#$(call pc_dir,$(PKGLIBDIR))#' \
	    -e 's#@VERSION@#$(VERSION)#' scripts/packaging/coopmpi.pc.in \
		>$(D)$(LIBDIR)/pkgconfig/coopmpi.pc
	install -m 0755 lib/coop_info scripts/cooprun $(D)$(BINDIR)/
	sed -e 's#^pkglibdir=$$#pkglibdir=$(PKGLIBDIR)#' \
	    -e 's#^bindir=$$#bindir=$(BINDIR)#' scripts/coopmpi-run \
		>$(D)$(BINDIR)/coopmpi-run
	chmod 0755 $(D)$(BINDIR)/coopmpi-run
	install -m 0644 lib/ucx/libuct_coop.so $(D)$(PKGLIBDIR)/ucx/
	@if dir=$$(scripts/ompi-btl-uct.sh 2>/dev/null); then \
		install -d $(D)$(PKGLIBDIR)/openmpi && \
		install -m 0644 $(OMPI_COMPONENTS:%="$$dir"/%) \
			$(D)$(PKGLIBDIR)/openmpi/; \
	else \
		echo "install: no btl uct for Open MPI (scripts/ompi-btl-uct.sh): coopmpi-run -p ucx only" >&2; \
	fi
ifneq ($(UDEVDIR),)
	install -D -m 0644 scripts/packaging/60-coopmpi.rules \
		$(D)$(UDEVDIR)/60-coopmpi.rules
endif

# the module's source where DKMS looks for it (dkms add coopmpi/VERSION)
install-dkms:
	install -d $(D)$(DKMSDIR)/coopmpi-$(VERSION)/kmod \
		$(D)$(DKMSDIR)/coopmpi-$(VERSION)/include
	install -m 0644 dkms.conf COPYING $(D)$(DKMSDIR)/coopmpi-$(VERSION)/
	install -m 0644 $(KMOD_SRC) $(D)$(DKMSDIR)/coopmpi-$(VERSION)/kmod/
	install -m 0644 include/coopmpi_uapi.h \
		$(D)$(DKMSDIR)/coopmpi-$(VERSION)/include/

uninstall:
	rm -f $(D)$(LIBDIR)/libcoopmpi.so.0 $(D)$(LIBDIR)/libcoopmpi.so \
	      $(D)$(LIBDIR)/libcoopmpi.a $(D)$(LIBDIR)/pkgconfig/coopmpi.pc \
	      $(HEADERS:%=$(D)$(INCLUDEDIR)/%) \
	      $(D)$(BINDIR)/coop_info $(D)$(BINDIR)/cooprun \
	      $(D)$(BINDIR)/coopmpi-run
	rm -rf $(D)$(PKGLIBDIR)
ifneq ($(DKMSDIR),)
	rm -rf $(D)$(DKMSDIR)/coopmpi-$(VERSION)
endif
ifneq ($(UDEVDIR),)
	rm -f $(D)$(UDEVDIR)/60-coopmpi.rules
endif

demo: ucx
	@scripts/demo.sh

deb: deps
	@scripts/packaging/make-deb.sh

clean:
	$(MAKE) -C lib clean
	$(MAKE) -C lib/ucx clean
	$(MAKE) -C kmod clean
	$(MAKE) -C tests/kmod clean
	$(MAKE) -C tests/dmatest clean
	$(MAKE) -C tests/lib clean
	$(MAKE) -C bench clean
	$(MAKE) -C bench -f Makefile.suite clean
