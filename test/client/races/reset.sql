-- Before each program: full tables, no reports kept.
TRUNCATE stock, shows, tickets, accounts, docs;
INSERT INTO stock VALUES (1, 1000000);
INSERT INTO shows VALUES (1, 1000000);
INSERT INTO accounts VALUES (1, 1000000), (2, 0);
INSERT INTO docs VALUES (1, '', 0);
SELECT ck.race_reports_reset() >= 0;
