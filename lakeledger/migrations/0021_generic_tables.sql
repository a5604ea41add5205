-- What a generic table (Lakekeeper's Generic Table API: Lance, Delta, Parquet folders) was created with, beside its
-- row in ll_tabulars (typ 'generic-table'): its opaque format and free-form description. Written once at creation
-- (a generic table has no commits), kept after a drop as its ll_tabulars row is.
CREATE TABLE IF NOT EXISTS ll_generic_tables (
    id          uuid PRIMARY KEY,
    format      text NOT NULL,
    doc         text,
    properties  jsonb NOT NULL DEFAULT '{}'::jsonb,
    schema      jsonb,
    statistics  jsonb
);
