# SPDX-License-Identifier: GPL-2.0
#
# krpc: kernel module, userspace library, tools and tests.
#
#   make                 build krpc.ko (against KDIR), libkrpc, tools, tests
#   make KDIR=/path      build against other kernel headers or a kernel tree
#   make W=1 / C=1       extra warnings / sparse, passed to Kbuild
#   make check           run every test in QEMU guests on 6.1 and 6.12
#   make check-debug     the same on a KASAN/lockdep/kmemleak 6.1 kernel,
#                        built once from linux-source into ~/.cache/krpc
#   make vm-demo         build, boot, load and exercise krpc in the test bed
#   make bench           benchmark report: Documentation/performance.rst
#   make lint            checkpatch, sparse and kernel-doc over kmod/
#   sudo make install    install krpc.ko (updates/), libkrpc and headers
#
# Objects for each kernel live in build/<kernel release>/, a mirror of the
# source tree made of symlinks, so builds for several kernels coexist.

top := $(CURDIR)
VERSION := 0.1.0
export KRPC_VERSION := $(VERSION)

# Default kernel: the running one's build tree, else the newest installed
# Debian headers, else the newest test-bed kernel unpacked by tools/setup.
ifeq ($(origin KDIR),undefined)
KDIR := $(firstword $(wildcard /lib/modules/$(shell uname -r)/build) \
	$(shell ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n1) \
	$(shell ls -d $(top)/tools/vm/cache/*/kdir 2>/dev/null | sort -V | tail -n1))
endif
KREL := $(shell sed -n 's/^\#define UTS_RELEASE "\(.*\)"/\1/p' $(KDIR)/include/generated/utsrelease.h 2>/dev/null)
BUILD := $(top)/build/$(KREL)
LIBDIR_OUT = $(top)/build/user

PREFIX ?= /usr/local
DESTDIR ?=

CFLAGS_USER ?= -O2 -g
export CFLAGS_USER

.PHONY: all modules lib tools selftests check check-debug vm-demo bench lint \
	install clean setup kdir-check

all: modules lib tools selftests

kdir-check:
	@if [ -z "$(KDIR)" ] || [ ! -f "$(KDIR)/include/generated/utsrelease.h" ]; then \
		echo "krpc: no kernel headers found (KDIR='$(KDIR)'); run tools/setup" \
		     "or pass KDIR=/lib/modules/<release>/build" >&2; exit 1; fi

# Mirror the Kbuild-relevant part of the tree, run the compile probes, then
# hand over to the kernel's own Kbuild.
modules: kdir-check
	@mkdir -p $(BUILD)
	@cp -rsf $(top)/Kbuild $(top)/kmod $(top)/uapi $(top)/selftests $(BUILD)/
	@$(top)/kmod/compat/probe $(KDIR) $(BUILD)/kmod/compat/generated
	$(MAKE) -C $(KDIR) M=$(BUILD) modules
	@# Kbuild does not rerun modpost for a module whose only change is
	@# krpc's symbol versions (its KBUILD_EXTRA_SYMBOLS): drop the
	@# symbol dumps older than krpc's, so the modules get the new ones.
	@find $(BUILD)/selftests/krpc/module $(BUILD)/tools/bench/module \
		-maxdepth 1 -name Module.symvers ! -newer $(BUILD)/Module.symvers \
		-delete 2>/dev/null || true
	@if [ -d $(top)/selftests/krpc/module ]; then \
		$(MAKE) -C $(KDIR) M=$(BUILD)/selftests/krpc/module \
			KBUILD_EXTRA_SYMBOLS=$(BUILD)/Module.symvers modules; fi
	@mkdir -p $(BUILD)/tools/bench
	@cp -rsf $(top)/tools/bench/module $(top)/tools/bench/hist.h $(BUILD)/tools/bench/
	$(MAKE) -C $(KDIR) M=$(BUILD)/tools/bench/module \
		KBUILD_EXTRA_SYMBOLS=$(BUILD)/Module.symvers modules

lib:
	$(MAKE) -C libuser O=$(LIBDIR_OUT) VERSION=$(VERSION)

tools: lib
	$(MAKE) -C tools O=$(LIBDIR_OUT)

selftests: lib
	$(MAKE) -C selftests/krpc O=$(LIBDIR_OUT)

setup:
	$(top)/tools/setup

check: setup
	$(top)/tools/check

check-debug: setup
	$(top)/tools/vm/debug-kernel/build > /dev/null
	$(top)/tools/check --debug

lint: kdir-check
	$(top)/tools/lint $(KDIR)

vm-demo: setup
	$(top)/tools/vm-demo

bench: setup
	$(top)/tools/bench/run

install: modules lib
	$(MAKE) -C $(KDIR) M=$(BUILD) INSTALL_MOD_DIR=updates modules_install
	depmod -a $(KREL)
	$(MAKE) -C libuser O=$(LIBDIR_OUT) PREFIX=$(PREFIX) DESTDIR=$(DESTDIR) install

clean:
	rm -rf $(top)/build
