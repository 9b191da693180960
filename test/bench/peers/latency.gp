# make bench-peers: claim latency against backlog, one line per system (columns of the data file: backlog, then
# one per system, titled by the first row).
# gnuplot -e "data='.../latency.dat'; out='.../peers_latency.png'" latency.gp
set terminal pngcairo size 1000,600 font ",11" noenhanced
set output out
set title "Claim latency against backlog (one client, synchronous_commit off)"
set xlabel "jobs in the queue"
set ylabel "ms per claim"
set logscale xy
set format x "%.0s%c"
set format y "%g"
set grid xtics ytics mytics
set key top left
array colour[3] = ["#000000", "#d62728", "#2ca02c"]
do for [i=1:3] { set linetype i lc rgb colour[i] lw 2 pt 7 }
ncol = system("awk 'NR == 2 { print NF }' '" . data . "'") + 0
plot for [i=2:ncol] data using 1:i with linespoints lt (i - 1) title columnheader(i)
