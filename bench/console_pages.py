"""The web console's pages at scale (issue 15, point 8). A page's server time is the API calls its script makes
(lakeledger/console/static/app.js), one after the other as the browser makes them; one sample is their sum, so it also
holds the client's own overhead (an upper bound of the server's part). Measured on the scale bench's catalogs, in the
namespace of 1,000 tables, and on one table given 10,000 history entries first."""

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx

HISTORY_ENTRIES = 10_000
PAGE_MS = 300.0
_WRITERS = 8


def history_entries(http: httpx.Client, wid: str, table_uuid: str) -> int:
    count, token = 0, ""
    while token is not None:
        body = http.get(f"/management/v1/warehouse/{wid}/history",
                        params={"tabular-id": table_uuid, "pageSize": 1000, "pageToken": token}).json()
        count += len(body["events"])
        token = body.get("next-page-token")
    return count


def give_history(http: httpx.Client, table_path: str, wid: str, table_uuid: str, entries: int, say) -> int:
    """Commits property changes to the table until its history holds ``entries`` (a kept catalog has them)."""
    have = history_entries(http, wid, table_uuid)
    missing = max(entries - have, 0)
    if missing:
        say(f"console: {missing:,} commits to give one table {entries:,} history entries")

        def commit(n: int) -> None:
            r = http.post(table_path, json={"requirements": [], "updates": [
                {"action": "set-properties", "updates": {"console-bench": str(n)}}]})
            if r.status_code != 200:
                raise RuntimeError(f"commit {n}: {r.status_code} {r.text[:300]}")

        with ThreadPoolExecutor(_WRITERS) as pool:
            list(pool.map(commit, range(missing)))
    return have + missing


def pages(prefix: str, wid: str, namespace: str, table: str, table_uuid: str, hot_table: str,
          hot_uuid: str) -> dict[str, list[tuple[str, dict]]]:
    """Each page: the (path, params) its script GETs, in order."""
    catalog = f"/catalog/v1/{prefix}"
    history = f"/management/v1/warehouse/{wid}/history"
    access = f"/management/v1/warehouse/{wid}/access-history"

    def table_page(name: str, uuid: str) -> list[tuple[str, dict]]:
        return [(f"{catalog}/namespaces/{namespace}/tables/{name}", {}),
                (f"/management/v1/warehouse/{wid}/table/{uuid}/protection", {}),
                (history, {"tabular-id": uuid, "pageSize": 100}),
                (access, {"table": uuid})]

    return {
        "console: warehouses": [("/management/v1/project-list", {}), ("/management/v1/warehouse", {})],
        "console: warehouse": [
            (f"/management/v1/warehouse/{wid}", {}),
            (f"{catalog}/namespaces", {"pageSize": 100}),
            (access, {}),
        ],
        "console: namespace of 1,000 tables": [
            (f"{catalog}/namespaces/{namespace}", {}),
            (f"{catalog}/namespaces", {"parent": namespace, "pageSize": 100}),
            (f"{catalog}/namespaces/{namespace}/tables", {"pageSize": 100}),
            (f"{catalog}/namespaces/{namespace}/views", {"pageSize": 100}),
            (f"/lakekeeper/v1/{prefix}/namespaces/{namespace}/generic-tables", {"pageSize": 100}),
        ],
        "console: search by name prefix": [
            (f"/management/v1/warehouse/{wid}/search-tabulars", {"prefix": table[:3], "pageSize": 100})
        ],
        "console: table": table_page(table, table_uuid),
        f"console: table with {HISTORY_ENTRIES:,} history entries": table_page(hot_table, hot_uuid),
        "console: warehouse history": [(f"/management/v1/warehouse/{wid}", {}), (history, {"pageSize": 100})],
        "console: recycle bin": [
            (f"/management/v1/warehouse/{wid}", {}),
            (f"/management/v1/warehouse/{wid}/deleted-tabulars", {"pageSize": 100}),
        ],
    }


def one_page(calls: list[tuple[str, dict]], check: Callable) -> Callable:
    """A request function for the scale bench's series: the page's calls in order (the series times the whole)."""
    def load(h: httpx.Client):
        response = None
        for path, params in calls:
            response = check(h.get(path, params=params))
        return response
    return load
