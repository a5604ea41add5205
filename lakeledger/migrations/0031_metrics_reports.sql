-- The metrics reports engines send (Iceberg's ReportMetricsRequest: scan and commit reports), the newest of each
-- table: the metrics-reports projection's read model (lakeledger/projections/metrics_reports.py), fed by the
-- MetricsReport events of the log and rebuildable from it. The figures a person asks for first are columns; the
-- report itself is kept whole.
CREATE TABLE IF NOT EXISTS ll_metrics_reports (
    sequence        bigint PRIMARY KEY,       -- the event's log position: newest first is descending
    event_id        uuid NOT NULL,
    reported_at     timestamptz NOT NULL,     -- when it entered the log
    actor           text NOT NULL,
    request_id      text NOT NULL,
    warehouse_id    uuid NOT NULL,
    table_id        uuid NOT NULL,
    kind            text NOT NULL,            -- 'scan-report' or 'commit-report'
    table_name      text,                     -- the name the engine gave
    snapshot_id     bigint,
    sequence_number bigint,                   -- a commit's
    operation       text,                     -- a commit's (append, overwrite, delete ...)
    schema_id       integer,                  -- a scan's
    filter          jsonb,                    -- a scan's expression
    projected_field_names text[],             -- a scan's
    metrics         jsonb NOT NULL,
    metadata        jsonb
);
CREATE INDEX IF NOT EXISTS ll_metrics_reports_of_table ON ll_metrics_reports (table_id, sequence DESC);

INSERT INTO ll_projection_positions (name, position) VALUES ('metrics-reports', 0) ON CONFLICT (name) DO NOTHING;
