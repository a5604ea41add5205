-- Search of a warehouse's live tables and views by the start of their name, any case (GET
-- /management/v1/warehouse/{id}/search-tabulars, the console's search): a range over lower(name) in "C" order is a
-- bytewise prefix test an index answers at any number of tables.
CREATE INDEX IF NOT EXISTS ll_tabulars_by_lower_name_c ON ll_tabulars (warehouse_id, (lower(name) COLLATE "C"), id)
    WHERE dropped_at IS NULL;
