"""The scale fixture (bench/seed.py) at a small size: what it builds through the services is what the API lists,
the log holds exactly the events asked for, and a rebuild from that log gives the same read models."""

import psycopg
from support import Server
from test_read_model import _differences, _rebuild, _snapshot

from bench.seed import Plan, namespace_name, seed, table_name, view_name

PLAN = Plan(namespaces=3, tables=60, views=5, events=500, workers=2, threads=2, batch=7)


def _all(client, url: str, key: str) -> list[str]:
    """Every identifier's last part, following next-page-token (small pages, so paging is part of the check)."""
    names, token = [], None
    while True:
        params = {"pageSize": "7", **({"pageToken": token} if token else {})}
        response = client.get(url, params=params)
        assert response.status_code == 200, response.text
        body = response.json()
        names += [i["name"] if isinstance(i, dict) else i[-1] for i in body[key]]
        token = body.get("next-page-token")
        if not token:
            return names


def _log_length(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM lakeledger_events").fetchone()[0]


def test_seeded_catalog_is_listed_by_the_api_and_rebuilds_identically(database, tmp_path):
    import httpx

    seeded = seed(database, PLAN, tmp_path / "seed")
    assert _log_length(database) == seeded.events == PLAN.events
    assert seeded.commits > 0 and seeded.phases["commits"][0] == seeded.commits

    server = Server(database, tmp_path)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            config = client.get("/catalog/v1/config", params={"warehouse": seeded.warehouse_name}).json()
            p = f"/catalog/v1/{config['overrides']['prefix']}"
            assert sorted(_all(client, f"{p}/namespaces", "namespaces")) == [namespace_name(i) for i in range(3)]
            tables, views = [], []
            for i in range(3):
                tables += _all(client, f"{p}/namespaces/{namespace_name(i)}/tables", "identifiers")
                views += _all(client, f"{p}/namespaces/{namespace_name(i)}/views", "identifiers")
            assert sorted(tables) == [table_name(j) for j in range(60)]
            assert sorted(views) == [view_name(j) for j in range(5)]
            # every commit is in the tables' metadata: the set-properties of the last round each table had
            loaded = client.get(f"{p}/namespaces/{namespace_name(0)}/tables/{table_name(0)}")
            assert loaded.status_code == 200 and "seed.commit" in loaded.json()["metadata"]["properties"]
            with psycopg.connect(database, autocommit=True) as db:
                committed = db.execute("SELECT count(*) FROM lakeledger_events WHERE topic LIKE %s",
                                       ("%Table.Committed",)).fetchone()[0]
                assert committed == seeded.commits
                before = _snapshot(db)
                assert len(before["ll_tabulars"]) == 65
                assert "rebuilt" in _rebuild(database, tmp_path)
                assert _differences(before, _snapshot(db)) == {}
            assert _log_length(database) == PLAN.events  # starting, serving and rebuilding appended nothing
    finally:
        server.stop()
