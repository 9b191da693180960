# Claims of a distributed queue (4 shards on 2 workers) against a queue on the coordinator, in
# the same run on the same Citus cluster: jobs/s with pgbench (each transaction one statement,
# claim and complete of one job), the CPU each node spent per job (its backends' utime + stime
# from /proc), and the statements the coordinator sent to workers per job
# (citus.log_remote_commands). The distributed queue twice: clients connected to the
# coordinator, and clients connected to the workers (half to each), which route the calls. Run by test/citus/bench.sh; CK_BENCH_CLIENTS (default 4) and
# CK_BENCH_JOBS (per client and round, default 1500) size it.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use IPC::Run;
use CkCitus;

my $clients = $ENV{CK_BENCH_CLIENTS} // 4;
my $per_client = $ENV{CK_BENCH_JOBS} // 1500;
my ($coord, @workers) = CkCitus::cluster(conf => "max_connections = 100\nlog_min_messages = warning\n");
my @nodes = ($coord, @workers);
my @names = ('coordinator', map { "worker$_" } 1 .. @workers);
sub sql { CkCitus::sql($coord, @_) }

sql(q{SELECT ck.create_queue('local_q', notify => false)});
sql(q{SELECT ck.create_queue('dist_q', notify => false)});
sql(q{SELECT ck.distribute_queue('dist_q', 4)});

# CPU seconds spent so far by the node's postmaster and its children (the backends, live and exited).
sub node_cpu
{
	my ($node) = @_;
	my $root = $node->{_pid};
	my $ticks = 0;
	for my $stat (glob '/proc/[0-9]*/stat')
	{
		open my $fh, '<', $stat or next;
		my $line = <$fh>;
		close $fh;
		next unless defined $line && $line =~ /^(\d+) \(.*\) \S+ (\d+) (.*)$/;
		my ($pid, $ppid, @rest) = ($1, $2, split / /, $3);
		next unless $pid == $root || $ppid == $root;
		$ticks += $rest[9] + $rest[10];    # utime, stime (fields 14 and 15)
		# The postmaster's cutime and cstime (16, 17): the backends that have exited.
		$ticks += $rest[11] + $rest[12] if $pid == $root;
	}
	return $ticks / 100.0;
}

# The statements the coordinator sends to workers for one claim-and-complete.
sub remote_per_job
{
	my ($queue) = @_;
	sql("SELECT ck.enqueue('$queue', '{}') FROM generate_series(1, 20)");
	my ($ret, $out, $err) = $coord->psql('postgres',
		"SET citus.log_remote_commands = on; SET client_min_messages = log;"
		  . join('', map { "SELECT ck.complete('$queue', id, lease_token) FROM ck.claim('$queue', 1);" } 1 .. 20));
	my @issued = $err =~ /NOTICE:  issuing/g;
	return @issued / 20;
}

# round(QUEUE, NODES...): the jobs of one round enqueued, then drained by pgbench clients
# connected to NODES (split evenly, all at once).
sub round
{
	my ($queue, @targets) = @_;
	my $jobs = $clients * $per_client;
	sql("SELECT ck.enqueue('$queue', jsonb_build_object('n', g)) FROM generate_series(1, $jobs) g");
	my $script = PostgreSQL::Test::Utils::tempdir() . "/$queue.sql";
	open my $fh, '>', $script or die;
	print $fh "SELECT ck.complete('$queue', id, lease_token) FROM ck.claim('$queue', 1);\n";
	close $fh;
	my $sessions = q{SELECT sum(sessions) FROM pg_stat_database};
	my @sessions0 = map { $_->safe_psql('postgres', $sessions) } @workers;
	my @cpu0 = map { node_cpu($_) } @nodes;
	my $t0 = time;
	my $each = $clients / @targets;
	my @runs = map {
		my ($o, $e) = ('', '');
		[ IPC::Run::start([ 'pgbench', '-n', '-M', 'prepared', '-c', $each, '-j', $each, '-t', $per_client, '-f', $script,
					'-d', $_->connstr('postgres') ], '>', \$o, '2>', \$e), \$o, \$e ]
	} @targets;
	my $done = 0;
	for my $r (@runs)
	{
		$r->[0]->finish or die "pgbench: ${ $r->[2] }";
		die "pgbench: ${ $r->[2] }" unless ${ $r->[1] } =~ /number of transactions actually processed: (\d+)/;
		$done += $1;
	}
	my $elapsed = time - $t0;
	my @cpu1 = map { node_cpu($_) } @nodes;
	sleep 1;    # session statistics are flushed when sessions end
	my $opened = 0;
	$opened += $workers[$_]->safe_psql('postgres', $sessions) - $sessions0[$_] - 1 for 0 .. $#workers;
	is(sql("SELECT count(*) FROM $queue"), '0', "$queue: every job claimed and completed");
	return { tps => $done / $elapsed, cpu => [ map { ($cpu1[$_] - $cpu0[$_]) / $done * 1e6 } 0 .. $#nodes ],
		opened => $opened };
}

my %result;
my %targets = (local_q => [$coord], dist_q => [$coord], 'dist_q via workers' => [@workers]);
my @variants = ('local_q', 'dist_q', 'dist_q via workers');
for my $r (1 .. 2)
{
	for my $variant (@variants)
	{
		push @{ $result{$variant} }, round((split / /, $variant)[0], @{ $targets{$variant} });
	}
}
for my $variant (@variants)
{
	for my $r (@{ $result{$variant} })
	{
		diag sprintf('%-18s %8.0f jobs/s  CPU us/job: %s; sessions opened on the workers: %d', $variant, $r->{tps},
			join(', ', map { "$names[$_] " . sprintf('%.0f', $r->{cpu}[$_]) } 0 .. $#names), $r->{opened});
	}
}
diag sprintf('%-8s statements to workers per job: %.1f', $_, remote_per_job($_)) for 'local_q', 'dist_q';
diag "$clients clients, $per_client jobs each per round (through the workers: half the clients on each)";
done_testing();
