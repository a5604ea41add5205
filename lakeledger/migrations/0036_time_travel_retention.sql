-- A warehouse's time-travel retention (an ISO-8601 duration, or NULL: none): snapshot expiry keeps every snapshot
-- younger than it; when it was last set (the maintenance checks look at the warehouse's tables again after a
-- change, not only a schedule interval after their last look). Read model only: rebuilt from the log like the rest.

ALTER TABLE ll_warehouses ADD COLUMN IF NOT EXISTS time_travel_retention text;
ALTER TABLE ll_warehouses ADD COLUMN IF NOT EXISTS time_travel_retention_set_at timestamptz;
