# Distributed queues (ck.distribute_queue): every queue call on the coordinator runs on one shard
# of the queue, on the worker that holds it; jobs kept, ids naming their shard, keys and limits
# held across shards, fencing across nodes, exactly-once with several claimers.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use CkCitus;

my ($coord, @workers) = CkCitus::cluster();
sub sql { CkCitus::sql($coord, @_) }
sub sql_state_of { CkCitus::sql_state($coord, @_) }

# The remote statements Citus sends for SQL (citus.log_remote_commands): the ck calls among them.
sub remote_calls
{
	my ($query) = @_;
	my ($ret, $stdout, $stderr) = $coord->psql('postgres',
		"SET citus.log_remote_commands = on; SET client_min_messages = log; $query", on_error_stop => 1);
	die "remote_calls: $stderr" if $ret != 0;
	return [ $stderr =~ /issuing (SELECT .*?LATERAL ck\.\w+\(.*)$/mg ];
}

# A queue that is not distributed: its calls stay on the coordinator.
sql(q{SELECT ck.create_queue('plain', notify => false)});
sql(q{SELECT ck.enqueue('plain', '{"p":1}')});
is(scalar @{ remote_calls(q{SELECT ck.complete('plain', id, lease_token) FROM ck.claim('plain')}) },
	0, 'a queue that is not distributed sends no call to a worker');
is(sql(q{SELECT count(*) FROM plain}), '0', 'its job was claimed and completed on the coordinator');

# Bad input.
sql(q{CREATE DATABASE nocitus});
$coord->safe_psql('nocitus', q{CREATE EXTENSION concurrency_kit; SELECT ck.create_queue('q', notify => false)});
my ($ret, $out, $err) = $coord->psql('nocitus', q{\set VERBOSITY verbose
SELECT ck.distribute_queue('q')});
like($err, qr/ERROR:  0A000: ck.distribute_queue needs Citus/, 'without Citus: 0A000, saying Citus is needed');
like(sql_state_of(q{SELECT ck.distribute_queue('pg_class')}), qr/^42809$/, 'a table that is not a queue: 42809');
sql(q{SELECT ck.create_queue('jobs', lease => '30 s', max_attempts => 2, notify => false)});
like(sql_state_of(q{SELECT ck.distribute_queue('jobs', 0)}), qr/^22023$/, 'shard_count 0: 22023');
like(sql_state_of(q{SELECT ck.distribute_queue('jobs', 2000)}), qr/^22023$/, 'shard_count 2000: 22023');
is(sql(q{SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'jobs'::regclass}), '0',
	'a refused call changed nothing');
sql(q{SELECT ck.create_queue('loud', notify => true)});
like(sql_state_of(q{SELECT ck.distribute_queue('loud', 4)}), qr/^0A000$/, 'a queue with notify => true: 0A000');
like(sql_state_of(q{SELECT ck_internal.register_distributed_queue(NULL, '{1}', '{s}')}), qr/^22004$/,
	'register_distributed_queue (internal) with a NULL queue: 22004');
like(sql_state_of(q{SELECT ck_internal.register_distributed_queue('jobs', '{1,2}', '{s}')}), qr/^22023$/,
	'... with parts and shards of different lengths: 22023');
is(sql(q{SELECT count(*) FROM ck.distributed_queues}), '0', '... and nothing registered');

# Distributed with jobs in it: the jobs are kept, on both workers.
sql(q{SELECT ck.enqueue('jobs', jsonb_build_object('n', g)) FROM generate_series(1, 10) g});
sql(q{SELECT ck.distribute_queue('jobs', 4)});
is(sql(q{SELECT count(*) FROM jobs}), '10', 'the 10 jobs are kept');
is(sql(q{SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 'jobs'::regclass}), '2',
	'the queue has shards on both workers');
is(sql(q{SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 'jobs_dead'::regclass}), '2',
	'its dead letters too');
for my $i (0 .. $#workers)
{
	is(CkCitus::sql($workers[$i], q{SELECT count(*) FROM ck.queues WHERE queue::text LIKE 'jobs_%'}), '2',
		'worker ' . ($i + 1) . ' holds two shards, each a queue of its own');
}
like(sql_state_of(q{SELECT ck.distribute_queue('jobs', 4)}), qr/^55000$/, 'already distributed: 55000');
is(sql(q{SELECT ready FROM ck.queue_stats('jobs')}), '10', 'queue_stats sums the shards');

# Each call: one statement, to one shard.
my $calls = remote_calls(q{SELECT ck.enqueue('jobs', '{"one":1}')});
is(scalar @$calls, 1, 'enqueue: one statement to a worker');
like($calls->[0], qr/LATERAL ck\.enqueue\(/, '... which runs ck.enqueue on the shard');
$calls = remote_calls(q{SELECT * FROM ck.claim('jobs')});
is(scalar @$calls, 1, 'claim from a shard with jobs: one statement');
$calls = remote_calls(q{SELECT ck.try_complete('jobs', 1, 0)});
is(scalar @$calls, 1, 'try_complete: one statement, to the shard the id names');
$calls = remote_calls(q{SELECT * FROM ck.queue_stats('jobs')});
is(scalar @$calls, 4, 'queue_stats: one statement per shard');

# Jobs on every shard are found; ids name their shard.
sql(q{CREATE TABLE claimed AS SELECT * FROM ck.claim('jobs', 1) LIMIT 0});
for (1 .. 10) { sql(q{INSERT INTO claimed SELECT * FROM ck.claim('jobs', 1)}) }
is(sql(q{SELECT count(*) FROM claimed}), '10', 'claims of one job each found the 10 jobs not yet claimed');
is(sql(q{SELECT count(DISTINCT id % 4) FROM claimed}), '4', 'on all four shards');
is(sql(q{SELECT count(*) FROM ck.claim('jobs', 5)}), '0', 'nothing else is claimable (the 11th job is leased)');

# Acknowledgements, fencing across nodes.
my ($id, $token) = split /\|/, sql(q{SELECT id, lease_token FROM claimed ORDER BY id LIMIT 1});
is(sql("SELECT ck.extend_lease('jobs', $id, $token, '1 min') > now()"), 't', 'extend_lease with the current token');
is(sql("SELECT ck.try_extend_lease('jobs', $id, $token + 1000, '1 min') IS NULL"), 't', 'try_extend_lease with another token: NULL');
like(sql_state_of("SELECT ck.extend_lease('jobs', $id, $token + 1000, '1 min')"), qr/^CK005$/, 'extend_lease with another token: CK005 from the shard');
is(sql("SELECT ck.fail('jobs', $id, $token, 'boom', '0 s')"), 'retry', 'fail: retry');
my ($id2, $token2) = split /\|/, sql("SELECT id, lease_token FROM ck.claim('jobs', 1) WHERE id = $id");
is($id2, $id, 'the failed job is claimed again');
isnt($token2, $token, '... with a new token');
is(sql("SELECT ck.try_complete('jobs', $id, $token)"), 'f', 'the stale token completes nothing');
is(sql_state_of("SELECT * FROM ck.complete_and_claim('jobs', $id, $token)"), 'CK005',
	'complete_and_claim with the stale token: CK005 relayed from the worker');
is(sql("SELECT ck.fail('jobs', $id, $token2, 'boom again')"), 'dead', 'the second failure buries the job (max_attempts 2)');
is(sql(q{SELECT dead FROM ck.queue_stats('jobs')}), '1', 'queue_stats counts the dead letter');
is(sql("SELECT ck.retry_dead('jobs', $id)"), 't', 'retry_dead brings it back');
my ($id3, $token3) = split /\|/, sql("SELECT id, lease_token FROM ck.claim('jobs', 1) WHERE id = $id");
is(sql("SELECT ck.cancel('jobs', $id3)"), 'cancelling', 'cancel of a leased job: cancelling');
is(sql("SELECT ck.try_complete('jobs', $id3, $token3)"), 'f', '... its worker finds the lease lost');
is(sql(q{SELECT ck.purge_dead('jobs', '0 s')}), '1', 'purge_dead over every shard');
is(sql(q{SELECT count(*) FROM ck.complete_many('jobs',
	(SELECT array_agg(id ORDER BY id) FROM claimed WHERE id <> } . $id . q{),
	(SELECT array_agg(lease_token ORDER BY id) FROM claimed WHERE id <> } . $id . q{))}), '9',
	'complete_many completes jobs of every shard');
is(sql(q{SELECT count(*) FROM jobs}), '1', 'only the job leased by the first claim check is left');

# complete_and_claim: the completion and the next claim, on the job's shard first.
sql(q{SELECT ck.enqueue('jobs', '{}') FROM generate_series(1, 8)});
my ($cid, $ctoken) = split /\|/, sql(q{SELECT id, lease_token FROM ck.claim('jobs', 1)});
$calls = remote_calls("SELECT * FROM ck.complete_and_claim('jobs', $cid, $ctoken, 1)");
is(scalar @$calls, 1, 'complete_and_claim: one statement when the job\'s shard has the next job');

# Unique keys and concurrency limits hold across shards.
is(sql(q{SELECT count(DISTINCT ck.enqueue('jobs', '{}', unique_key => 'u')) FROM generate_series(1, 5)}), '1',
	'one job for a unique key, however many enqueues');
is(sql(q{SELECT inserted FROM ck.enqueue_unique('jobs', 'u', '{}')}), 'f', 'enqueue_unique finds it');
is(sql_state_of(q{SELECT ck.enqueue('jobs', '{}', unique_key => 'v', concurrency_key => 'c')}), '0A000',
	'a unique key and a concurrency key together: 0A000');
is(sql_state_of(q{SELECT ck.enqueue('jobs', '{}', after => ARRAY[1::bigint])}), '0A000', 'after: 0A000');
sql(q{SELECT ck.complete_many('jobs', array_agg(id), array_agg(lease_token)) FROM ck.claim('jobs', 100)});
sql(q{SELECT ck.set_concurrency_limit('jobs', 'k', 1)});
sql(q{SELECT ck.enqueue('jobs', '{}', concurrency_key => 'k') FROM generate_series(1, 3)});
is(sql(q{SELECT count(*) FROM ck.claim('jobs', 100)}), '1', 'a limit of 1: one job of the key claimable');
is(sql(q{SELECT scheduled FROM ck.queue_stats('jobs')}), '2', 'the other two wait, parked');

# claim_wait on the coordinator wakes when a job is enqueued.
sql(q{TRUNCATE jobs});
my $waiter = CkCitus::session($coord);
$waiter->query_until(qr/waiting/, "\\echo waiting\nSELECT count(*) FROM ck.claim_wait('jobs', 1, NULL, '60 s');\n");
my $t0 = time;
sql(q{SELECT ck.enqueue('jobs', '{"wake":1}')});
ok($coord->poll_query_until('postgres', q{SELECT count(*) = 1 FROM jobs WHERE lease_token IS NOT NULL}),
	'claim_wait claimed the job enqueued while it waited');
cmp_ok(time - $t0, '<', 10, '... within seconds, not at the end of its 60 s wait');
$waiter->quit;
is(sql(q{SELECT count(*) FROM ck.claim_wait('jobs', 1, NULL, '0.2 s')}), '0', 'claim_wait with nothing to claim returns empty');

# Exactly once: 4 sessions drain 400 jobs; each job is recorded in the transaction that
# completes it, and a second claim of it would fail the primary key.
sql(q{TRUNCATE jobs; CREATE TABLE done (id bigint PRIMARY KEY, by_pid int)});
sql(q{SELECT ck.enqueue('jobs', jsonb_build_object('n', g)) FROM generate_series(1, 400) g});
my $drain = q{DO $$ DECLARE r record; BEGIN LOOP
	SELECT * INTO r FROM ck.claim('jobs', 1); EXIT WHEN NOT FOUND;
	INSERT INTO done VALUES (r.id, pg_backend_pid());
	IF NOT ck.complete('jobs', r.id, r.lease_token) THEN RAISE EXCEPTION 'lease lost'; END IF;
	COMMIT; END LOOP; END $$};
my @runs;
for (1 .. 4)
{
	my ($o, $e) = ('', '');
	push @runs, [ IPC::Run::start([ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $coord->connstr('postgres'), '-c', $drain ],
			'>', \$o, '2>', \$e), \$e ];
}
my $failed = 0;
for my $r (@runs) { $r->[0]->finish or $failed++; diag ${ $r->[1] } if ${ $r->[1] } ne '' }
is($failed, 0, 'four claimers drained the queue without error');
is(sql(q{SELECT count(*) FROM done}), '400', 'every job was completed once (a second claim would break the key)');
is(sql(q{SELECT count(*) FROM jobs}), '0', 'the queue is empty');
cmp_ok(sql(q{SELECT count(DISTINCT by_pid) FROM done}), '>=', 2, 'by more than one claimer');

# Calls on any node: every node holding a shard knows the queue's distribution (its own row of
# ck.distributed_queues), so a client connected to a worker uses the queue as on the coordinator,
# Citus routing each call from there: the routing spreads over the nodes.
for my $i (0 .. $#workers)
{
	is(CkCitus::sql($workers[$i], q{SELECT array_length(parts, 1) FROM ck.distributed_queues WHERE queue = 'jobs'::regclass}),
		'4', 'worker ' . ($i + 1) . ' knows the queue\'s four shards');
}
# A queue distributed under 0.3.2 has no row on the workers: the upgrade note's statement adds them.
CkCitus::sql($_, q{DELETE FROM ck.distributed_queues}) for @workers;
sql(q{SELECT run_command_on_workers(format('SELECT ck_internal.register_distributed_queue(%L, %L, %L)',
           (pg_identify_object('pg_class'::regclass, queue, 0)).identity, parts, shards))
      FROM ck.distributed_queues});
is(join(',', map { CkCitus::sql($_, q{SELECT count(*) FROM ck.distributed_queues WHERE queue = 'jobs'::regclass}) } @workers),
	'1,1', 'the statement of the 0.3.2 -> 0.3.3 upgrade note registers the queue on the workers again');
my ($w1, $w2) = @workers;
CkCitus::sql($w1, q{SELECT ck.enqueue('jobs', jsonb_build_object('n', g)) FROM generate_series(1, 8) g});
is(sql(q{SELECT count(*) || ' ' || count(DISTINCT id % 4) FROM jobs}), '8 4',
	'8 jobs enqueued through worker 1, on all four shards (two of them on worker 2)');
my @claimed = grep { $_ ne '' } map { CkCitus::sql($w2, q{SELECT id || '|' || lease_token FROM ck.claim('jobs', 1)}) } 1 .. 9;
is(scalar @claimed, 8, 'worker 2 claimed the 8 jobs one by one, from the shards of both workers, and found no 9th');
my $completed = 0;
for (@claimed)
{
	my ($cid, $ctok) = split /\|/;
	$completed++ if CkCitus::sql($w1, "SELECT ck.try_complete('jobs', $cid, $ctok)") eq 't';
}
is($completed, 8, 'worker 1 completed each, its token checked on the job\'s shard wherever that is');
is(CkCitus::sql($w2, q{SELECT ready FROM ck.queue_stats('jobs')}), '0', 'queue_stats through worker 2: empty');
# One job on a shard of worker 1, one on a shard of worker 2, each completed through worker 1.
CkCitus::sql($w1, q{SELECT ck.enqueue('jobs', '{}') FROM generate_series(1, 8)});
my %job_on;
for my $row (split /\n/, CkCitus::sql($w1, q{SELECT c.id, c.lease_token, j.part FROM ck.claim('jobs', 8) AS c JOIN jobs AS j USING (id)}))
{
	my ($jid, $jtok, $part) = split /\|/, $row;
	$job_on{ CkCitus::port_of($coord, 'jobs', $part) } = [ $jid, $jtok ];
}
for my $w (@workers)
{
	my ($jid, $jtok) = @{ $job_on{ $w->port } };
	my @sent = CkCitus::remote_commands($w1, "SELECT ck.complete('jobs', $jid, $jtok)");
	# (Citus logs a local statement it runs from its query tree as "<optimized out by local execution>".)
	my $to = $w == $w1 ? qr/^local: (?:SELECT .*LATERAL ck\.complete\(|<optimized out by local execution>)/
	  : qr/^@{[ $w->port ]}: SELECT .*LATERAL ck\.complete\(/;
	is(scalar(grep { /$to/ } @sent) . ' ' . sql("SELECT count(*) FROM jobs WHERE id = $jid"), '1 0',
		$w == $w1 ? 'a call on worker 1 for a shard of its own: one statement, run locally (no round trip), the job completed'
		  : 'a call on worker 1 for a shard of worker 2: one statement, sent there, the job completed') or diag(join("\n", @sent));
}
sql(q{WITH c AS MATERIALIZED (SELECT array_agg(id) AS i, array_agg(lease_token) AS t FROM jobs)
	SELECT ck.complete_many('jobs', c.i, c.t) FROM c});
is(sql(q{SELECT count(*) FROM jobs}), '0', 'the queue is empty again');

# Dead letters by filter (1.1.0): each shard runs its own batch, the counts are summed.
sql(q{CREATE TABLE failing AS SELECT * FROM ck.claim('jobs', 1) LIMIT 0});
sql(q{SELECT ck.enqueue('jobs', jsonb_build_object('n', g)) FROM generate_series(1, 12) g});
for my $attempt (1 .. 2)   # max_attempts 2: the second failure buries
{
	sql(q{TRUNCATE failing; INSERT INTO failing SELECT * FROM ck.claim('jobs', 12)});
	sql(q{SELECT ck.fail('jobs', id, lease_token, CASE WHEN (payload->>'n')::int % 2 = 0 THEN 'crash' ELSE 'timeout' END, '0 s')
	      FROM failing});
}
is(sql(q{SELECT count(*) || ' ' || count(DISTINCT id % 4) FROM jobs_dead}), '12 4', '12 dead letters, on all four shards');
$calls = remote_calls(q{SELECT ck.retry_dead_matching('jobs', last_error => 'none such')});
is(scalar @$calls, 4, 'retry_dead_matching: one statement per shard');
my $crash_shards = sql(q{SELECT count(DISTINCT id % 4) FROM jobs_dead WHERE last_error = 'crash'});
is(sql(q{SELECT ck.retry_dead_matching('jobs', last_error => 'crash', batch => 1)}), $crash_shards,
	'retry_dead_matching with batch 1: one letter from each shard holding one (the batch is per shard)');
is(sql(q{SELECT ck.retry_dead_matching('jobs', last_error => 'crash')}), 6 - $crash_shards, '... then the other crashed jobs');
is(sql(q{SELECT count(*) || ' ' || count(*) FILTER (WHERE (payload->>'n')::int % 2 = 0) FROM jobs}), '6 6',
	'the six crashed jobs are back in the queue, and only they');
is(sql(q{SELECT ck.purge_dead_matching('jobs', error_like => 'time%', payload_contains => '{"n": 1}')}), '1',
	'purge_dead_matching with a payload filter: the one letter it names');
is(sql(q{SELECT ck.purge_dead_matching('jobs', error_like => 'time%', min_attempts => 2)}), '5', '... then by error text the other five');
is(sql(q{SELECT count(*) FROM jobs_dead}), '0', 'no dead letter is left');

# drop_queue: the distributed table, its dead letters and every shard's registration go.
sql(q{SELECT ck.drop_queue('jobs')});
is(sql(q{SELECT count(*) FROM pg_dist_partition WHERE logicalrelid::text IN ('jobs', 'jobs_dead')}), '0',
	'drop_queue drops the distributed tables');
is(sql(q{SELECT count(*) FROM ck.distributed_queues}), '0', '... and its row of ck.distributed_queues');
for my $i (0 .. $#workers)
{
	is(CkCitus::sql($workers[$i], q{SELECT count(*) FROM ck.queues}), '0',
		'worker ' . ($i + 1) . ' keeps no registration of a dropped shard');
	is(CkCitus::sql($workers[$i], q{SELECT count(*) FROM ck.distributed_queues}), '0', '... nor of the dropped queue');
}


done_testing();
