"""iceberg-go (tests/clients/go, `make iceberg-go-deps`) end to end: nested namespaces created and changed with its
`null` properties, removals and updates, a partitioned table of many types written and read back, a schema change,
a rename, a drop, and the conflicts and not-founds it must recognise."""

import client_programs
from client_programs import EXPECTED_EVENTS, EXPECTED_LINES


def test_iceberg_go_plays_the_whole_scenario(server, warehouse, pg_url):
    binary = client_programs.program("LAKELEDGER_ICEBERG_GO", ".cache/iceberg-go/icebergclient", "iceberg-go-deps")
    start = client_programs.log_position(pg_url)
    lines = client_programs.run(binary, f"{server.url}/catalog", warehouse["name"])
    print("\n".join(lines))
    assert lines == EXPECTED_LINES
    assert client_programs.event_types_since(pg_url, start) == EXPECTED_EVENTS
