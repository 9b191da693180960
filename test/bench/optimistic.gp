# make bench (section optimistic): successes per second against clients, one line per way and workload.
# gnuplot -e "data='.../optimistic.dat'; out='.../optimistic.png'" optimistic.gp
# Columns of the data file: clients, then optimistic, pessimistic and conditional successes/s on one hot row,
# then the same on 10,000 rows.
set terminal pngcairo size 1000,560 font ",11" noenhanced
set output out
set title "Successes per second: optimistic, pessimistic, conditional (synchronous_commit off, 2 CPUs)"
set xlabel "clients"
set ylabel "successes/s"
set logscale x
set xrange [0.85:19]
set xtics (1, 4, 16)
set yrange [0:*]
set grid xtics ytics
set key outside right center
do for [i=1:3] { set linetype i lw 2 pt 7 dashtype 1 }
do for [i=4:6] { set linetype i lw 2 pt 7 dashtype 2 }
set linetype 1 lc rgb "#1f77b4"
set linetype 2 lc rgb "#d62728"
set linetype 3 lc rgb "#2ca02c"
set linetype 4 lc rgb "#1f77b4"
set linetype 5 lc rgb "#d62728"
set linetype 6 lc rgb "#2ca02c"
plot data using 1:2 with linespoints lt 1 title "optimistic, one hot row", \
     data using 1:3 with linespoints lt 2 title "pessimistic, one hot row", \
     data using 1:4 with linespoints lt 3 title "conditional, one hot row", \
     data using 1:5 with linespoints lt 4 title "optimistic, 10,000 rows", \
     data using 1:6 with linespoints lt 5 title "pessimistic, 10,000 rows", \
     data using 1:7 with linespoints lt 6 title "conditional, 10,000 rows"
