# make bench-peers: jobs per second against workers, synchronous_commit off, one line per system (columns of the
# data file: workers, then one per system, titled by the first row).
# gnuplot -e "data='.../throughput_off.dat'; out='.../peers_throughput.png'" throughput.gp
set terminal pngcairo size 1150,650 font ",11" noenhanced
set output out
set title "Jobs per second against workers (no-op handlers, synchronous_commit off, 2 CPUs)"
set xlabel "workers"
set ylabel "jobs/s"
set logscale xy
set xrange [0.85:75]
set xtics (1, 4, 8, 16, 64)
set format y "%.0f"
set grid xtics ytics mytics
set key outside right center
# the seed and the four ck ways solid, the other systems dashed
array colour[10] = ["#000000", "#d62728", "#ff7f0e", "#bcbd22", "#e377c2", "#1f77b4", "#2ca02c", "#98df8a", "#9467bd", "#17becf"]
do for [i=1:5] { set linetype i lc rgb colour[i] lw 2 pt 7 dashtype 1 }
do for [i=6:10] { set linetype i lc rgb colour[i] lw 2 pt 7 dashtype 2 }
ncol = system("awk 'NR == 2 { print NF }' '" . data . "'") + 0
plot for [i=2:ncol] data using 1:i with linespoints lt (i - 1) title columnheader(i)
