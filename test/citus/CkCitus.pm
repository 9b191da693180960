# CkCitus: a Citus cluster for the Citus suite (test/citus/t/*.pl), on PostgreSQL's own TAP framework
# (PostgreSQL::Test::Cluster). test/citus/run.sh runs the tests with prove, as the server's user when run as root.
#
#   use lib ...;   # run.sh puts this directory and PostgreSQL's test/perl on @INC
#   use CkCitus;
#   my ($coord, @workers) = CkCitus::cluster();            # coordinator + 2 workers, started
#   my ($coord, @workers) = CkCitus::cluster(workers => 3, conf => "max_connections = 200\n");
#
# cluster(workers => N, conf => TEXT): N (default 2) workers and a coordinator, each a started
#   PostgreSQL::Test::Cluster node listening on 127.0.0.1 (and its own Unix socket), with
#   shared_preload_libraries = 'citus,concurrency_kit' and TEXT appended to postgresql.conf. Database
#   postgres holds CREATE EXTENSION citus on every node; the coordinator is registered
#   (citus_set_coordinator_host) and the workers added (citus_add_node); CREATE EXTENSION concurrency_kit
#   then runs on the coordinator only: Citus propagates it to the workers (t/cluster.pl checks that). The
#   nodes stop when the test ends (the framework's END block); $node->stop / ->start / ->restart work as usual.
# sql($node, SQL): SQL's output on NODE (psql -At, rows by newline, columns by |); dies on an error.
# sql_error($node, SQL): the error message SQL raised on NODE (psql's stderr, with its "psql:...: " prefix
#   removed), or '' when it succeeded.
# session($node): a PostgreSQL::Test::BackgroundPsql session on NODE, for one of several concurrent sessions:
#   $s->query_safe(SQL) waits for SQL's result, $s->query_until(qr/.../, SQL) sends SQL and returns once the
#   pattern shows (so that SQL may still be waiting on a lock), $s->quit ends it.
# pid($session) and wait_for_lock($node, PID): a session's backend pid; wait until that backend waits on a lock
#   (pg_locks ungranted), bounded by the framework's timeout.
# wait_until($node, SQL): wait until SQL returns t on NODE (bounded likewise); dies otherwise.
# remote_commands($node, SQL): runs SQL on NODE with citus.log_remote_commands on and returns what Citus sent
#   where, one string per command, "PORT: COMMAND" (a worker's port) or "local: COMMAND" (executed on NODE).
# port_of($coord, TABLE, VALUE): the port of the node holding the shard of TABLE for the distribution value VALUE.
package CkCitus;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;

sub sql
{
	my ($node, $sql) = @_;
	return $node->safe_psql('postgres', $sql);
}

sub sql_error
{
	my ($node, $sql) = @_;
	my ($ret, $stdout, $stderr) = $node->psql('postgres', $sql, on_error_stop => 1);
	return '' if $ret == 0;
	$stderr =~ s/^psql:[^:]*:\d+: //mg;
	return $stderr;
}

# sql_state(NODE, SQL): the SQLSTATE of the error SQL raises on NODE, '' when it succeeds.
sub sql_state
{
	my ($node, $sql) = @_;
	my ($ret, $stdout, $stderr) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return $ret == 0 ? '' : ($stderr =~ /ERROR:  (\w{5}):/)[0];
}

sub session
{
	my ($node) = @_;
	return $node->background_psql('postgres', on_error_stop => 0);
}

sub pid
{
	my ($session) = @_;
	my $pid = $session->query_safe('SELECT pg_backend_pid()');
	chomp $pid;
	return $pid;
}

sub wait_for_lock
{
	my ($node, $pid) = @_;
	$node->poll_query_until('postgres',
		"SELECT EXISTS (SELECT FROM pg_locks WHERE pid = $pid AND NOT granted)")
	  or die "backend $pid never waited on a lock";
}

sub wait_until
{
	my ($node, $sql) = @_;
	$node->poll_query_until('postgres', $sql) or die "never true: $sql";
}

sub remote_commands
{
	my ($node, $sql) = @_;
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		"SET citus.log_remote_commands = on; SET client_min_messages = notice;\n$sql", on_error_stop => 1);
	die "remote_commands: $stderr" if $ret != 0;
	my @commands;
	# (psql() drops the output's last newline: a local command may end the text.)
	while ($stderr =~ /NOTICE:  (?:issuing (.*?)\nDETAIL:  on server \S+?:(\d+) |executing the command locally: (.*?)(?:\n|\z))/sg)
	{
		push @commands, defined $3 ? "local: $3" : "$2: $1";
	}
	return @commands;
}

sub port_of
{
	my ($coord, $table, $value) = @_;
	return sql($coord, "SELECT nodeport FROM citus_shards "
		  . "WHERE shardid = get_shard_id_for_distribution_column('$table', $value)");
}

sub cluster
{
	my (%args) = @_;
	my $count = $args{workers} // 2;
	my @nodes;
	for my $name ('coordinator', map { "worker$_" } 1 .. $count)
	{
		my $node = PostgreSQL::Test::Cluster->new($name);
		$node->init;
		# Citus connects to the other nodes by host and port: 127.0.0.1 besides the framework's socket.
		$node->append_conf('postgresql.conf', <<"EOF" . ($args{conf} // ''));
listen_addresses = '127.0.0.1'
shared_preload_libraries = 'citus,concurrency_kit'
max_prepared_transactions = 20
max_connections = 100
citus.shard_replication_factor = 1
EOF
		$node->start;
		sql($node, 'CREATE EXTENSION citus');
		push @nodes, $node;
	}
	my ($coordinator, @workers) = @nodes;
	sql($coordinator, "SELECT citus_set_coordinator_host('127.0.0.1', " . $coordinator->port . ')');
	sql($coordinator, "SELECT citus_add_node('127.0.0.1', " . $_->port . ')') for @workers;
	sql($coordinator, 'CREATE EXTENSION concurrency_kit');
	return @nodes;
}

1;
