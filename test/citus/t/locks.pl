# Advisory locks and ck.lock_waits on Citus. Each node has its own lock table: sessions connected to the
# coordinator exclude each other, a session connected to a worker does not see the coordinator's locks, and
# namespace numbers are registered per node. ck.lock_waits on the coordinator sees waits on the coordinator's own
# locks; a row lock wait on a shard is seen on the worker that holds it (and by Citus's citus_lock_waits).
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use CkCitus;

my ($coord, @workers) = CkCitus::cluster();
CkCitus::sql($coord, q{
	CREATE TABLE stock (id int PRIMARY KEY, qty int NOT NULL);
	SELECT create_distributed_table('stock', 'id');
	INSERT INTO stock SELECT g, 5 FROM generate_series(1, 10) g;
});

# Namespaces are rows of ck.lock_namespaces, a table of each node: the same name may get other numbers.
CkCitus::sql($coord, "SELECT ck.lock_namespace('invoices')");
my $ns = CkCitus::sql($coord, "SELECT ck.lock_namespace('orders')");
my $ns_worker = CkCitus::sql($workers[0], "SELECT ck.lock_namespace('orders')");
isnt($ns_worker, $ns, "a namespace name gets a number per node ('orders': $ns on the coordinator, $ns_worker on a worker)");

my ($s1, $s2) = (CkCitus::session($coord), CkCitus::session($coord));
my $s3 = CkCitus::session($workers[0]);
my $pid1 = CkCitus::pid($s1);
$s1->query_safe('BEGIN');
$s1->query_safe("SELECT ck.xact_lock('orders', 42)");
# (the probes in transaction blocks, where transaction locks belong: no 25P01 warning)
$s2->query_safe('BEGIN');
is($s2->query_safe("SELECT ck.try_xact_lock('orders', 42)"), 'f',
	'two sessions through the coordinator exclude each other');
$s2->query_safe('ROLLBACK');
$s3->query_safe('BEGIN');
is($s3->query_safe("SELECT ck.try_xact_lock($ns, 42)"), 't',
	'a session connected to a worker takes the same key: the coordinator\'s lock does not exclude it');
is($s3->query_safe("SELECT pg_try_advisory_xact_lock($ns, 42)"), 't',
	'nor does Citus forward PostgreSQL\'s own advisory lock calls');
$s3->query_safe('ROLLBACK');

# A wait on the coordinator's lock is the coordinator's: ck.lock_waits there shows it, by namespace name.
my $pid2 = CkCitus::pid($s2);
$s2->query_safe('BEGIN');
$s2->query_until(qr/started/, "\\echo started\nSELECT ck.xact_lock('orders', 42);\n");
CkCitus::wait_for_lock($coord, $pid2);
is(CkCitus::sql($coord, "SELECT blocking_pids = ARRAY[$pid1], lock ~ 'orders' FROM ck.lock_waits() WHERE waiting_pid = $pid2"),
	't|t', 'ck.lock_waits on the coordinator: session 2 waits on session 1 for the orders lock');
$s1->query_safe('COMMIT');
is($s2->query_safe("SELECT count(*) FROM ck.held_locks() WHERE ns_name = 'orders' AND key = 42"), "\n1",
	'session 2 has the lock once session 1 committed');
$s2->query_safe('COMMIT');

# A row lock wait on a distributed table happens on the worker that holds the row's shard.
my $port = CkCitus::port_of($coord, 'stock', 1);
my ($holder) = grep { $_->port == $port } @workers;
$s1->query_safe('BEGIN');
$s1->query_safe('UPDATE stock SET qty = qty - 1 WHERE id = 1');
$s2->query_until(qr/started/, "\\echo started\nUPDATE stock SET qty = qty - 1 WHERE id = 1;\n");
CkCitus::wait_until($holder, "SELECT EXISTS (SELECT FROM ck.lock_waits() WHERE query ~ 'UPDATE public.stock_')");
is(CkCitus::sql($holder, "SELECT count(*) FROM ck.lock_waits() WHERE query ~ 'UPDATE public.stock_'"), '1',
	'ck.lock_waits on the worker holding the shard shows the wait, on the shard\'s UPDATE');
is(CkCitus::sql($coord, 'SELECT count(*) FROM ck.lock_waits()'), '0',
	'ck.lock_waits on the coordinator shows nothing: the coordinator\'s backend waits for the worker\'s answer');
is(CkCitus::sql($coord, "SELECT count(*) FROM citus_lock_waits WHERE blocked_statement ~ 'UPDATE stock'"), '1',
	'citus_lock_waits on the coordinator shows the distributed wait');
$s1->query_safe('COMMIT');
$s2->query_safe('SELECT 1');
is(CkCitus::sql($coord, 'SELECT qty FROM stock WHERE id = 1'), '3', 'both updates applied in turn');
$_->quit for $s1, $s2, $s3;

done_testing();
