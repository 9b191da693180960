# Rate limits and job timeouts on Citus (1.1.0): not on a distributed queue, whose shards claim on the
# workers apart from one another, each without the coordinator's count or the queue's settings:
# ck.set_rate_limit and a timeout set in ck.queues raise 0A000 and change nothing, and a queue that has
# either is not distributed. ck.try_rate counts on the node it is called on (its row of ck.rates there),
# so a rate shared by every node's callers is called through one node, as advisory locks are. A queue of
# the coordinator keeps its rate and its timeout as on one server.
use strict;
use warnings;
use Test::More;
use CkCitus;

my ($coord) = CkCitus::cluster();
sub sql { CkCitus::sql($coord, @_) }
sub sql_state_of { CkCitus::sql_state($coord, @_) }

sql(q{SELECT ck.create_queue('jobs', lease => '1 hour', notify => false); SELECT ck.distribute_queue('jobs', 4)});
sql(q{SELECT ck.enqueue('jobs', jsonb_build_object('n', g), concurrency_key => 'tenant:1') FROM generate_series(1, 3) AS g});

is(sql_state_of(q{SELECT ck.set_rate_limit('jobs', 'tenant:1', 1, '1 hour')}), '0A000',
	'ck.set_rate_limit of a key of a distributed queue: 0A000');
is(sql_state_of(q{SELECT ck.set_rate_limit('jobs', NULL, 1, '1 hour')}), '0A000', '... and of its default: 0A000');
is(sql(q{SELECT count(*) FROM ck.rate_limits}), '0', 'the refused rate limits changed nothing');
is(sql_state_of(q{UPDATE ck.queues SET timeout = '5 minutes' WHERE queue = 'jobs'::regclass}), '0A000',
	'a job timeout on a distributed queue: 0A000');
is(sql(q{SELECT timeout IS NULL FROM ck.queues WHERE queue = 'jobs'::regclass}), 't', '... and none set');
is(sql(q{SELECT count(*) FROM ck.claim('jobs', 10)}), '3', 'its claims go on, every job of the key (no rate)');

# Queues of the coordinator: a rate limit and a timeout hold there, and keep the queue from being distributed.
sql(q{SELECT ck.create_queue('rated', lease => '1 hour', notify => false)});
sql(q{SELECT ck.set_rate_limit('rated', 'tenant:1', 2, '1 hour')});
sql(q{SELECT ck.enqueue('rated', jsonb_build_object('n', g), concurrency_key => 'tenant:1') FROM generate_series(1, 3) AS g});
is(sql(q{SELECT count(*) FROM ck.claim('rated', 10)}), '2', 'a queue of the coordinator starts 2 jobs of a key limited to 2 an hour');
is(sql(q{SELECT count(*) FROM ck.claim('rated', 10)}), '0', '... and no third');
is(sql(q{SELECT (ready, running) FROM ck.queue_stats('rated')}), '(0,2)', '... the third stays queued, put off');
is(sql_state_of(q{SELECT ck.distribute_queue('rated', 4)}), '0A000', 'a queue with rate limits is not distributed');
is(sql(q{SELECT count(*) FROM ck.distributed_queues WHERE queue = 'rated'::regclass}), '0', '... nothing changed');

sql(q{SELECT ck.create_queue('timed', lease => '1 hour', notify => false)});
sql(q{UPDATE ck.queues SET timeout = '5 minutes' WHERE queue = 'timed'::regclass});
is(sql_state_of(q{SELECT ck.distribute_queue('timed', 4)}), '0A000', 'a queue with a job timeout is not distributed');
my $id = sql(q{SELECT ck.enqueue('timed', '{}')});
my $until = sql(q{SELECT lease_until FROM ck.claim('timed')});
is(sql(qq{SELECT timeout_at = '$until' AND timeout_at < now() + interval '6 minutes' FROM timed WHERE id = $id}), 't',
	'a queue of the coordinator with a timeout: the claim sets the attempt\'s deadline, which caps its lease');

# ck.try_rate on the coordinator: its own count, exact under its limit.
is(sql(q{SELECT string_agg(ck.try_rate('api:42', 2, '1 minute')::text, ',' ORDER BY g) FROM generate_series(1, 3) AS g}),
	'true,true,false', 'ck.try_rate on the coordinator: 2 of 3 calls counted at a limit of 2');

done_testing();
