-- The audit history read model: one row per event of the log (name claims and idempotency keys left out),
-- with the columns the history API filters on. Written only by the history projection; rebuildable.

CREATE TABLE IF NOT EXISTS ll_history (
    sequence        bigint PRIMARY KEY,
    event_id        uuid NOT NULL,
    time            timestamptz NOT NULL,
    type            text NOT NULL,
    actor           text NOT NULL,
    request_id      text NOT NULL,
    warehouse_id    uuid,
    entity_type     text NOT NULL,
    entity_id       uuid NOT NULL,
    entity_name     text[] NOT NULL,
    namespace       text[],
    from_namespace  text[],
    summary         text NOT NULL,
    change          jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS ll_history_by_warehouse ON ll_history (warehouse_id, sequence);
CREATE INDEX IF NOT EXISTS ll_history_by_entity ON ll_history (entity_id, sequence);
CREATE INDEX IF NOT EXISTS ll_history_of_server ON ll_history (sequence)
    WHERE entity_type IN ('server', 'project', 'warehouse');

-- What the history projection remembers of each entity between its events: names and where it lives (later
-- events do not repeat them) and a table's last schema (to say which columns a new schema adds).
CREATE TABLE IF NOT EXISTS ll_history_entities (
    id            uuid PRIMARY KEY,
    entity_type   text NOT NULL,
    warehouse_id  uuid,
    name          text[] NOT NULL,
    namespace     text[],
    fields        jsonb
);
