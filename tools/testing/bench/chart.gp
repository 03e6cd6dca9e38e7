# SPDX-License-Identifier: GPL-2.0
#
# chart.gp - the PNG chart of "make bench" (run-bench.sh calls it):
#   gnuplot -e "dir='RESULTS'; ntr=N; heading='...'; has_stream=0|1; \
#               has_rtt=0|1; has_cpu=0|1" chart.gp
# reads RESULTS/chart-{stream,rtt,cpu}.csv (rows of table.csv: metric,
# unit, better, group, size, N transport columns, 3 visock/X ratios) and
# writes RESULTS/bench.png.  A panel without data (has_X=0, e.g. with
# BENCH_ONLY) says so.

set terminal pngcairo size 1400,1000 font ",10"
set output dir . "/bench.png"
set datafile separator comma
set key top left autotitle columnheader
set grid
set offsets graph 0.03, graph 0.03, 0, 0
set logscale x 2
set xtics ("64 B" 64, "256 B" 256, "1 KiB" 1024, "4 KiB" 4096, "16 KiB" 16384, \
	"64 KiB" 65536, "256 KiB" 262144, "1 MiB" 1048576)
set multiplot layout 2,2 title heading

# An empty panel: "not measured".
empty = "set label 1 'not measured' at graph 0.5, graph 0.5 center front; \
	set xrange [64:1048576]; plot 1 notitle lc rgb 'white'; unset label 1; set autoscale x"

set title "stream throughput (higher is better)"
set xlabel "write size"
set ylabel "MB/s"
set logscale y
if (has_stream) {
	plot for [i=6:5+ntr] dir . "/chart-stream.csv" using 5:i with linespoints
} else {
	eval empty
}

set title "request/response round trip, median (lower is better)"
set xlabel "message size"
set ylabel "us"
if (has_rtt) {
	plot for [i=6:5+ntr] dir . "/chart-rtt.csv" using 5:i with linespoints
} else {
	eval empty
}

set title "guest CPU time per GiB moved, both hosts (lower is better)"
set xlabel "write size"
set ylabel "CPU s / GiB"
if (has_cpu) {
	plot for [i=6:5+ntr] dir . "/chart-cpu.csv" using 5:i with linespoints
} else {
	eval empty
}

set title "stream throughput, visock / X (above 1: visock faster)"
set xlabel "write size"
set ylabel "ratio"
unset logscale y
set yrange [0:*]
if (has_stream) {
	plot for [i=6+ntr:8+ntr] dir . "/chart-stream.csv" using 5:i with linespoints, \
		1 with lines lc rgb "black" dt 2 notitle
} else {
	eval empty
}

unset multiplot
