-- Set-up for the race detector's cost (bench/run.sh race_cell): the stock and optimistic benchmarks' tables.
\ir stock_setup.sql
\ir version_setup.sql
