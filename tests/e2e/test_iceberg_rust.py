"""iceberg-rust (crates iceberg + iceberg-catalog-rest, tests/clients/rust, `make iceberg-rust-deps`) end to end:
nested namespaces, a partitioned table of many types created with partition fields that carry no field-id, data
written as Parquet and read back, a schema change, a rename, a drop, and the conflicts and not-founds it must
recognise. iceberg-rust cannot update namespace properties (its client refuses: unsupported), and it reloads the table
before every commit, so a stale writer's refused commit (409 CommitFailed) cannot be played through it; the iceberg-go
program plays both."""

import client_programs
from client_programs import EXPECTED_EVENTS, EXPECTED_LINES

_NOT_IN_RUST = {"ok set-namespace-property", "ok remove-namespace-property", 'namespace-properties k=v owner=""',
                "ok load-stale-copy", "ok append-from-stale-copy commit failed, refresh and try again"}
_RUST_ONLY = {"ok load-namespace": ["ok load-namespace", "namespace-properties owner=rust"],
              # numbered by the catalog from 1000, as Java's PartitionSpec builder numbers them
              "partition-fields 2": ["partition-fields 2 ids 1000,1001"]}


def _rust_lines() -> list[str]:
    lines = []
    for line in EXPECTED_LINES:
        if line not in _NOT_IN_RUST:
            lines.extend(_RUST_ONLY.get(line, [line]))
    return lines


def test_iceberg_rust_plays_the_whole_scenario(server, warehouse, pg_url):
    binary = client_programs.program("LAKELEDGER_ICEBERG_RUST", ".cache/rust-target/debug/iceberg-rust-client",
                                     "iceberg-rust-deps")
    start = client_programs.log_position(pg_url)
    lines = client_programs.run(binary, f"{server.url}/catalog", warehouse["name"])
    print("\n".join(lines))
    assert lines == _rust_lines()
    events = [e for e in EXPECTED_EVENTS if e != "Namespace.PropertiesUpdated"]
    assert client_programs.event_types_since(pg_url, start) == events
