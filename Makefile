# SPDX-License-Identifier: GPL-2.0
#
# visock top-level Makefile.
#
#   make                      build visock.ko for the running kernel
#   make KDIR=<build dir>     ... or for another kernel's headers
#   make check                the whole test suite (see README)
#   make check-debug          kselftests + KUnit on the KASAN/lockdep guest kernel
#   make check-fleet          cross-host kselftests between 6.1/6.12 and 7.3 hosts
#   make check-multi          one host and three peer hosts at once (4 guests)
#   make check-interop        this release against v0.1.0 on the bed, live upgrade
#   make check-capture        the link captured: a stream clear, then sealed
#   make demo                 two emulated hosts talking over visock
#   make bench                TCP/visock/SMC-R/rsocket/verbs numbers on the emulated hosts
#   make install              install the module and the tools
#
# Inner-loop targets: modules-testbed, checkpatch, kunit, vm-test,
# selftests, dkms-check, docs-check, ynl-check.

KDIR	?= /lib/modules/$(shell uname -r)/build
PREFIX	?= /usr
DESTDIR	?=
TESTING	:= tools/testing

VERSION	:= $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)

.PHONY: all tools modules modules-clean clean install modules_install check check-quick demo \
	check-debug check-fleet check-multi check-interop check-capture debug-kernel \
	bench checkpatch kunit vm-test selftests dkms-check modules-testbed

all: modules tools

tools:
	$(MAKE) -C tools/visock

modules:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

modules-clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean

modules_install:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules_install

install: modules_install
	$(MAKE) -C tools/visock install PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	for h in visock.h visock_diag.h visock_genl.h; do \
		install -D -m 0644 include/uapi/linux/$$h \
			$(DESTDIR)$(PREFIX)/include/linux/$$h || exit 1; \
	done

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean 2>/dev/null || true
	$(MAKE) -C $(TESTING)/selftests/net/visock clean
	$(MAKE) -C tools/visock clean
	$(MAKE) -C $(TESTING)/bench clean
	rm -rf build

# Build visock.ko for both test-bed kernels (6.1 and 6.12) in build/<kver>,
# with W=1 and sparse; fails on any warning.
modules-testbed:
	$(TESTING)/build-module.sh all

checkpatch:
	$(TESTING)/checkpatch.sh

# kernel-doc -Wall and docutils over the sources and Documentation.
.PHONY: docs-check
docs-check:
	$(TESTING)/docs-check.sh

# The generic netlink uAPI header against its YNL spec.
.PHONY: ynl-check
ynl-check:
	$(TESTING)/ynl-check.sh

kunit:
	$(TESTING)/kunit/run_kunit.sh

selftests: tools
	$(MAKE) -C $(TESTING)/selftests/net/visock

vm-test: modules-testbed selftests tools
	$(TESTING)/vm/vm.sh run --kernel $(or $(KERNEL),6.12) -- \
		$(TESTING)/selftests/net/visock/run_tests.sh

dkms-check:
	$(TESTING)/dkms-check.sh

check:
	$(TESTING)/check.sh

demo:
	$(TESTING)/demo.sh

# Not part of check (CI time): the whole kselftest suite and KUnit on the
# debug guest kernel (KASAN, lockdep, kmemleak, debug objects), built once
# from linux-source-6.12 into ~/.cache/visock/kernels/6.12-debug.
check-debug:
	$(TESTING)/check-debug.sh

# Not part of check (CI time): the cross-host kselftest groups between
# hosts with different kernels (6.1 and 7.3, 6.12 and 7.3, each kernel
# once the client and once the server).
check-fleet:
	$(TESTING)/check-fleet.sh

# Not part of check: four guests on one emulated Ethernet segment, a
# server with three client hosts at once, a client host killed in the
# middle of its streams, a client of three servers at once, and the
# memory a host spends per peer host (tools/testing/check-multi.sh).
check-multi:
	$(TESTING)/check-multi.sh

# Not part of check: this tree's module against the previous release's
# (built from its commit) on the two-host bed, both ways at once, then
# rmmod with sockets open and the upgrade of the old module (one old
# module build and one boot of the bed, about 5 minutes).
check-interop:
	$(TESTING)/check-interop.sh

# Part of check (per kernel): the bed with its link captured, a marker
# text streamed without a transform and with gcm-aes-128 and
# chacha20-poly1305, and the capture searched for it
# (tools/testing/check-capture.sh).  KERNEL=6.1|6.12 (default 6.12).
check-capture: modules-testbed selftests tools
	$(TESTING)/check-capture.sh $(or $(KERNEL),6.12)

debug-kernel:
	$(TESTING)/debug-kernel.sh build

# Benchmark (not a test; make check runs a short one): TCP, visock, raw
# verbs and SMC-R side by side on the emulated hosts.  KERNEL=6.1|6.12
# (default 6.12).  run-bench.sh installs what it needs (deps.sh) and
# builds the module, the tools and the benchmark programs.
bench:
	KERNEL=$(or $(KERNEL),6.12) $(TESTING)/bench/run-bench.sh
