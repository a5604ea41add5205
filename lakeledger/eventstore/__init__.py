"""The append-only event log: the catalog's only source of truth, kept in Postgres by the
``eventsourcing`` library."""
