# The audits on the Citus coordinator: ck.volatility_audit and ck.lock_audit read the coordinator's catalog, where
# Citus keeps the distributed tables, their foreign keys and the functions it propagates to the workers.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use CkCitus;

my ($coord, @workers) = CkCitus::cluster();
CkCitus::sql($coord, q{
	CREATE TABLE products (id int PRIMARY KEY, name text NOT NULL);
	SELECT create_reference_table('products');
	CREATE TABLE orders (id int, product int NOT NULL REFERENCES products (id), PRIMARY KEY (id));
	SELECT create_distributed_table('orders', 'id');
	INSERT INTO products VALUES (1, 'pen');
	CREATE FUNCTION public.product_name(p int) RETURNS text IMMUTABLE LANGUAGE sql
		AS $$ SELECT name FROM public.products WHERE id = p $$;
	CREATE FUNCTION public.reserve(p int) RETURNS void LANGUAGE plpgsql
		AS $$ BEGIN PERFORM 1 FROM public.products WHERE id = p FOR UPDATE; END $$;
});

is(CkCitus::sql($coord, "SELECT func, declared, suggested, reason FROM ck.volatility_audit('public') WHERE func = 'product_name(int)'::regprocedure"),
	'product_name(integer)|IMMUTABLE|STABLE|reads table public.products', 'volatility_audit on the coordinator: an IMMUTABLE function reading a reference table');
is(CkCitus::sql($workers[0], "SELECT count(*) FROM ck.volatility_audit('public') WHERE func::text = 'product_name(integer)'"),
	'1', 'the function Citus propagated is flagged on a worker too');
like(CkCitus::sql($coord, "SELECT advice FROM ck.lock_audit('public') WHERE func = 'reserve(int)'::regprocedure"),
	qr/FOR NO KEY UPDATE/, 'lock_audit on the coordinator: FOR UPDATE on a reference table that a distributed table references');
is(CkCitus::sql($coord, "SELECT count(*) FROM pg_constraint WHERE conrelid = 'orders'::regclass AND contype = 'f'"), '1',
	'the coordinator holds the foreign key lock_audit reads');

done_testing();
