"""The location-overlap check (create, register, rename, undrop, the purger, the S3 signer) is answered by an
index, and means what the plain prefix test means."""

import uuid

from support import SCHEMA

from lakeledger.projections.catalog_queries import OVERLAPPING_TABULAR, overlap_params

# The rule as it reads, which no index can answer: what the index-driven form must agree with.
PLAIN_RULE = (
    "SELECT id, location FROM ll_tabulars WHERE warehouse_id = %(warehouse_id)s AND id <> %(exclude)s"
    " AND (location = %(location)s OR starts_with(%(location)s, location || '/')"
    "      OR starts_with(location, %(location)s || '/'))"
    " AND (dropped_at IS NULL OR deleted_at IS NULL OR (purge_requested AND purged_at IS NULL))")

NOBODY = uuid.UUID(int=0)


def _create(client, warehouse, namespace, name, location):
    client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": [namespace]})
    r = client.post(f"{warehouse['prefix']}/namespaces/{namespace}/tables",
                    json={"name": name, "schema": SCHEMA, "location": location})
    assert r.status_code == 200, (location, r.text)


def _plan_nodes(db, sql, params) -> list[dict]:
    with db.transaction():
        db.execute("SET LOCAL enable_seqscan = off")
        plan = db.execute("EXPLAIN (FORMAT JSON) " + sql, params).fetchone()[0][0]["Plan"]
    nodes, todo = [], [plan]
    while todo:
        node = todo.pop()
        nodes.append(node)
        todo.extend(node.get("Plans", []))
    return nodes


def test_the_overlap_check_uses_the_location_index(client, db, warehouse):
    base = warehouse["location"]
    for i in range(20):
        _create(client, warehouse, "idx", f"t{i}", f"{base}/idx/t{i}")
    params = overlap_params(uuid.UUID(warehouse["id"]), f"{base}/idx/t3/inner", NOBODY)
    nodes = _plan_nodes(db, OVERLAPPING_TABULAR, params)
    assert not [n for n in nodes if n["Node Type"] == "Seq Scan"], nodes
    lookups = [n for n in nodes if n.get("Index Name") == "ll_tabulars_by_location_c"]
    # both halves of the rule are index conditions on the location, not filters over a warehouse's rows
    conditions = sorted(n.get("Index Cond", "") for n in lookups)
    assert len(conditions) == 2, nodes
    assert "(location)::text = p.place" in conditions[0], conditions      # one lookup per place above
    assert "(location)::text >= " in conditions[1] and "(location)::text < " in conditions[1], conditions
    # and the index answers: the table above the new place is found
    assert db.execute(OVERLAPPING_TABULAR, params).fetchone()[1] == f"{base}/idx/t3"


def test_the_indexed_check_agrees_with_the_plain_prefix_rule(client, db, warehouse):
    base = warehouse["location"]
    # neighbours that sort next to each other but do not contain one another: '-' and '.' sort before '/',
    # '0' right after it, and a non-ASCII name whose bytes sort above every ASCII one
    for namespace, name, location in [("x", "a", "x/a"), ("x", "a_dash", "x/a-b"), ("x", "a_dot", "x/a.b"),
                                      ("x", "a_zero", "x/a0"), ("x", "ab", "x/ab/c"), ("y", "e", "y/é/t"),
                                      ("y", "e2", "y/éa")]:
        _create(client, warehouse, namespace, name, f"{base}/{location}")
    warehouse_id = uuid.UUID(warehouse["id"])
    probes = ["x", "x/", "x/a", "x/a/", "x/a/in/deep", "x/a-", "x/a-b", "x/a-b/c", "x/a.", "x/a0", "x/a0/z",
              "x/ab", "x/ab/", "x/ab/c", "x/ab/cd", "x/b", "y", "y/é", "y/é/t/u", "y/éa", "y/éa/q", "y/e", "z"]
    probes = [base, base + "/", base[:-1], *(f"{base}/{p}" for p in probes)]
    for probe in probes:
        indexed = sorted(db.execute(OVERLAPPING_TABULAR.replace(" LIMIT 1", ""),
                                    overlap_params(warehouse_id, probe, NOBODY)).fetchall())
        plain = sorted(db.execute(PLAIN_RULE, {"warehouse_id": warehouse_id, "location": probe,
                                               "exclude": NOBODY}).fetchall())
        assert indexed == plain, probe
    # the probes did reach both sides of the rule
    found = {probe: db.execute(OVERLAPPING_TABULAR, overlap_params(warehouse_id, probe, NOBODY)).fetchone()
             for probe in probes}
    assert found[f"{base}/x/a/in/deep"][1] == f"{base}/x/a"          # a table above the new place
    assert found[f"{base}/x/ab"][1] == f"{base}/x/ab/c"              # a table inside it
    assert found[f"{base}/x/a-"] is None and found[f"{base}/y/e"] is None
    assert len(db.execute(OVERLAPPING_TABULAR.replace(" LIMIT 1", ""),
                          overlap_params(warehouse_id, f"{base}/x", NOBODY)).fetchall()) == 5
