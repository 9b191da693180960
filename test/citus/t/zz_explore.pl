use strict; use warnings; use PostgreSQL::Test::Utils; use Test::More; use CkCitus;
my ($coord, @workers) = CkCitus::cluster();
CkCitus::sql($coord, q{SELECT ck.create_queue('jobs', notify => false); SELECT ck.distribute_queue('jobs', 4)});
CkCitus::sql($workers[0], q{SELECT ck.enqueue('jobs', '{}') FROM generate_series(1,4)});
for (1..4) {
	my ($id, $tok) = split /\|/, CkCitus::sql($workers[0], q{SELECT id || '|' || lease_token FROM ck.claim('jobs', 1)});
	my ($ret, $out, $err) = $workers[0]->psql('postgres', "SET citus.log_remote_commands = on; SET client_min_messages = notice; SELECT ck.complete('jobs', $id, $tok)");
	note("id $id: $out\n$err");
}
ok(1);
done_testing();
