-- The location-overlap check (lakeledger/projections/catalog_queries.py OVERLAPPING_TABULAR) compares locations bytewise:
-- an equality lookup over the new location's '/'-prefixes and a range for the places inside it. Under the
-- database's own collation a range is not a prefix test, so the index is in "C" order; it replaces the old one,
-- which only that check used.
CREATE INDEX IF NOT EXISTS ll_tabulars_by_location_c ON ll_tabulars (warehouse_id, location COLLATE "C");
DROP INDEX IF EXISTS ll_tabulars_by_location;
