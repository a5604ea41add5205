"""Sinks: where the log's history can be streamed to (``lakeledger replay``)."""
