# Faults on the cluster (issue 23 part 4): 8 claimers drain a distributed queue while the workers'
# backends serving the coordinator are terminated and a worker node is restarted. No job is lost,
# none is done twice, and the leases the faults cut are claimed again. A job whose completion
# committed on its shard while the coordinator's transaction (which records it in done) was cut
# at its commit is the one-phase commit gap the README documents: the claimer notes each job it
# is about to complete (committed first), so such a job is told from a lost one. CK_CHAOS=full (make chaos):
# 4,000 jobs, ten rounds of terminations, then both workers restarted one after the other;
# otherwise (make test) 800 jobs, three rounds, worker 1 restarted.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use CkCitus;

my ($coord, @workers) = CkCitus::cluster();
sub sql { CkCitus::sql($coord, @_) }
my $full = ($ENV{CK_CHAOS} // '') eq 'full';
my $jobs = $full ? 4000 : 800;
my $rounds = $full ? 10 : 3;
my $step = int($jobs / (2 * $rounds + 2));

sql(q{SELECT ck.create_queue('jobs', lease => '2 s', max_attempts => 100, notify => false)});
sql(q{SELECT ck.distribute_queue('jobs', 4)});
sql("SELECT ck.enqueue('jobs', jsonb_build_object('n', g)) FROM generate_series(1, $jobs) g");
# Each completion is recorded in the transaction that completes the job: a job done twice would
# show twice (no key here on purpose), a job lost would be missing. The attempt is kept to see
# which leases were cut and claimed again.
sql(q{CREATE TABLE done (id bigint NOT NULL, attempt int NOT NULL, at timestamptz DEFAULT clock_timestamp())});
sql(q{CREATE TABLE completing (id bigint NOT NULL, attempt int NOT NULL)});

# A claimer: claims (and commits the claim), then completes, until the queue is empty, starting again after an error (its
# connection or the worker's was cut); gives up after 120 s.
my $drain = q{DO $$ DECLARE r record; BEGIN LOOP
	SELECT * INTO r FROM ck.claim('jobs', 1);
	IF NOT FOUND THEN
		EXIT WHEN NOT EXISTS (SELECT FROM ck.queue_stats('jobs') AS s WHERE s.running + s.expired + s.ready + s.scheduled > 0);
		PERFORM pg_sleep(0.2); CONTINUE;
	END IF;
	COMMIT;   -- the lease is taken: a fault from here on cuts it
	PERFORM pg_sleep(0.02);   -- the job's work
	INSERT INTO completing (id, attempt) VALUES (r.id, r.attempts);
	COMMIT;
	INSERT INTO done (id, attempt) VALUES (r.id, r.attempts);
	IF NOT ck.complete('jobs', r.id, r.lease_token) THEN RAISE EXCEPTION 'lease lost'; END IF;
	COMMIT; END LOOP; END $$};
my $conn = $coord->connstr('postgres');
my @claimers;
for (1 .. 8)
{
	push @claimers, IPC::Run::start([ 'bash', '-c', 'for i in $(seq 1 600); do psql -X -q -v ON_ERROR_STOP=1 -d "$1" -c "$2" && exit 0; sleep 0.2; done; exit 1', 'x', $conn, $drain ],
		'>', \my $out, '2>', \my $err);
}

# The faults, while they drain: the workers' backends that run the coordinator's statements
# are terminated $rounds times, then worker 1 restarts (failing the completions of the leases its
# shards gave out), and in the full run worker 2 after it.
for my $round (1 .. $rounds)
{
	$coord->poll_query_until('postgres', "SELECT count(*) >= $round * $step FROM done") or die 'no progress';
	for my $w (@workers)
	{
		$w->safe_psql('postgres', q{SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE application_name LIKE 'citus_internal%' AND backend_type = 'client backend'});
	}
}

$coord->poll_query_until('postgres', 'SELECT count(*) >= ' . int($jobs / 2) . ' FROM done') or die 'no progress';
$workers[0]->restart;
if ($full)
{
	$coord->poll_query_until('postgres', 'SELECT count(*) >= ' . int($jobs * 3 / 4) . ' FROM done') or die 'no progress';
	$workers[1]->restart;
}

my $failed = 0;
for my $c (@claimers) { $c->finish or $failed++ }
is($failed, 0, 'all 8 claimers finished (each restarting after the errors the faults caused)');
is(sql(q{SELECT count(*) FROM jobs}), '0', 'the queue is empty');
is(sql(q{SELECT dead FROM ck.queue_stats('jobs')}), '0', 'no job died');
my $recorded = sql(q{SELECT count(DISTINCT id) FROM done});
my $cut = sql(q{SELECT count(DISTINCT c.id) FROM completing AS c WHERE NOT EXISTS (SELECT FROM done AS d WHERE d.id = c.id)});
is($recorded + $cut, $jobs, "0 jobs lost: $recorded completed and recorded, $cut completed on the shard by a transaction "
	. 'cut at its commit (the commit gap)');
is(sql(q{SELECT count(*) - count(DISTINCT id) FROM done}), '0', '0 jobs done twice');
my $reclaimed = sql(q{SELECT count(*) FROM done WHERE attempt > 1});
cmp_ok($reclaimed, '>', 0, "leases cut by the faults were claimed again ($reclaimed jobs on a later attempt)");

done_testing();
