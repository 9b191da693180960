# Overlap and unique guards on Citus. Citus enforces a constraint or unique index shard by shard, so on a
# distributed table it must hold the distribution column (compared with =): the generators add it, with a NOTICE
# and a comment in the DDL, and refuse (0A000) an overlap guard on a table distributed by its range column.
# Reference tables need nothing added.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use CkCitus;

my ($coord, @workers) = CkCitus::cluster();
CkCitus::sql($coord, q{
	CREATE TABLE bookings (id bigserial, room int NOT NULL, during tstzrange NOT NULL);
	SELECT create_distributed_table('bookings', 'room');
	CREATE TABLE by_range (id bigserial, during tstzrange NOT NULL);
	SELECT create_distributed_table('by_range', 'during');
	CREATE TABLE rooms (id int PRIMARY KEY, during tstzrange NOT NULL);
	SELECT create_reference_table('rooms');
	CREATE TABLE users (tenant int NOT NULL, email text NOT NULL);
	SELECT create_distributed_table('users', 'tenant');
});

# What Citus does with the guard written without the distribution column.
like(CkCitus::sql_error($coord, 'CREATE EXTENSION btree_gist; ALTER TABLE bookings ADD CONSTRAINT plain EXCLUDE USING gist (during WITH &&)'),
	qr/cannot create constraint.*that do not include the partition column/s,
	'Citus refuses an exclusion constraint without the distribution column');

my ($ret, $ddl, $notice) = $coord->psql('postgres', "SELECT ck.overlap_guard_ddl('bookings', 'during')");
like($notice, qr/NOTICE:  table "public.bookings" is distributed by Citus by column "room": the overlap guard compares it too/,
	'overlap_guard_ddl says it adds the distribution column');
like($ddl, qr/^-- Citus distributes public\.bookings by room: .*\nALTER TABLE public\.bookings\n    ADD CONSTRAINT \S+ CHECK .*;\nALTER TABLE public\.bookings\n    ADD CONSTRAINT \S+ EXCLUDE USING gist \(room WITH OPERATOR\(pg_catalog\.=\), during WITH OPERATOR\(pg_catalog\.&&\)\);$/s,
	'the DDL compares room with = first, says why in a comment, and adds each constraint by its own ALTER TABLE (Citus refuses ADD CONSTRAINT among other subcommands)');
($ret, $ddl, $notice) = $coord->psql('postgres', "SELECT ck.overlap_guard_ddl('bookings', 'during', '{room}')");
is($notice, '', 'no NOTICE when the keys hold the distribution column');
unlike($ddl, qr/Citus/, 'nor a comment');

($ret, my $out, $notice) = $coord->psql('postgres', "SELECT ck.add_overlap_guard('bookings', 'during')");
is($ret, 0, 'add_overlap_guard on the distributed table runs its DDL through Citus') or diag($notice);
CkCitus::sql($coord, "INSERT INTO bookings (room, during) VALUES (1, '[2026-01-01 10:00, 2026-01-01 12:00)')");
like(CkCitus::sql_error($coord, "\\set VERBOSITY verbose\nINSERT INTO bookings (room, during) VALUES (1, '[2026-01-01 11:00, 2026-01-01 13:00)')"),
	qr/ERROR:  23P01: conflicting key value violates exclusion constraint/, 'an overlapping booking of the same room is refused (23P01) on its shard');
is(CkCitus::sql_error($coord, "INSERT INTO bookings (room, during) VALUES (2, '[2026-01-01 11:00, 2026-01-01 13:00)')"), '',
	'another room may overlap: the guard holds per room');
is(CkCitus::sql($coord, "SELECT count(*) FROM run_command_on_shards('bookings', \$\$SELECT count(*) FROM pg_constraint WHERE conrelid = '%s'::regclass AND contype = 'x'\$\$) WHERE result = '1'"),
	CkCitus::sql($coord, "SELECT count(*) FROM citus_shards WHERE table_name = 'bookings'::regclass"),
	'every shard carries the exclusion constraint');

