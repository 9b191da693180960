-- find_overlaps benchmark: 1,000 rooms x 1,000 back-to-back one-hour bookings, plus 5 double
-- bookings (10 overlapping pairs).
DROP TABLE IF EXISTS big_bookings;
CREATE TABLE big_bookings (id bigserial PRIMARY KEY, room int NOT NULL, during tstzrange NOT NULL);
INSERT INTO big_bookings (room, during)
SELECT r, tstzrange('2026-01-01'::timestamptz + h * interval '1 hour', '2026-01-01'::timestamptz + (h + 1) * interval '1 hour')
FROM generate_series(1, 1000) AS r, generate_series(0, 999) AS h;
INSERT INTO big_bookings (room, during)
SELECT r * 100, tstzrange('2026-01-02 00:30', '2026-01-02 01:30') FROM generate_series(1, 5) AS r;
VACUUM ANALYZE big_bookings;
