#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check-debug: the whole kselftest suite and the KUnit suites on the
# debug guest kernel (6.12-debug: KASAN, lockdep, kmemleak, debug objects,
# fault injection; tools/testing/debug-kernel.sh), failing on any kernel
# report.  Not part of "make check" (see
# Documentation/networking/visock/testing.rst, "Debug kernel", for the
# time it takes).
#
#   1. build the debug kernel once (cached in ~/.cache/visock/kernels)
#   2. build visock.ko against it (W=1, sparse) and visock_kunit.ko
#   3. boot the two guests with kmemleak=on; host a runs the KUnit suites
#      (visock_kunit.ko), both run the kselftests, then a kmemleak scan
#   4. check both guests' kernel logs: one result per kind of report
#      (KASAN, lockdep, sleeping in atomic context, debug objects, list
#      corruption, kmemleak, WARN, BUG/Oops/panic)
#   5. the peer kill campaign (tools/testing/vm/peer-kill.sh) on two fresh
#      debug guests, with the same kernel log checks (kmemleak on host a:
#      host b is the one killed)
#   6. the summary, with a "campaigns" section: per fault injection,
#      device removal, peer kill, stress, netns and module unload test
#      the counts its own diagnostic lines in the guests' console logs
#      give (faults injected, devices removed, connections, checksums of
#      the streams that arrived whole)
#
# The last line is "N passed, N failed"; the exit status is non-zero if
# anything failed.  Arguments are passed to run_tests.sh (e.g. --pick
# 'dp.*').  Environment: VISOCK_VM_INSTANCE (test bed number),
# VISOCK_DEBUG_TIMEOUT (seconds for the guests, default 10800),
# VISOCK_DEBUG_PEER_KILL=0 (leave the peer kill campaign out),
# VISOCK_VM_APPEND (more kernel command line).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T="$ROOT/tools/testing"
VM="$T/vm/vm.sh"
OUT="$ROOT/build/check-debug"
TIMEOUT=${VISOCK_DEBUG_TIMEOUT:-10800}

passed=0 failed=0
summary=()
rm -rf "$OUT"
mkdir -p "$OUT"
start=$(date +%s)

check_name=check-debug
# shellcheck source=check-lib.sh
. "$T/check-lib.sh"

finish() {
	banner "summary"
	local l
	for l in "${summary[@]}"; do
		echo "  $l"
	done
	campaigns
	echo "make check-debug took $(($(date +%s) - start)) s"
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}

