# CALL ck.retry on Citus. Citus opens each worker's part of a transaction at the coordinator's isolation level, so
# SERIALIZABLE holds per worker: a write skew between rows of one worker ends in 40001, which ck.retry retries; a
# write skew between rows of two workers commits both sides (no node sees the cycle). A deadlock across two
# workers is broken by Citus's distributed deadlock detector, which cancels one side (57014, reported as 40P01):
# ck.retry asks Citus whether a 57014 it caught was that, and retries it as a deadlock.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use CkCitus;

my ($coord, @workers) = CkCitus::cluster();
CkCitus::sql($coord, q{
	CREATE TABLE duty (id int PRIMARY KEY, on_call int NOT NULL);
	SELECT create_distributed_table('duty', 'id');
	INSERT INTO duty SELECT g, 1 FROM generate_series(1, 20) g;
});
my %by_port;
push @{ $by_port{ CkCitus::port_of($coord, 'duty', $_) } }, $_ for 1 .. 20;
my ($same1, $same2) = @{ $by_port{ $workers[0]->port } }[0, 1];
my ($cross1, $cross2) = ($by_port{ $workers[0]->port }[2], $by_port{ $workers[1]->port }[0]);

# What Citus sends: the coordinator's isolation level on every worker.
my @sent = CkCitus::remote_commands($coord, "CALL ck.retry('UPDATE duty SET on_call = on_call WHERE id = $same1')");
ok((grep { /BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE/ } @sent),
	'ck.retry at serializable: Citus begins the worker\'s transaction SERIALIZABLE too (it neither refuses nor ignores it)')
  or diag(join("\n", @sent));

# write_skew(A, B, TAIL): doctors A and B are on call; session P reads both and takes A off, the ck.retry session
# R reads both and takes B off, each only if both are on. R then waits on an advisory lock of the coordinator that
# P holds, so P commits first, and runs TAIL (PL/pgSQL) before it commits. Returns R's attempts (or its error) and
# the rows on call after.
sub write_skew
{
	my ($a, $b, $tail) = @_;
	CkCitus::sql($coord, "UPDATE duty SET on_call = 1 WHERE id IN ($a, $b)");
	my ($p, $r) = (CkCitus::session($coord), CkCitus::session($coord));
	$p->query_safe('BEGIN ISOLATION LEVEL SERIALIZABLE');
	$p->query_safe('SELECT pg_advisory_xact_lock(7)');
	$p->query_safe("SELECT sum(on_call) FROM duty WHERE id IN ($a, $b)");
	my $rpid = CkCitus::pid($r);
	$r->query_until(qr/started/, "\\echo started\nCALL ck.retry(\$r\$DO \$do\$ BEGIN "
		  . "IF (SELECT sum(on_call) FROM duty WHERE id IN ($a, $b)) = 2 THEN "
		  . "UPDATE duty SET on_call = 0 WHERE id = $b; END IF; PERFORM pg_advisory_xact_lock(7); $tail END \$do\$\$r\$, 'serializable');\n");
	CkCitus::wait_for_lock($coord, $rpid);
	$p->query_safe("UPDATE duty SET on_call = 0 WHERE id = $a");
	$p->query_safe('COMMIT');
	my ($attempts) = $r->query('SELECT 1') =~ /^(\d+)\n1$/;
	$attempts //= $r->{stderr};
	$_->quit for $p, $r;
	return ($attempts, CkCitus::sql($coord, "SELECT string_agg(on_call::text, ',' ORDER BY id) FROM duty WHERE id IN ($a, $b)"));
}

# The worker finds the conflict while R reads A again: 40001 reaches the coordinator as 40001, and ck.retry retries.
my ($attempts, $rows) = write_skew($same1, $same2, "PERFORM on_call FROM duty WHERE id = $same1;");
is($attempts, '2', "one worker, conflict found at a statement: 40001, ck.retry's second attempt commits");
is($rows, $same1 < $same2 ? '0,1' : '1,0', 'one doctor stays on call');

# The worker finds it at COMMIT: Citus reports its 40001 as a WARNING and raises XX000, which ck.retry does not retry.
($attempts, $rows) = write_skew($same1, $same2, '');
like($attempts, qr/WARNING:  could not serialize access due to read\/write dependencies.*ERROR:  could not commit transaction for shard \d+ on at least one active node/s,
	'one worker, conflict found at COMMIT: the 40001 is a WARNING, the error XX000: ck.retry gives up at once');
