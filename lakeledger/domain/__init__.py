"""The catalog's domain: aggregates, their events and invariants. Pure Python, no I/O."""
