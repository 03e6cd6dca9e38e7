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
# the sixth on, then the ratios (the columns whose name has a "/").
ntr=$(head -n 1 "$dir/table.csv" | tr ',' '\n' | sed -n '6,$p' | grep -vc / || true)
nrat=$(head -n 1 "$dir/table.csv" | tr ',' '\n' | sed -n '6,$p' | grep -c / || true)
vars="ntr=$ntr; nrat=$nrat"
for g in stream rtt cpu; do
	awk -F, -v g="$g" 'NR == 1 || $4 == g' "$dir/table.csv" >"$dir/chart-$g.csv"
	# has_G: rows; lo_G, hi_G: the smallest and largest size (one
	# size alone gets a range around it: a log axis needs one).
	vars+=$(awk -F, -v g="$g" 'NR > 1 { n++; if (!lo || $5 < lo) lo = $5; if ($5 > hi) hi = $5 }
		END { printf "; has_%s=%d; lo_%s=%s; hi_%s=%s", g, (n > 0), g, (lo ? lo : 64), g, (hi ? hi : 1048576) }' \
		"$dir/chart-$g.csv")
done
# has_ratio: a stream row with at least one ratio.
vars+=$(awk -F, -v f=$((6 + ntr)) 'NR > 1 { for (i = f; i <= NF; i++) if ($i != "") r = 1 }
	END { printf "; has_ratio=%d", r }' "$dir/chart-stream.csv")
gnuplot -e "dir='$dir'; heading='$(tr -d "'" <<<"${heading%,}")'; $vars" "$HERE/chart.gp" \
	2>"$dir/chart.log" || echo "report.sh: gnuplot failed, see $dir/chart.log" >&2
