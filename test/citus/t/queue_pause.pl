# Pause and resume on Citus (1.1.0): not supported on a distributed queue, whose shards are queues of
# their own on the workers that do not read the coordinator's row: ck.pause_queue and ck.resume_queue raise
# 0A000 and change nothing, and its claims go on, for the whole queue and for one concurrency key. A queue that
# is not distributed pauses on the coordinator as on one server (one key too), and is not distributed while a
# key of it is paused.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use CkCitus;

my ($coord, @workers) = CkCitus::cluster();
sub sql { CkCitus::sql($coord, @_) }
sub sql_state_of { CkCitus::sql_state($coord, @_) }


sql(q{SELECT ck.create_queue('jobs', notify => false)});
sql(q{SELECT ck.distribute_queue('jobs', 4)});
sql(q{SELECT ck.enqueue('jobs', jsonb_build_object('n', g)) FROM generate_series(1, 2) AS g});
is(sql_state_of(q{SELECT ck.pause_queue('jobs')}), '0A000', 'ck.pause_queue of a distributed queue: 0A000');
is(sql_state_of(q{SELECT ck.resume_queue('jobs')}), '0A000', 'ck.resume_queue of a distributed queue: 0A000');
is(sql_state_of(q{SELECT ck.pause_queue('jobs', 'tenant:1')}), '0A000', 'ck.pause_queue of a key of a distributed queue: 0A000');
is(sql_state_of(q{SELECT ck.resume_queue('jobs', 'tenant:1')}), '0A000', 'ck.resume_queue of a key of a distributed queue: 0A000');
is(sql(q{SELECT count(*) FROM ck.paused_keys}), '0', 'the refused pause of a key changed nothing');
is(sql(q{SELECT paused_at IS NULL FROM ck.queues WHERE queue = 'jobs'::regclass}), 't',
	'the refused pause changed nothing on the coordinator');
is(sql(q{SELECT (ready, paused) FROM ck.queue_stats('jobs')}), '(2,f)',
	'ck.queue_stats sums the shards and says not paused');
is(sql(q{SELECT count(*) FROM ck.claim('jobs', 10)}), '2', 'its claims go on');

sql(q{SELECT ck.create_queue('local', notify => false)});
sql(q{SELECT ck.enqueue('local')});
is(sql(q{SELECT ck.pause_queue('local')}), 't', 'a queue of the coordinator alone pauses');
is(sql(q{SELECT count(*) FROM ck.claim('local')}), '0', 'and its claims return nothing');
is(sql(q{SELECT ck.resume_queue('local')}), 't', 'it resumes');
is(sql(q{SELECT count(*) FROM ck.claim('local')}), '1', 'and its claims go on');

sql(q{SELECT ck.enqueue('local', concurrency_key => k) FROM unnest(ARRAY['a', 'b']) AS k});
is(sql(q{SELECT ck.pause_queue('local', 'a')}), 't', 'a key of a queue of the coordinator alone pauses');
is(sql(q{SELECT count(*) FROM ck.claim('local', 10)}), '1', 'its claims take the other key\'s job only');
is(sql_state_of(q{SELECT ck.distribute_queue('local', 4)}), '0A000', 'a queue with a paused key is not distributed');
is(sql(q{SELECT ck.resume_queue('local', 'a')}), 't', 'the key resumes');
is(sql(q{SELECT count(*) FROM ck.claim('local', 10)}), '1', 'and its job is claimed');

done_testing();