# The campaigns: per test of the fault injection, device removal, peer
# kill, stress, netns and module unload kind, its result and, per host,
# the lines of its own output that count something (faults injected,
# devices deleted, connections and how they ended, checksums verified).
# Quoted, not computed: every number is the test's.  Arguments: pairs of
# host letter and console log.
campaign_re='^(fault\.|hs\.device_gone|hs\.hostile_(client|server)_device_gone|stress\.|lgr\.churn|lgr\.idle_race|basic\.sysctl_netns|redirect\.policy_netns|module\.|peer_kill\.)'
campaign_lines() { # HOST FILE [HOST FILE...]
	local args=()
	while [ $# -ge 2 ]; do
		[ -f "$2" ] && args+=("h=$1" "$2")
		shift 2
	done
	[ ${#args[@]} -gt 0 ] || return 0
	awk -v want="$campaign_re" '
	function keep(m) {
		return m ~ /^fault [a-z_]+: injected / ||
		       m ~ /^peer of the fault: / ||
		       m ~ /^(client|server) host: injected / ||
		       m ~ /^connections [0-9]+: setup failed / ||
		       m ~ /^ *eof after the peer.s error / ||
		       m ~ /^checksums verified: / ||
		       m ~ /signals during|calls interrupted/ ||
		       m ~ /^module refcnt / ||
		       m ~ /^(deleted RDMA device|deleting .* took|closed connections: )/ ||
		       m ~ /^(written before close|bytes (sent|received): RDMA )/ ||
		       m ~ /^[0-9]+ (connections|on RDMA|echoes)/ ||
		       m ~ /^[0-9]+ cycles, every stream/ ||
		       m ~ /^(handshakes aborted|connect errors:|afterwards: qps)/ ||
		       m ~ /^[0-9]+ unload\/load cycles/ ||
		       m ~ /^[0-9]+ connections racing/ ||
		       m ~ /^the last connection ended/
	}
	{ sub(/\r$/, "") }
	# peer kill: the survivor connections ends, the victim
	/^# connection [0-9]+ \((writer|reader), [0-9]+ bytes\): / {
		m = $0
		sub(/^[^:]*: /, "", m); sub(/ [0-9]+ ms after the last progress.*/, "", m)
		ends[h, m]++
		if (!((h, m) in seen_end)) { seen_end[h, m] = 1; endlist[h] = endlist[h] SUBSEP m }
		next
	}
	# peer kill: the victim (it never gets to a result line)
	/^# victim: / {
		m = $0; sub(/^# victim: /, "", m)
		if (m ~ /^powering off now/)
			killed[h]++
		else if (m ~ /^[0-9]+ bytes in/)
			victim[h] = m
		next
	}
	/^# (the last connection ended|[0-9]+ connections on QP)/ {
		m = $0; sub(/^# /, "", m)
		pend[h] = pend[h] (pend[h] == "" ? "" : "; ") m
		next
	}
	# "# [client] name: msg" (harness), "# group.name: msg" (run_tests.sh)
	/^# (\[[a-z]+\] )?[a-z0-9_.]+: / {
		m = $0
		sub(/^# (\[[a-z]+\] )?[a-z0-9_.]+: /, "", m)
		if (keep(m)) {
			gsub(/ +/, " ", m); sub(/^ /, "", m); sub(/[,;]$/, "", m)
			pend[h] = pend[h] (pend[h] == "" ? "" : "; ") m
		}
		next
	}
	/^(not )?ok [0-9]+ [a-z0-9_]+\.[a-z0-9_]+/ {
		name = ($1 == "not") ? $4 : $3
		res = ($1 == "not") ? "FAILED" : ($0 ~ /# *SKIP/ ? "skip" : "ok")
		if (name ~ want) {
			if (!(name in status)) { order[++n] = name; status[name] = res }
			else if (res == "FAILED") status[name] = res
			if (name ~ /^peer_kill\.sockets_end/ && endlist[h] != "") {
				k = split(substr(endlist[h], 2), e, SUBSEP); x = ""
				for (i = 1; i <= k; i++)
					x = x (i > 1 ? ", " : "") ends[h, e[i]] " x " e[i]
				pend[h] = pend[h] (pend[h] == "" ? "" : "; ") "ended: " x
			}
			if (pend[h] != "") info[name] = info[name] " [" h "] " pend[h]
		}
		pend[h] = ""
		next
	}
	END {
		for (i = 1; i <= n; i++)
			printf "    %s %s:%s\n", status[order[i]], order[i], info[order[i]]
		for (x in victim)
			printf "    peer kill victim [%s]: %s; powered off mid-stream: %d time(s)\n", x, victim[x], killed[x]
	}' "${args[@]}"
}

campaigns() {
	local lines
	lines=$(campaign_lines a "$OUT/a-console.log" b "$OUT/b-console.log" \
		a "$OUT/peer-kill-a-console.log" b "$OUT/peer-kill-b-console.log")
	[ -n "$lines" ] || return 0
	echo "  campaigns (quoted from the guests' console logs; [a] client, [b] server):"
	echo "$lines"
}

# KTAP results of FILE; with CASES=1 only the test cases of KUnit suites
# (indented by exactly four spaces).
count_ktap() { # FILE LABEL CASES
	local file=$1 label=$2 pre='^ *' p f s
	[ "$3" = 1 ] && pre='^    '
	p=$(grep -cE "${pre}ok [0-9]+ " "$file")
	s=$(grep -cE "${pre}ok [0-9]+ .*# *SKIP" "$file")
	f=$(grep -cE "${pre}not ok [0-9]+ " "$file")
	p=$((p - s))
	passed=$((passed + p)); failed=$((failed + f))
	summary+=("$label: $p passed, $f failed, $s skipped")
}

# Kernel report kinds: label and extended regular expression.
checks=(
	"KASAN report|BUG: KASAN:|KASAN: .*(out-of-bounds|use-after-free|double-free|invalid-free|wild-memory-access|null-ptr-deref)"
	"lockdep report|possible circular locking|inconsistent lock state|possible recursive locking|possible irq lock inversion|suspicious RCU usage|Invalid wait context|bad unlock balance|held lock freed|lock held when returning to user space|DEBUG_LOCKS_WARN_ON"
	"sleeping in atomic context|BUG: sleeping function called from invalid context|BUG: scheduling while atomic"
	"debug objects report|ODEBUG:"
	"list corruption|list_(add|del) corruption|list_debug"
	"WARN|WARNING:"
	"BUG/Oops/panic|BUG:|Oops|Kernel panic|PANIC:|general protection fault|double fault|stack guard page|kernel stack overflow|UBSAN"
	"hung task or stall|blocked for more than|rcu: INFO:|soft lockup|hard LOCKUP|NETDEV WATCHDOG"
)

# One result per host and report kind over that host's kernel logs; TAG
# names the bed in the labels, KMEMLEAK=0: that host does not scan.
check_logs() { # HOST RESDIR [TAG [KMEMLEAK]]
	local h=$1 res=$2 tag=${3:-} km=${4:-1} c label re logs=() hits
	for f in "$res/$h/dmesg.txt" "$res/$h/serial.log"; do
		[ -f "$f" ] && logs+=("$f")
	done
	if [ ${#logs[@]} = 0 ]; then
		result 1 "${tag}host $h: no kernel log"
		return
	fi
	for c in "${checks[@]}"; do
		label=${c%%|*} re=${c#*|}
		# (the serial console ends its lines with CR LF)
		hits=$(cat "${logs[@]}" | tr -d '\r' | grep -E -- "$re" | sort -u)
		if [ -z "$hits" ]; then
			result 0 "${tag}host $h: no $label"
		else
			result 1 "${tag}host $h: $label: $(wc -l <<<"$hits") distinct lines, first: $(head -n 1 <<<"$hits")"
			{
				echo "== ${tag}host $h: $label"
				echo "$hits"
			} >>"$OUT/reports.txt"
		fi
	done
	# kmemleak: the guest's scan after the run (debug-job.sh).
	if [ "$km" = 0 ]; then
		summary+=("not checked: ${tag}host $h: kmemleak (no scan on this host)")
	elif [ ! -f "$res/$h/kmemleak.txt" ]; then
		result 1 "${tag}host $h: no kmemleak scan (guest died?)"
	elif grep -q '^kmemleak off' "$res/$h/kmemleak.txt"; then
		result 1 "${tag}host $h: kmemleak was off"
	elif grep -q '^unreferenced object' "$res/$h/kmemleak.txt"; then
		result 1 "${tag}host $h: kmemleak: $(grep -c '^unreferenced object' \
			"$res/$h/kmemleak.txt") suspected leaks (build/check-debug/${tag// /-}kmemleak-$h.txt)"
		cp "$res/$h/kmemleak.txt" "$OUT/${tag// /-}kmemleak-$h.txt"
	else
		result 0 "${tag}host $h: no kmemleak leak"
	fi
}

# visock_kunit.ko: the KUnit suites and the pure code they test, built
# against KDIR the way tools/testing/kunit builds them into a UML kernel.
build_kunit_module() { # KVER KDIR
	local kver=$1 kdir=$2 out=$ROOT/build/$1/kunit f
	mkdir -p "$out/tests" "$out/include/linux"
	cp -u "$T/kunit/visock_kunit/Makefile" "$out/Kbuild"
	cp -u "$ROOT"/include/uapi/linux/visock*.h "$out/include/linux/"
	# shellcheck source=kunit/files.sh
	. "$T/kunit/files.sh"
	for f in $pure_srcs $pure_hdrs; do
		cp -u "$ROOT/net/visock/$f" "$out/"
	done
	cp -u "$ROOT"/net/visock/tests/*_test.c "$ROOT"/net/visock/tests/*.h \
		"$out/tests/"
	make -C "$kdir" M="$out" CONFIG_VISOCK_KUNIT_TEST=m modules \
		>"$OUT/kunit-build.log" 2>&1 || { cat "$OUT/kunit-build.log"; return 1; }
	cp "$out/visock_kunit.ko" "$ROOT/build/$kver/visock_kunit.ko"
}

banner "debug kernel"
"$T/deps.sh" debug || result 1 "dependencies (tools/testing/deps.sh debug)"
if [ "$("$T/debug-kernel.sh" status)" != "up to date" ]; then
	echo "check-debug: building the debug kernel (once; cached)"
fi
"$VM" prepare --kernel 6.12-debug
rc=$?
result $rc "debug kernel ($(cat "$("$T/debug-kernel.sh" dir)/build-time" 2>/dev/null || echo 'no build'))"
[ $rc = 0 ] || finish
kver=$("$VM" kver 6.12-debug)
kdir=$("$T/debug-kernel.sh" kdir)

banner "build visock.ko and visock_kunit.ko for $kver"
"$T/build-module.sh" 6.12-debug
result $? "build $kver (W=1, sparse clean)"
build_kunit_module "$kver" "$kdir"
result $? "build visock_kunit.ko"
{ make -s -C "$T/selftests/net/visock" && make -s -C "$ROOT/tools/visock"; } \
	>"$OUT/selftests-build.log" 2>&1
rc=$?
[ $rc = 0 ] || cat "$OUT/selftests-build.log"
result $rc "selftests build"

banner "KUnit and kselftests on two debug guests, kernel $kver"
res="$ROOT/build/vm-results/$kver"
[ "${VISOCK_VM_INSTANCE:-0}" = 0 ] || res=$res-i$VISOCK_VM_INSTANCE
t0=$(date +%s)
VISOCK_RESULTS_DIR=$res VISOCK_VM_APPEND="kmemleak=on ${VISOCK_VM_APPEND:-}" \
	"$VM" run --kernel 6.12-debug --timeout "$TIMEOUT" -- \
	"$T/vm/debug-job.sh" "$@" >"$OUT/vm.log" 2>&1
echo "check-debug: guests ran $(($(date +%s) - t0)) s"
grep -E '^vm.sh: ' "$OUT/vm.log" | tail -n 20
for h in a b; do
	if [ -f "$res/$h/console.log" ]; then
		count_ktap "$res/$h/console.log" "kselftests host $h" 0
	else
		result 1 "kselftests host $h (no output)"
	fi
	if [ -f "$res/$h/rc" ]; then
		result 0 "host $h: job finished"
	else
		result 1 "host $h: job did not finish (guest died or timed out)"
	fi
done
if [ -s "$res/a/kunit.ktap" ]; then
	count_ktap "$res/a/kunit.ktap" "KUnit (host a)" 1
else
	result 1 "KUnit (host a): no results"
fi

# The full count of the decoders' fuzzing: 1,000,000 messages per decoder
# family in the UML kernel with KASAN (a few minutes), where the emulated
# debug guest above runs fewer.
banner "KUnit fuzzing, 1000000 messages per decoder family (UML, KASAN)"
VISOCK_KUNIT_FUZZ_ITERS=1000000 "$T/kunit/run_kunit.sh" 'visock_fuzz*' \
	>"$OUT/kunit-fuzz.log" 2>&1
rc=$?
line=$(grep -E '^kunit: [0-9]+ passed, [0-9]+ failed' "$OUT/kunit-fuzz.log" | tail -1)
if [ -n "$line" ]; then
	p=$(sed -E 's/^kunit: ([0-9]+) passed.*/\1/' <<<"$line")
	f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
	[ "$rc" != 0 ] && [ "$f" = 0 ] && f=1
	[ "$p" = 0 ] && f=$((f + 1))
	passed=$((passed + p)); failed=$((failed + f))
	summary+=("KUnit fuzzing (1000000 per family): $p passed, $f failed")
else
	tail -20 "$OUT/kunit-fuzz.log"
	result 1 "KUnit fuzzing (no result line)"
fi
# Keep a bed's logs in $OUT as PREFIX<host>-<file>.
save_logs() { # RESDIR PREFIX
	local h f
	for h in a b; do
		for f in dmesg.txt serial.log console.log kmemleak.txt; do
			[ -f "$1/$h/$f" ] && cp "$1/$h/$f" "$OUT/$2$h-$f"
		done
	done
}

for h in a b; do
	check_logs "$h" "$res"
done
save_logs "$res" ""

# Host b dies under RDMA streams (tools/testing/vm/peer-kill.sh), as in
# make check, on two fresh debug guests.
if [ "${VISOCK_DEBUG_PEER_KILL:-1}" != 0 ]; then
	banner "peer kill on two debug guests, kernel $kver"
	pres=$res-peer-kill
	t0=$(date +%s)
	VISOCK_RESULTS_DIR=$pres VISOCK_VM_APPEND="kmemleak=on ${VISOCK_VM_APPEND:-}" \
		"$VM" run --kernel 6.12-debug --timeout 1800 -- \
		"$T/vm/debug-job.sh" --peer-kill >"$OUT/peer-kill.log" 2>&1
	rc=$?
	echo "check-debug: peer kill guests ran $(($(date +%s) - t0)) s"
	tail -n 20 "$OUT/peer-kill.log"
	if [ -f "$pres/a/console.log" ]; then
		count_ktap "$pres/a/console.log" "peer kill (host a)" 0
	else
		result 1 "peer kill (host a): no output"
	fi
	result $rc "peer kill bed (job finished, kernel logs clean)"
	check_logs a "$pres" "peer kill " 1
	check_logs b "$pres" "peer kill " 0
	save_logs "$pres" peer-kill-
fi
[ -f "$OUT/reports.txt" ] && { echo; cat "$OUT/reports.txt"; }
finish
