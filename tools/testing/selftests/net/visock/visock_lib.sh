# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Shell helpers of the visock selftest scripts (run_tests.sh,
# visock_apps.sh), sourced by both: the test list with --pick/--skip
# selection, KTAP output and the counters behind it, and where the
# tools of tools/visock are.
#
# The sourcing script sets PICKS and SKIPS (arrays of shell globs over
# the test names) before it adds tests, and DIR (its own directory).

declare -a TESTS=()
declare -A SEL=() REPORTED=()
NR=0
NPASS=0
NFAIL=0
NSKIP=0

# selected NAME: NAME matches a --pick pattern (or there are none) and no
# --skip pattern.
selected() {
	local p hit=0

	if [ ${#PICKS[@]} -gt 0 ]; then
		for p in "${PICKS[@]}"; do
			# shellcheck disable=SC2053
			[[ $1 == $p ]] && hit=1
		done
		[ $hit = 1 ] || return 1
	fi
	for p in "${SKIPS[@]}"; do
		# shellcheck disable=SC2053
		[[ $1 == $p ]] && return 1
	done
	return 0
}

# add_test NAME: NAME joins the test list if selected.
add_test() {
	if selected "$1"; then
		TESTS+=("$1")
		SEL[$1]=1
	fi
}

# diag TEXT: TEXT as KTAP diagnostic lines, one "# " line per line.
diag() {
	local line

	while IFS= read -r line; do
		echo "# $line"
	done <<< "$*"
}

# ktap_plan: the KTAP header for the test list.
ktap_plan() {
	echo "TAP version 13"
	echo "1..${#TESTS[@]}"
}

# result NAME pass|fail|skip [REASON]: the test's KTAP line.  Only tests
# of the list are reported, each once.
result() {
	local name=$1 res=$2 reason=${3:-}

	[ -n "${SEL[$name]:-}" ] || return 0
	[ -z "${REPORTED[$name]:-}" ] || return 0
	REPORTED[$name]=1
	NR=$((NR + 1))
	case "$res" in
	pass)
		NPASS=$((NPASS + 1))
		echo "ok $NR $name" ;;
	skip)
		NSKIP=$((NSKIP + 1))
		echo "ok $NR $name # SKIP $reason" ;;
	*)
		NFAIL=$((NFAIL + 1))
		[ -n "$reason" ] && diag "$name: $reason"
		echo "not ok $NR $name" ;;
	esac
}

# ktap_summary WHAT: the closing count line.
ktap_summary() {
	echo "# $1: $NPASS passed, $NFAIL failed, $NSKIP skipped"
}

# group_selected GROUP: a test GROUP.<name> is on the list.
group_selected() {
	local n

	for n in "${TESTS[@]}"; do
		[[ $n == "$1".* ]] && return 0
	done
	return 1
}

# finish_group GROUP pass|fail|skip REASON: every test of GROUP not
# reported yet gets this verdict.
finish_group() {
	local group=$1 res=$2 reason=$3 n

	for n in "${TESTS[@]}"; do
		[[ $n == "$group".* ]] && result "$n" "$res" "$reason"
	done
}

# has_redirect_hook: the kernel has the update_socket_protocol() hook
# (6.6+) that visock_redirect attaches to.
has_redirect_hook() {
	awk '$3 == "update_socket_protocol" { f = 1 } END { exit !f }' \
		/proc/kallsyms
}

# visock_tool FILE [TARGET...]: the absolute path of tools/visock/FILE,
# next to this directory in a source tree or under $VISOCK_SRC; nothing
# if it is not there.  With TARGETs a missing FILE is built first with
# "make TARGET..." where the Makefile is.
visock_tool() {
	local file=$1 dir

	shift
	for dir in "$DIR/../../../../visock" \
		   ${VISOCK_SRC:+"$VISOCK_SRC/tools/visock"}; do
		if [ $# -gt 0 ] && [ ! -e "$dir/$file" ] &&
		   [ -f "$dir/Makefile" ]; then
			make -s -C "$dir" "$@" >/dev/null 2>&1
		fi
		if [ -e "$dir/$file" ]; then
			echo "$(cd "$dir" && pwd)/$file"
			return
		fi
	done
}
