-- A warehouse's time-travel retention (an ISO-8601 duration, or NULL: none): snapshot expiry keeps every snapshot
-- younger than it. Read model only: rebuilt from the log like the rest.

ALTER TABLE ll_warehouses ADD COLUMN IF NOT EXISTS time_travel_retention text;
