-- The history events that change a warehouse's table and view counts (GET /management/v1/warehouse/{id}/statistics,
-- lakeledger/projections/statistics_queries.py): a few of a warehouse's events, most being commits, so the statistics
-- read those alone instead of the warehouse's whole history.

CREATE INDEX IF NOT EXISTS ll_history_counted ON ll_history (warehouse_id, time)
    WHERE type IN ('warehouse.created', 'table.created', 'table.registered', 'table.dropped', 'table.expired',
                   'view.created', 'view.dropped', 'view.expired');
