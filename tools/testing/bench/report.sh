#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# report.sh - the report of a "make bench" run (run-bench.sh and
# bench-hosts.sh call it):
#
#   report.sh DIR HEADING [LINE...]
#
# Reads DIR/bench.txt (bench.sh's RESULT and NOTE lines) and writes
# DIR/table.txt (HEADING, the LINEs, then the table), DIR/table.csv and,
# if gnuplot is installed, DIR/bench.png (chart.gp).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { sed -n '4,12s/^# \{0,1\}//p' "$0" >&2; exit 2; }
dir=$1 heading=$2
shift 2
{
	echo "$heading"
	for line in "$@"; do echo "$line"; done
	echo
	"$HERE/bench.sh" --table "$dir/bench.txt" "$dir/table.csv"
} >"$dir/table.txt"
command -v gnuplot >/dev/null || exit 0
# One CSV per panel (contiguous rows); transports are the columns from
# the sixth on, up to the visock/X ratios.
ntr=$(head -n 1 "$dir/table.csv" | tr ',' '\n' | sed -n '6,$p' | grep -vc '^visock/' || true)
has=''
for g in stream rtt cpu; do
	awk -F, -v g="$g" 'NR == 1 || $4 == g' "$dir/table.csv" >"$dir/chart-$g.csv"
	has+="; has_$g=$(($(wc -l <"$dir/chart-$g.csv") > 1))"
done
gnuplot -e "dir='$dir'; ntr=$ntr; heading='$(tr -d "'" <<<"${heading%,}")'$has" "$HERE/chart.gp" \
	2>"$dir/chart.log" || echo "report.sh: gnuplot failed, see $dir/chart.log" >&2
