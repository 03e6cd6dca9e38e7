# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2154
#
# What make check, make check-debug and make check-fleet share: stage
# banners and one pass/fail result per stage.  The including script sets
# check_name ("check", "check-debug", ...), start (seconds since the
# epoch), passed, failed and the summary array.

# A stage starts: its name and the seconds since the run began.
banner() { echo; echo "=== make $check_name: $* ($(($(date +%s) - start)) s)"; }

# One pass/fail result for a whole stage: STATUS (0 = passed) LABEL.
result() {
	if [ "$1" = 0 ]; then
		passed=$((passed + 1))
		summary+=("$2: ok")
	else
		failed=$((failed + 1))
		summary+=("$2: FAILED")
	fi
}
