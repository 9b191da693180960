# The history of finished jobs, results and ck.await_job on Citus (1.1.0): a distributed queue
# keeps no history (its jobs finish on the workers, whose commits do not wake the coordinator), so
# ck.set_history, ck.maintain_history, ck.history_counts and ck.await_job raise 0A000 there and
# change nothing; ck.job is routed to the shard the id names; results are accepted and not kept.
# A queue of the coordinator keeps its history as on one server.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use CkCitus;

my ($coord, @workers) = CkCitus::cluster();
sub sql { CkCitus::sql($coord, @_) }
sub sql_state_of { CkCitus::sql_state($coord, @_) }


sql(q{SELECT ck.create_queue('jobs', lease => '1 hour', notify => false)});
sql(q{SELECT ck.distribute_queue('jobs', 4)});
is(sql_state_of(q{SELECT ck.set_history('jobs', '1 day')}), '0A000', 'ck.set_history on a distributed queue: 0A000');
is(sql(q{SELECT history_retention IS NULL FROM ck.queues WHERE queue = 'jobs'::regclass}), 't', '... and nothing set');
is(sql(q{SELECT count(*) FROM pg_class WHERE relname LIKE 'jobs_history%'}), '0', '... nor made');
is(sql_state_of(q{SELECT ck.maintain_history('jobs')}), '0A000', 'ck.maintain_history: 0A000');
is(sql_state_of(q{SELECT * FROM ck.history_counts('jobs')}), '0A000', 'ck.history_counts: 0A000');
is(sql_state_of(q{SELECT * FROM ck.await_job('jobs', 1, '0')}), '0A000', 'ck.await_job: 0A000');

# ck.job answers from the shard the id names; a result is accepted (not kept: no history there).
my $id = sql(q{SELECT ck.enqueue('jobs', '{"n": 1}')});
is(sql("SELECT state FROM ck.job('jobs', $id)"), 'waiting', 'ck.job on a distributed queue: waiting');
my ($claimed, $token) = split /\|/, sql(q{SELECT id, lease_token FROM ck.claim('jobs')});
is($claimed, $id, 'the job is claimed');
is(sql("SELECT state FROM ck.job('jobs', $id)"), 'running', '... running');
is(sql(qq{SELECT ck.complete('jobs', $id, $token, '{"r": 1}')}), 't', 'ck.complete with a result completes it');
is(sql("SELECT state FROM ck.job('jobs', $id)"), 'gone', '... then gone (no history kept; never unknown: a shard\'s sequence does not give its ids)');
my @ids = split /\n/, sql(q{SELECT ck.enqueue('jobs', '{}') FROM generate_series(1, 4)});
my $pairs = sql(q{SELECT array_agg(id ORDER BY id)::text || '|' || array_agg(lease_token ORDER BY id)::text FROM ck.claim('jobs', 10)});
my ($ids, $tokens) = split /\|/, $pairs;
is(sql(qq{SELECT count(*) FROM ck.complete_many('jobs', '$ids', '$tokens', array_fill('{}'::jsonb, ARRAY[4]))}), '4',
	'ck.complete_many with results completes jobs on several shards');

# A queue of the coordinator: its history as on one server.
sql(q{SELECT ck.create_queue('local', lease => '1 hour', notify => false)});
is(sql(q{SELECT ck.set_history('local', '1 day')}), 'local_history', 'a queue of the coordinator keeps a history');
my $local = sql(q{SELECT ck.enqueue('local', '{}')});
sql(q{SELECT ck.complete('local', id, lease_token, '{"r": 2}') FROM ck.claim('local')});
is(sql("SELECT state || ' ' || result::text FROM ck.await_job('local', $local, '0')"), 'completed {"r": 2}',
	'... and ck.await_job returns its result');

done_testing();