is($rows, $same1 < $same2 ? '0,1' : '1,0', 'one doctor stays on call (R rolled back)');

($attempts, $rows) = write_skew($cross1, $cross2, "PERFORM on_call FROM duty WHERE id = $cross1;");
is($attempts, '1', 'two workers: ck.retry commits at its first attempt');
is($rows, '0,0', 'two workers: both doctors left: SERIALIZABLE holds per worker, not across workers');

# deadlock(MAX_ATTEMPTS): a deadlock across the workers: S updates A then B, R (CALL ck.retry with MAX_ATTEMPTS)
# updates B then A. Returns R's output, its stderr, its retries and the seconds S waited for the detector.
my $r;
sub deadlock
{
	my ($max_attempts) = @_;
	my $s = CkCitus::session($coord);
	$r = CkCitus::session($coord);
	$r->query_safe('\\set VERBOSITY verbose');
	$s->query_safe('BEGIN');
	$s->query_safe("UPDATE duty SET on_call = on_call + 1 WHERE id = $cross1");
	$r->query_until(qr/started/, "\\echo started\nCALL ck.retry('UPDATE duty SET on_call = on_call + 10 WHERE id = $cross2; "
		  . "UPDATE duty SET on_call = on_call + 10 WHERE id = $cross1', 'read committed', $max_attempts);\n");
	my ($holder1) = grep { $_->port == CkCitus::port_of($coord, 'duty', $cross1) } @workers;
	CkCitus::wait_until($holder1, "SELECT EXISTS (SELECT FROM pg_locks WHERE NOT granted AND locktype = 'transactionid')");
	my $started = Time::HiRes::time();
	$s->query_safe("UPDATE duty SET on_call = on_call + 1 WHERE id = $cross2");
	my $waited = Time::HiRes::time() - $started;
	$s->query_safe('COMMIT');
	$s->quit;
	my $result = $r->query('SELECT 1');
	my $stderr = $r->{stderr};
	$r->{stderr} = '';
	return ($result, $stderr, $r->query_safe('SELECT retries FROM ck.retry_stats()'), $waited);
}

my ($result, $stderr, $retries, $waited) = deadlock(5);
note(sprintf('the older session waited %.1f s for the detector (it runs every deadlock_timeout x '
	  . 'citus.distributed_deadlock_detection_factor = 2 s)', $waited));
is($result, "2\n1",
	"Citus's distributed deadlock detector cancelled ck.retry's first attempt (57014, which Citus makes 40P01 only "
	  . 'when the error is reported); ck.retry asked Citus, took it as a deadlock and its second attempt committed')
  or diag($stderr);
is(CkCitus::sql($coord, "SELECT string_agg(on_call::text, ',' ORDER BY id) FROM duty WHERE id IN ($cross1, $cross2)"),
	'11,11', 'both transactions applied once: the older one (+1 on each row), then the retried one (+10 on each)');
is($retries, '1', 'ck.retry counted one retry');
$r->quit;

($result, $stderr, $retries) = deadlock(1);
like($stderr, qr/ERROR:  40P01: deadlock detected across Citus nodes\nDETAIL:  Citus's distributed deadlock detector cancelled this transaction.\nck.retry gave up after 1 attempt./,
	'with max_attempts 1: ck.retry gives up with 40P01, saying what cancelled it');
is(CkCitus::sql($coord, "SELECT string_agg(on_call::text, ',' ORDER BY id) FROM duty WHERE id IN ($cross1, $cross2)"),
	'12,12', 'the older transaction applied, the cancelled one not');
is($retries, '0', 'no retry counted');

# A cancel that is not the detector's stays 57014 and is not retried.
$r->query_safe('BEGIN');
$r->query_safe('SELECT pg_advisory_xact_lock(8)');
my $c = CkCitus::session($coord);
my $cpid = CkCitus::pid($c);
$c->query_until(qr/started/, "\\echo started\nCALL ck.retry('SELECT pg_advisory_xact_lock(8)', 'read committed');\n");
CkCitus::wait_for_lock($coord, $cpid);
CkCitus::sql($coord, "SELECT pg_cancel_backend($cpid)");
$c->query('SELECT 1');
like($c->{stderr}, qr/ERROR:  canceling statement due to user request/, 'a plain cancel inside ck.retry: 57014, not retried');
$r->query_safe('ROLLBACK');
$c->quit;
$r->quit;

done_testing();