# Overlaps already in the data are found per room before the guard is added.
CkCitus::sql($coord, q{
	CREATE TABLE bookings2 (id bigserial, room int NOT NULL, during tstzrange NOT NULL);
	SELECT create_distributed_table('bookings2', 'room');
	INSERT INTO bookings2 (room, during) VALUES (3, '[2026-01-01 10:00, 2026-01-01 12:00)'),
		(3, '[2026-01-01 11:00, 2026-01-01 13:00)'), (4, '[2026-01-01 10:00, 2026-01-01 12:00)');
});
like(CkCitus::sql_error($coord, "\\set VERBOSITY verbose\nSELECT ck.add_overlap_guard('bookings2', 'during')"),
	qr/ERROR:  23P01: table "public.bookings2" already has overlapping rows.*\nDETAIL:  rows \(\d+,\d+\) and \(\d+,\d+\) with key \(?3\)?: /s,
	'add_overlap_guard on overlapping rows: 23P01 naming the pair of room 3 only');

like(CkCitus::sql_error($coord, "\\set VERBOSITY verbose\nSELECT ck.overlap_guard_ddl('by_range', 'during')"),
	qr/ERROR:  0A000: table "public.by_range" is distributed by Citus by its range column "during": no overlap guard can hold on it/,
	'a table distributed by its range column: 0A000');

($ret, $out, $notice) = $coord->psql('postgres', "SELECT ck.add_overlap_guard('rooms', 'during')");
is($notice, '', 'a reference table: the guard as on one server, nothing added');
CkCitus::sql($coord, "INSERT INTO rooms VALUES (1, '[2026-01-01 10:00, 2026-01-01 12:00)')");
like(CkCitus::sql_error($coord, "INSERT INTO rooms VALUES (2, '[2026-01-01 11:00, 2026-01-01 13:00)')"),
	qr/conflicting key value violates exclusion constraint/, 'a reference table: any two rows excluded');

# Unique guards.
($ret, $ddl, $notice) = $coord->psql('postgres', "SELECT ck.unique_guard_ddl('users', '{email}')");
like($notice, qr/NOTICE:  table "public.users" is distributed by Citus by column "tenant": the unique guard includes it/,
	'unique_guard_ddl says it adds the distribution column');
like($ddl, qr/^-- Citus distributes public\.users by tenant: .*\nCREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS users_email_tenant_unique ON public\.users \(email, tenant\);$/s,
	'the index holds email, then tenant');
like(CkCitus::sql_error($coord, 'CREATE UNIQUE INDEX CONCURRENTLY plain ON users (email)'),
	qr/creating unique indexes on non-partition columns is currently unsupported/,
	'Citus refuses the unique index without the distribution column');
is(CkCitus::sql_error($coord, $ddl), '', 'the generated DDL runs through Citus (CREATE INDEX CONCURRENTLY)');
CkCitus::sql($coord, "INSERT INTO users VALUES (1, 'a\@example.com'), (2, 'a\@example.com')");
like(CkCitus::sql_error($coord, "INSERT INTO users VALUES (1, 'a\@example.com')"),
	qr/duplicate key value violates unique constraint "users_email_tenant_unique_\d+"/, 'a duplicate within a tenant is refused');
($ret, $ddl, $notice) = $coord->psql('postgres', "SELECT ck.unique_guard_ddl('users', '{tenant, email}')");
is($notice, '', 'no NOTICE when the columns hold the distribution column');
is($ddl, 'CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS users_tenant_email_unique ON public.users (tenant, email);',
	'and the DDL is the one-server DDL');
($ret, $ddl, $notice) = $coord->psql('postgres', "SELECT ck.unique_guard_ddl('rooms', '{during}')");
is($notice . ($ddl =~ /Citus/ ? 'comment' : ''), '', 'a reference table: nothing added');

done_testing();
