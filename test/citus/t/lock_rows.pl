# ck.lock_rows on Citus. Citus takes FOR UPDATE only in a statement that stays in one shard, so on a distributed
# table ck.lock_rows locks the keys one routed statement each, in key order: two callers giving the same keys in
# opposite orders still never deadlock. A lock wait on a worker is out of reach of the coordinator's lock_timeout
# (Citus does not pass it on): ck.lock_rows bounds it with PostgreSQL's lock-timeout timer on the coordinator.
# On a reference table the one statement runs on the coordinator's copy, and Citus first locks the table's shard
# on every placement: two row locks of a reference table exclude each other whatever their rows.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use CkCitus;

my ($coord, @workers) = CkCitus::cluster();
CkCitus::sql($coord, q{
	CREATE TABLE stock (id int PRIMARY KEY, qty int NOT NULL);
	SELECT create_distributed_table('stock', 'id');
	INSERT INTO stock SELECT g, 10 FROM generate_series(1, 20) g;
	CREATE TABLE orders (id int, stock_id int NOT NULL REFERENCES stock (id), PRIMARY KEY (id, stock_id));
	SELECT create_distributed_table('orders', 'stock_id', colocate_with => 'stock');
	CREATE TABLE rooms (id int PRIMARY KEY, name text);
	SELECT create_reference_table('rooms');
	INSERT INTO rooms SELECT g, 'room ' || g FROM generate_series(1, 5) g;
});
my %by_port;
push @{ $by_port{ CkCitus::port_of($coord, 'stock', $_) } }, $_ for 1 .. 20;
my ($a, $b) = ($by_port{ $workers[0]->port }[0], $by_port{ $workers[1]->port }[0]);   # one row on each worker
my ($lo, $hi) = $a < $b ? ($a, $b) : ($b, $a);

# One statement per key, each to the worker that holds it, in key order; duplicates once, missing keys lock nothing.
my @sent = grep { /FOR NO KEY UPDATE/ }
  CkCitus::remote_commands($coord, "BEGIN; SELECT ck.lock_rows('stock', ARRAY[$hi, $lo, $hi, 999]); COMMIT");
is(scalar @sent, 3, 'three keys (one twice, one without a row): three routed statements') or diag(join("\n", @sent));
like($sent[0], qr/^\d+: SELECT FROM ONLY public\.stock_\d+ stock WHERE \(id OPERATOR\(pg_catalog\.=\) $lo\) FOR NO KEY UPDATE/,
	'the lowest key first, routed to its shard');
like($sent[1], qr/WHERE \(id OPERATOR\(pg_catalog\.=\) $hi\)/, 'then the next key');
isnt((split /:/, $sent[0])[0], (split /:/, $sent[1])[0], 'the two keys went to two workers');
is(CkCitus::sql($coord, "BEGIN; SELECT ck.lock_rows('stock', ARRAY[$hi, $lo, $hi, 999]); COMMIT"), '2',
	'it returns the rows locked: 2');
@sent = grep { /FOR UPDATE OF stock NOWAIT/ }
  CkCitus::remote_commands($coord, "BEGIN; SELECT ck.lock_rows('stock', ARRAY[$lo], 'update', timeout => '0'); COMMIT");
is(scalar @sent, 1, "mode 'update' with timeout '0': FOR UPDATE NOWAIT on the worker");

# Opposite orders: the second caller waits for the first, then locks both; no deadlock.
my ($s, $t) = (CkCitus::session($coord), CkCitus::session($coord));
$s->query_safe('BEGIN');
is($s->query_safe("SELECT ck.lock_rows('stock', ARRAY[$lo, $hi])"), '2', 'S locks both rows');
$t->query_safe('BEGIN');
$t->query_until(qr/started/, "\\echo started\nSELECT ck.lock_rows('stock', ARRAY[$hi, $lo]);\n");
CkCitus::wait_until($coord, 'SELECT EXISTS (SELECT FROM citus_lock_waits)');
$s->query_safe("UPDATE stock SET qty = qty - 1 WHERE id IN ($lo, $hi)");
$s->query_safe('COMMIT');
is($t->query_safe('SELECT 1'), "2\n1", 'T, given the keys in the opposite order, waited for S and then locked both: no deadlock');
$t->query_safe('ROLLBACK');

# Bounded waits while S holds the rows.
$s->query_safe('BEGIN');
$s->query_safe("SELECT ck.lock_rows('stock', ARRAY[$hi])");
my $started = Time::HiRes::time();
like(CkCitus::sql_error($coord, "BEGIN; SELECT ck.lock_rows('stock', ARRAY[$lo, $hi], timeout => '300ms')"),
	qr/ERROR:  rows of stock not locked within 300 ms/,
	'timeout 300 ms, the row held on a worker: 55P03 from the coordinator\'s timer');
