# The isolation specs of distributed queues (test/citus/specs), run by pg_isolation_regress
# against the coordinator of a Citus cluster.
use strict;
use warnings;
use File::Basename;
use PostgreSQL::Test::Utils;
use Test::More;
use CkCitus;

my ($coord) = CkCitus::cluster();
my $isolation = dirname($ENV{PG_REGRESS}) . '/../isolation/pg_isolation_regress';
my $out = "$ENV{TESTDIR}/isolation_results";
mkdir $out;
my @specs = map { basename($_, '.spec') } glob "$ENV{TESTDIR}/specs/*.spec";
my $ok = system($isolation, '--use-existing', '--dbname=postgres', '--host=' . $coord->host, '--port=' . $coord->port,
	"--inputdir=$ENV{TESTDIR}", "--outputdir=$out", @specs) == 0;
ok($ok, 'isolation specs: ' . join(', ', @specs));
if (!$ok && open my $fh, '<', "$out/regression.diffs")
{
	diag $_ while <$fh>;
}
done_testing();
