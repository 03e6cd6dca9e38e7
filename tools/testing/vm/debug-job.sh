#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# debug-job.sh [RUN_TESTS_ARGS...] - guest side of "make check-debug".
# debug-job.sh --peer-kill         - the same around peer-kill.sh
#
# Runs in both guests of the 6.12-debug test bed (vm.sh run ... --
# tools/testing/vm/debug-job.sh): takes a kmemleak baseline (what the boot
# leaked is not visock's), runs the kselftests (run_tests.sh, which unloads
# visock at its end), on host a the KUnit suites (visock_kunit.ko, built by
# check-debug.sh; results in $VISOCK_RESULTS/kunit.ktap), then scans for
# leaks and leaves the report in $VISOCK_RESULTS/kmemleak.txt for
# check-debug.sh.  Exits with the status of run_tests.sh.
#
# With --peer-kill it runs tools/testing/vm/peer-kill.sh instead (no
# KUnit): host b powers itself off in the middle of it, so only host a
# gets to the kmemleak scan, after visock was unloaded.
set -u

km=/sys/kernel/debug/kmemleak
tests=$VISOCK_SRC/tools/testing/selftests/net/visock/run_tests.sh
kunit_ko=$VISOCK_SRC/build/$(uname -r)/visock_kunit.ko
if [ "${1:-}" = --peer-kill ]; then
	shift
	tests=$VISOCK_SRC/tools/testing/vm/peer-kill.sh
	kunit_ko=
fi

# Reading fails (EBUSY) unless the kernel was booted with kmemleak=on.
kmemleak_on() { cat "$km" >/dev/null 2>&1; }

if kmemleak_on; then
	echo "debug-job: kmemleak baseline" >/dev/kmsg
	echo scan >"$km" && echo clear >"$km"
	echo "# debug-job: kmemleak baseline taken"
else
	echo "# debug-job: kmemleak is off (boot with kmemleak=on)"
fi

"$tests" "$@"
rc=$?

# The suites run when the module is loaded; KUNIT_DEBUGFS keeps the results.
if [ "$VISOCK_HOST" = a ] && [ -n "$kunit_ko" ] && [ -f "$kunit_ko" ]; then
	# The decoders' fuzzing at a count the emulated debug kernel runs in
	# minutes; check-debug.sh runs the full count in a UML kernel.
	# insmod waits, uninterruptibly, until every suite has run: many
	# minutes on an emulated debug kernel, so the hung task detector
	# would report insmod itself.  KUnit's own timeout per test case
	# still catches a test that hangs; the detector is back for the
	# kmemleak scan and the log checks.
	hung=/proc/sys/kernel/hung_task_timeout_secs
	hung_was=$(cat "$hung" 2>/dev/null)
	[ -n "$hung_was" ] && echo 3600 >"$hung"
	if insmod "$kunit_ko" fuzz_iters="${VISOCK_DEBUG_FUZZ_ITERS:-20000}"; then
		cat /sys/kernel/debug/kunit/visock*/results >"$VISOCK_RESULTS/kunit.ktap"
		rmmod visock_kunit
	fi
	[ -n "$hung_was" ] && echo "$hung_was" >"$hung"
	echo "# debug-job: KUnit: $(grep -cE '^    ok ' "$VISOCK_RESULTS/kunit.ktap" 2>/dev/null) passed," \
		"$(grep -cE '^    not ok ' "$VISOCK_RESULTS/kunit.ktap" 2>/dev/null) failed"
fi

if kmemleak_on; then
	# Objects younger than 5 s are not reported; two scans, as
	# Documentation/dev-tools/kmemleak.rst suggests against transients.
	sleep 6
	echo scan >"$km"
	sleep 1
	echo scan >"$km"
	cat "$km" >"$VISOCK_RESULTS/kmemleak.txt"
	echo "# debug-job: kmemleak: $(grep -c '^unreferenced object' \
		"$VISOCK_RESULTS/kmemleak.txt") suspected leaks after the run"
else
	echo "kmemleak off" >"$VISOCK_RESULTS/kmemleak.txt"
fi
exit "$rc"