my $took = Time::HiRes::time() - $started;
cmp_ok($took, '<', 5, sprintf('it gave up in time (%.2f s with the connection)', $took));
like(CkCitus::sql_error($coord, "BEGIN; SELECT ck.lock_rows('stock', ARRAY[$lo, $hi], timeout => '0')"),
	qr/ERROR:  rows of stock are locked by another transaction/, "timeout '0': NOWAIT on the worker, 55P03");
like(CkCitus::sql_error($coord, "BEGIN; SET lock_timeout = '300ms'; SELECT ck.lock_rows('stock', ARRAY[$hi])"),
	qr/ERROR:  canceling statement due to lock timeout/,
	'no timeout given: the session\'s lock_timeout bounds the wait on the worker too');
# ck.set_lock_timeout reaches the workers (a plain SET LOCAL lock_timeout does not).
like(CkCitus::sql_error($coord, "BEGIN; SET LOCAL statement_timeout = '2s'; SET LOCAL lock_timeout = '300ms'; "
	  . "UPDATE stock SET qty = 0 WHERE id = $hi"),
	qr/ERROR:  canceling statement due to statement timeout/,
	'a plain SET LOCAL lock_timeout stays on the coordinator: the UPDATE waits on the worker until statement_timeout');
$started = Time::HiRes::time();
like(CkCitus::sql_error($coord, "BEGIN; SET LOCAL statement_timeout = '5s'; SELECT ck.set_lock_timeout('300ms'); "
	  . "UPDATE stock SET qty = 0 WHERE id = $hi"),
	qr/ERROR:  canceling statement due to lock timeout/, 'after ck.set_lock_timeout the worker gives up with 55P03');
$took = Time::HiRes::time() - $started;
cmp_ok($took, '<', 2, sprintf('after the lock timeout, not the statement timeout (%.2f s)', $took));
like(CkCitus::sql_error($coord, "BEGIN; SET LOCAL statement_timeout = '5s'; SELECT qty FROM stock WHERE id = $hi; "
	  . "SELECT ck.set_lock_timeout('300ms'); UPDATE stock SET qty = 0 WHERE id = $hi"),
	qr/ERROR:  canceling statement due to lock timeout/,
	'also on a worker connection the transaction opened before the call');
is(CkCitus::sql($coord, "BEGIN; SELECT ck.set_lock_timeout('300ms'); SHOW citus.propagate_set_commands; COMMIT"),
	"\nnone", 'citus.propagate_set_commands is left as it was');
is(CkCitus::sql($coord, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Timeout' OR state = 'idle in transaction (aborted)'"),
	'0', 'nothing left waiting on the coordinator');

# No key update lets a child row referencing the locked row in; update keeps it out.
$s->query_safe('COMMIT');
$s->query_safe('BEGIN');
$s->query_safe("SELECT ck.lock_rows('stock', ARRAY[$lo])");
is(CkCitus::sql_error($coord, "SET statement_timeout = '2s'; INSERT INTO orders VALUES (1, $lo)"), '',
	"'no key update': an order for the locked row is inserted meanwhile (its foreign key check takes key share)");
$s->query_safe('COMMIT');
$s->query_safe('BEGIN');
$s->query_safe("SELECT ck.lock_rows('stock', ARRAY[$lo], 'update')");
like(CkCitus::sql_error($coord, "SET statement_timeout = '500ms'; INSERT INTO orders VALUES (2, $lo)"),
	qr/canceling statement due to statement timeout/, "'update': the order's insert waits for the lock");
$s->query_safe('COMMIT');

# A reference table: one statement on the coordinator's copy, after Citus locked the shard on every placement.
my @ref = CkCitus::remote_commands($coord, "BEGIN; SELECT ck.lock_rows('rooms', ARRAY[3, 1]); COMMIT");
ok((grep { /lock_shard_resources/ } @ref) && (grep { /^local: (?:SELECT FROM ONLY public\.rooms_\d+ rooms .* FOR NO KEY UPDATE|<optimized out by local execution>)/ } @ref),
	'reference table: Citus locks the shard on the placements, then the rows of the local copy') or diag(join("\n", @ref));
$s->query_safe('BEGIN');
is($s->query_safe("SELECT ck.lock_rows('rooms', ARRAY[1])"), '1', 'S locks room 1');
like(CkCitus::sql_error($coord, "BEGIN; SELECT ck.lock_rows('rooms', ARRAY[2], timeout => '300ms')"),
	qr/ERROR:  rows of rooms not locked within 300 ms/,
	'room 2 waits for S too (Citus serialises row locks of a reference table), and the timeout bounds that wait');
$s->query_safe('COMMIT');
is(CkCitus::sql($coord, "BEGIN; SELECT ck.lock_rows('rooms', ARRAY[2], timeout => '300ms'); COMMIT"), '1',
	'once S committed, room 2 is locked');
$_->quit for $s, $t;

done_testing();
