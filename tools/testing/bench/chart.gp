# SPDX-License-Identifier: GPL-2.0
#
# chart.gp - the PNG chart of "make bench" (run-bench.sh calls it):
#   gnuplot -e "dir='RESULTS'; heading='...'; ntr=N; nrat=R; \
#               has_G=0|1; lo_G=BYTES; hi_G=BYTES (G: stream rtt cpu); \
#               has_ratio=0|1" chart.gp
# reads RESULTS/chart-{stream,rtt,cpu}.csv (rows of table.csv: metric,
# unit, better, group, size, N transport columns, R ratio columns) and
# writes RESULTS/bench.png.  lo_G and hi_G are the smallest and largest
# size of panel G (a single size gets a range around it).  A panel
# without data (has_G=0, e.g. with BENCH_ONLY; has_ratio=0 when no pair
# of a ratio ran) says so.

set terminal pngcairo size 1400,1000 font ",10"
set output dir . "/bench.png"
set datafile separator comma
set key top left autotitle columnheader
set grid
set logscale x 2
set xtics ("64 B" 64, "256 B" 256, "1 KiB" 1024, "4 KiB" 4096, "16 KiB" 16384, \
	"64 KiB" 65536, "256 KiB" 262144, "1 MiB" 1048576)
set multiplot layout 2,2 title heading

# An empty panel: "not measured" (or why, in the string why).
why = "not measured"
empty = "set label 1 why at graph 0.5, graph 0.5 center front; \
	set xrange [64:1048576]; plot 1 notitle lc rgb 'white'; unset label 1"
# The x range of a panel from its smallest and largest size, with a
# margin (also around a single size).
xr(lo, hi) = sprintf("set xrange [%g:%g]", lo / 1.5, hi * 1.5)

set title "stream throughput (higher is better)"
set xlabel "write size"
set ylabel "MB/s"
set logscale y
if (has_stream) {
	eval xr(lo_stream, hi_stream)
	plot for [i=6:5+ntr] dir . "/chart-stream.csv" using 5:i with linespoints
} else {
	eval empty
}

set title "request/response round trip, median (lower is better)"
set xlabel "message size"
set ylabel "us"
if (has_rtt) {
	eval xr(lo_rtt, hi_rtt)
	plot for [i=6:5+ntr] dir . "/chart-rtt.csv" using 5:i with linespoints
} else {
	eval empty
}

set title "guest CPU time per GiB moved, both hosts (lower is better)"
set xlabel "write size"
set ylabel "CPU s / GiB"
if (has_cpu) {
	eval xr(lo_cpu, hi_cpu)
	plot for [i=6:5+ntr] dir . "/chart-cpu.csv" using 5:i with linespoints
} else {
	eval empty
}

set title "stream throughput ratios, A / B (above 1: A faster)"
set xlabel "write size"
set ylabel "ratio"
unset logscale y
set yrange [0:*]
if (has_stream && has_ratio) {
	eval xr(lo_stream, hi_stream)
	plot for [i=6+ntr:5+ntr+nrat] dir . "/chart-stream.csv" using 5:i with linespoints, \
		1 with lines lc rgb "black" dt 2 notitle
} else {
	why = "no ratio: no pair of a ratio measured"
	eval empty
}

unset multiplot
