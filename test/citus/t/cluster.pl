# The Citus test cluster itself (CkCitus.pm): a coordinator and two workers with Citus and concurrency_kit.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use CkCitus;

my ($coord, @workers) = CkCitus::cluster();

is(CkCitus::sql($coord, "SELECT count(*) FROM pg_dist_node WHERE isactive AND noderole = 'primary'"),
	'3', 'the coordinator and both workers are active nodes');
is(CkCitus::sql($coord, 'SELECT count(*) FROM citus_get_active_worker_nodes()'),
	'2', 'two worker nodes take shards');
my $version = CkCitus::sql($coord, "SELECT extversion FROM pg_extension WHERE extname = 'concurrency_kit'");
for my $i (0 .. $#workers)
{
	is(CkCitus::sql($workers[$i], "SELECT extversion FROM pg_extension WHERE extname = 'concurrency_kit'"),
		$version, "CREATE EXTENSION concurrency_kit on the coordinator reached worker " . ($i + 1) . " ($version)");
	is(CkCitus::sql($workers[$i], 'SHOW shared_preload_libraries'), 'citus,concurrency_kit',
		"worker " . ($i + 1) . " preloads both libraries");
}

# A table distributed by its key: its shards on both workers, a row reachable from the coordinator.
CkCitus::sql($coord, q{
	CREATE TABLE t (id int PRIMARY KEY, n int NOT NULL);
	SELECT create_distributed_table('t', 'id');
	INSERT INTO t SELECT g, g FROM generate_series(1, 20) g;
});
is(CkCitus::sql($coord, 'SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = \'t\'::regclass'),
	'2', 'a distributed table has shards on both workers');
is(CkCitus::sql($coord, 'SELECT sum(n) FROM t'), '210', 'the coordinator reads every shard');
like(CkCitus::sql_error($coord, 'SELECT 1/0'), qr/division by zero/, 'sql_error returns the error');
is(CkCitus::sql_error($coord, 'SELECT 1'), '', 'sql_error is empty on success');

done_testing();
