"""Lakeledger: an Apache Iceberg REST catalog whose source of truth is an append-only event log."""

__version__ = "0.1.0"
