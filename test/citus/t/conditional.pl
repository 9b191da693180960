# Conditional change on Citus: ck.try_decrement, ck.decrement (CK001 with DETAIL), ck.try_increment, ck.transition
# and ck.update_if_version on a distributed table (one router UPDATE to the row's shard) and on a reference table
# (the UPDATE on every placement, committed by two-phase commit); no oversell between concurrent sessions.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use CkCitus;

my ($coord, @workers) = CkCitus::cluster();
CkCitus::sql($coord, q{
	CREATE TABLE stock (id int PRIMARY KEY, qty int NOT NULL, state text NOT NULL DEFAULT 'new',
		version bigint NOT NULL DEFAULT 1);
	SELECT create_distributed_table('stock', 'id');
	INSERT INTO stock (id, qty) SELECT g, 5 FROM generate_series(1, 10) g;
	CREATE TABLE seats (id int PRIMARY KEY, sold int NOT NULL, state text NOT NULL DEFAULT 'new',
		version bigint NOT NULL DEFAULT 1);
	SELECT create_reference_table('seats');
	INSERT INTO seats (id, sold) SELECT g, 0 FROM generate_series(1, 10) g;
});
my $w1 = $workers[0]->port;

# Every call on the distributed table reaches the row's shard only, in one statement.
my %calls = (
	"SELECT ck.try_decrement('stock', 3, 'qty', 2)" => 'UPDATE',
	"SELECT ck.try_increment('stock', 3, 'qty', 2, 10)" => 'UPDATE',
	"SELECT ck.try_transition('stock', 3, 'state', 'new', 'paid')" => 'UPDATE',
	"SELECT ck.try_update_if_version('stock', 3, 1, '{\"qty\": 7}')" => 'UPDATE');
my $port = CkCitus::port_of($coord, 'stock', 3);
for my $call (sort keys %calls)
{
	my @sent = grep { /^(\d+|local): (UPDATE|SELECT|DELETE|INSERT)/ } CkCitus::remote_commands($coord, $call);
	ok(@sent == 1 && $sent[0] =~ /^$port: UPDATE ONLY public\.stock_\d+ / , "distributed: $call is one UPDATE on the shard of row 3")
	  or diag(join("\n", @sent));
}
is(CkCitus::sql($coord, 'SELECT qty, state, version FROM stock WHERE id = 3'), '7|paid|2',
	'the four calls changed row 3 as on one server');
is(CkCitus::sql($coord, "SELECT ck.try_decrement('stock', 3, 'qty', 8)"), '', 'try_decrement: NULL when not enough');
is(CkCitus::sql($coord, "SELECT ck.try_increment('stock', 3, 'qty', 4, 10)"), '', 'try_increment: NULL past the bound');
is(CkCitus::sql($coord, "SELECT ck.try_transition('stock', 3, 'state', 'new', 'shipped')"), 'f',
	'transition: false when the row is not in from');
is(CkCitus::sql($coord, "SELECT ck.try_update_if_version('stock', 3, 1, '{\"qty\": 1}')"), '',
	'update_if_version: NULL for a stale version');
my $err = CkCitus::sql_error($coord, "\\set VERBOSITY verbose\nSELECT ck.decrement('stock', 4, 'qty', 100)");
like($err, qr/CK001: stock 4: qty is 5, 100 requested\nDETAIL:  Table public.stock, qty: available 5, requested 100\./,
	'decrement: CK001 with DETAIL available and requested, read from the shard');
like(CkCitus::sql_error($coord, "\\set VERBOSITY verbose\nSELECT ck.decrement('stock', 99, 'qty', 1)"),
	qr/ERROR:  CK004: /, 'decrement: CK004 for no such row');
is(CkCitus::sql($coord, 'SELECT sum(qty) FROM stock WHERE id <> 3'), '45', 'nothing else changed');

# The reference table: every placement gets the UPDATE (the coordinator's locally), then PREPARE and COMMIT PREPARED.
my @sent = CkCitus::remote_commands($coord, "SELECT ck.try_increment('seats', 2, 'sold', 3, 10)");
my @updates = grep { /^(\d+|local): UPDATE ONLY public\.seats_\d+ / } @sent;
is(scalar(@updates), 3, 'reference: try_increment updates the three placements (two workers, the coordinator)')
  or diag(join("\n", @sent));
is(scalar(grep { /^\d+: PREPARE TRANSACTION / } @sent), 2, 'reference: two-phase commit on both workers')
  or diag(join("\n", @sent));
for my $node ($coord, @workers)
{
	my $shard = CkCitus::sql($node,
		"SELECT 'seats_' || shardid FROM pg_dist_shard WHERE logicalrelid = 'seats'::regclass");
	is(CkCitus::sql($node, "SET citus.override_table_visibility = off; SELECT sold FROM $shard WHERE id = 2"), '3',
		'reference: the placement on ' . $node->name . ' holds the new value');
}
is(CkCitus::sql($coord, "SELECT ck.try_decrement('seats', 2, 'sold', 4)"), '', 'reference: try_decrement NULL when not enough');
is(CkCitus::sql($coord, "SELECT ck.try_transition('seats', 2, 'state', 'new', 'full')"), 't', 'reference: transition');
is(CkCitus::sql($coord, "SELECT ck.try_update_if_version('seats', 2, 1, '{\"sold\": 4}')"), '2', 'reference: update_if_version');
like(CkCitus::sql_error($coord, "\\set VERBOSITY verbose\nSELECT ck.decrement('seats', 2, 'sold', 5)"),
	qr/CK001: .*\nDETAIL:  Table public.seats, sold: available 4, requested 5\./, 'reference: decrement CK001 with DETAIL');

# Two sessions through the coordinator on one row: the second waits for the first's row lock on the worker, then
# sees its change: 5 in stock, 3 + 3 requested, one succeeds.
my ($s1, $s2) = (CkCitus::session($coord), CkCitus::session($coord));
$s1->query_safe('BEGIN');
is($s1->query_safe("SELECT ck.try_decrement('stock', 6, 'qty', 3)"), '2', 'session 1 takes 3 of 5 (not committed)');
$s2->query_until(qr/started/, "\\echo started\nSELECT ck.try_decrement('stock', 6, 'qty', 3) IS NULL AS refused;\n");
my $shard_port = CkCitus::port_of($coord, 'stock', 6);
my ($holder) = grep { $_->port == $shard_port } @workers;
ok(eval { CkCitus::wait_until($holder, "SELECT EXISTS (SELECT FROM pg_locks WHERE NOT granted AND locktype = 'transactionid')"); 1 },
	'session 2 waits on the worker that holds the row');
$s1->query_safe('COMMIT');
is($s2->query_safe('SELECT 1'), "t\n1", 'session 2 then finds 2 left and takes nothing (no oversell)');
is(CkCitus::sql($coord, 'SELECT qty FROM stock WHERE id = 6'), '2', 'the row holds 2');
$s1->quit;
$s2->quit;

done_testing();
