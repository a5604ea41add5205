"""Use cases: each command loads aggregates from the log, lets the domain decide, writes what must
be written to storage, appends the events in one transaction and waits until the catalog read
model shows them (read-your-writes)."""
