# make bench-sustained: one system's run in four panels over time (the data file of run.sh: seconds, jobs/s,
# backlog, heap MB, index MB, dead tuples, autovacuum passes, autovacuum running, claims, claim p50 ms, p99 ms).
# gnuplot -e "data='...'; out='...png'; name='...'; jobs=N; rate=R; tmax=..; rmax=..; smax=..; dmax=..; lmax=.." plot.gp
set terminal pngcairo size 1200,800 font ",10" noenhanced
set output out
set multiplot layout 2,2 title sprintf("%s: %d jobs at %d jobs/s, 8 producers and 8 workers, autovacuum at its defaults", name, jobs, rate)
set xrange [0:tmax]
set xlabel "seconds"
set grid
set key top left
set style fill transparent solid 0.15 noborder

set title "throughput (per 10 s) and backlog"
set ylabel "jobs/s"
set yrange [0:rmax]
set y2label "jobs in the queue"
set y2tics
set autoscale y2
set y2range [0:*]
plot data using 1:2 with lines lw 2 lc rgb "#1f77b4" title "jobs/s", \
     data using 1:3 axes x1y2 with lines lw 1 lc rgb "#7f7f7f" title "backlog"
unset y2label
unset y2tics

# a triangle on top where a sample saw more autovacuum passes than the one before
av(c, top) = (c > prev ? (prev = c, top * 0.97) : (prev = c, NaN))

set title "table size (shaded: autovacuum running on it; triangles: a pass ended)"
set ylabel "MB"
set yrange [0:smax]
prev = 0
plot data using 1:($8 * smax) with boxes lc rgb "#2ca02c" title "", \
     data using 1:(av($7, smax)) with points pt 11 ps 1.5 lc rgb "#2ca02c" title "", \
     data using 1:4 with lines lw 2 lc rgb "#d62728" title "heap", \
     data using 1:5 with lines lw 2 lc rgb "#9467bd" title "indexes"

set title "dead tuples (shaded: autovacuum running; triangles: a pass ended)"
set ylabel "dead tuples"
set yrange [0:dmax]
prev = 0
plot data using 1:($8 * dmax) with boxes lc rgb "#2ca02c" title "", \
     data using 1:(av($7, dmax)) with points pt 11 ps 1.5 lc rgb "#2ca02c" title "", \
     data using 1:6 with lines lw 2 lc rgb "#ff7f0e" title "n_dead_tup"

set title "claim latency (claims in each 10 s)"
set ylabel "ms"
set yrange [0:lmax]
plot data using 1:10 with lines lw 2 lc rgb "#000000" title "p50", \
     data using 1:11 with lines lw 2 lc rgb "#d62728" title "p99"
unset multiplot
