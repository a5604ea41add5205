"""Long-running runners that follow the event log: projections and side effects like purging."""
