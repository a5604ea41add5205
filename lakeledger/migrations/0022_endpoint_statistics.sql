-- Calls per endpoint, status and hour (Lakekeeper's endpoint statistics). Not a read model of the event log: a
-- request that changes nothing is counted too, and counting must not append. Each API process adds its counts
-- in batches (lakeledger/operations/endpoint_statistics.py), so a row is a sum over processes and flushes.
-- project_id is what the request named (x-project-id, else the default project); a call on a warehouse counts
-- for that warehouse's project.

CREATE TABLE IF NOT EXISTS ll_endpoint_statistics (
    bucket        timestamptz NOT NULL,  -- the end of the hour the calls fell in (Lakekeeper's `timestamp`)
    http_route    text NOT NULL,         -- "METHOD /route/{template}"
    status_code   integer NOT NULL,
    project_id    uuid NOT NULL,
    warehouse_id  uuid NOT NULL,         -- the nil uuid: a call of no warehouse (NULL would break the key)
    count         bigint NOT NULL,
    created_at    timestamptz NOT NULL,  -- the first call of the bucket
    updated_at    timestamptz,           -- the last, once there is a second
    PRIMARY KEY (project_id, bucket, warehouse_id, http_route, status_code)
);
