"""Schemathesis fuzzes every catalog and management operation of the OpenAPI document the live server serves.

Each operation gets a fresh project, warehouse, namespace, table and view, and its path parameters and
`x-project-id` name them, so generated requests reach real objects instead of stopping at 404. Every finding of
every operation is collected (an assertion inside Hypothesis would stop an operation at its first one) and the
test fails with all of them, grouped by operation, check and status.

Random requests seldom make a success (a config lookup needs the warehouse's id, a registration a real metadata
file), so a second test makes one good request per documented operation and holds its answer to the document, and
every answer of an operation Lakekeeper's newest management document also has to that document too.
"""

import json
import re
import uuid
from pathlib import Path

import lakekeeper_spec
import requests
import schemathesis
from fuzzing import CHECKS, EXAMPLES, GENERIC_TABLE, NAMESPACE, TABLE, VIEW_VERSION, ObjectsFor, fresh_objects, fuzz
from schemathesis.specs.openapi.checks import negative_data_rejection
from support import SCHEMA

from lakeledger.domain.table_maintenance import MAINTENANCE_QUEUES


def test_fuzzed_operations_answer_by_the_served_openapi_document(server, client, tmp_path):
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    labels = {op.label for op in operations}
    # The document must describe both APIs, or there is nothing to fuzz.
    assert any(label.startswith("POST /catalog/v1/{prefix}/namespaces") for label in labels), sorted(labels)
    assert any(" /management/v1/warehouse" in label for label in labels), sorted(labels)

    findings: dict[tuple[str, str, str], str] = {}
    session = requests.Session()
    objects_for = ObjectsFor(client, tmp_path)
    for operation in operations:
        objects = objects_for(operation)
        for mode in EXAMPLES:
            def record(check: str, status: str, detail: str, label=operation.label) -> None:
                findings.setdefault((label, check, status), detail)

            fuzz(operation, mode, objects, server.url, session, record)
        if operation.label == "POST /management/v1/maintenance-mode":  # it may have switched read-only on
            assert client.post("/management/v1/maintenance-mode", json={"mode": "off"}).status_code == 200

    report = "\n\n".join(f"{label} | {check} | status {status}\n{detail}"
                         for (label, check, status), detail in sorted(findings.items()))
    assert not findings, f"{len(findings)} distinct findings over {len(operations)} operations:\n\n{report}"


def test_a_good_request_to_every_operation_is_answered_as_documented(server, client, tmp_path, minio):
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    objects = fresh_objects(client, tmp_path)
    project = {"x-project-id": objects["project_id"]}
    catalog = "/catalog/v1/{prefix}"
    namespace = catalog + "/namespaces/{namespace}"
    table, view = namespace + "/tables/{table}", namespace + "/views/{view}"
    set_property = {"updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    answered: set[str] = set()
    lakekeepers: set[str] = set()  # the operations whose answers were held to Lakekeeper's document
    unlike_lakekeeper: dict[str, list[str]] = {}

    def answer(label: str, statuses: set[int], **request):
        operation = schema.find_operation_by_label(label)
        assert operation is not None, f"{label} is not in the document"
        names = re.findall(r"{(\w+)}", operation.path)
        case = operation.Case(path_parameters={n: request.pop(n, objects.get(n)) for n in names}, **request)
        response = case.call(base_url=server.url, timeout=30)
        assert response.status_code in statuses, f"{label}: {response.status_code} {response.text[:500]}"
        # raises with every finding; negative_data_rejection is about generated data only
        checks = [check for check in CHECKS if check is not negative_data_rejection]
        case.validate_response(response, checks=checks, transport_kwargs={"base_url": server.url})
        answered.add(label)
        method, path = response.request.method, response.request.path_url.split("?")[0]
        if lakekeeper_spec.operation(method, path) is not None:
            lakekeepers.add(label)
            found = lakekeeper_spec.mismatches(method, path, response.status_code, response.content)
            if found:
                unlike_lakekeeper[f"{label} {response.status_code}"] = found
        return response

    answer("GET /catalog/v1/config", {200}, query={"warehouse": objects["warehouse_id"]}, headers=project)
    answer(f"GET {catalog}/namespaces", {200})
    answer(f"POST {catalog}/namespaces", {200}, body={"namespace": ["other"], "properties": {"a": "b"}})
    answer(f"GET {namespace}", {200})
    answer(f"HEAD {namespace}", {204})
    answer(f"POST {namespace}/properties", {200}, namespace="other",
           body={"updates": {"c": "d"}, "removals": ["a", "missing"]})
    answer(f"DELETE {namespace}", {204}, namespace="other")

    answer(f"GET {namespace}/tables", {200})
    answer(f"POST {namespace}/tables", {200}, body={"name": "staged", "schema": SCHEMA, "stage-create": True})
    created = answer(f"POST {namespace}/tables", {200}, body={"name": "second", "schema": SCHEMA}).json()
    loaded = answer(f"GET {table}", {200})
    answer(f"GET {table}", {304}, headers={"if-none-match": loaded.headers["etag"][0]})
    answer(f"HEAD {table}", {204})
    answer(f"GET {table}/credentials", {200})
    answer(f"POST {table}", {200}, body=set_property)
    answer(f"POST {table}/metrics", {204}, body={
        "report-type": "commit-report", "table-name": "ns.t", "snapshot-id": 1, "sequence-number": 1,
        "operation": "append", "metrics": {"added-records": {"unit": "count", "value": 3}}})
    answer("GET /management/v1/warehouse/{warehouse_id}/table/{table_id}/metrics-reports", {200})
    plan = answer(f"POST {table}/plan", {200}, body={"filter": {"type": "gt", "term": "id", "value": 1}}).json()
    answer(f"GET {table}/plan/{{plan_id}}", {200}, plan_id=plan["plan-id"])
    answer(f"DELETE {table}/plan/{{plan_id}}", {204}, plan_id=plan["plan-id"])
    answer(f"POST {table}/tasks", {404}, body={"plan-task": "unknown"})
    answer(f"POST {catalog}/transactions/commit", {204}, body={"table-changes": [
        {"identifier": {"namespace": [NAMESPACE], "name": TABLE}, **set_property}]})
    answer(f"POST {catalog}/tables/rename", {204}, body={"source": {"namespace": [NAMESPACE], "name": "second"},
                                                         "destination": {"namespace": [NAMESPACE], "name": "moved"}})
    answer(f"DELETE {table}", {204}, table="moved", query={"purgeRequested": "false"})
    answer(f"POST {catalog}/events", {200}, body={"page-size": 5, "object-types": ["table"]})
    answer(f"POST {namespace}/register", {200},
           body={"name": "back", "metadata-location": created["metadata-location"]})
    answer(f"POST {table}/unregister", {200}, table="back")

    answer(f"GET {namespace}/views", {200})
    second = answer(f"POST {namespace}/views", {200}, body={
        "name": "second", "schema": SCHEMA, "view-version": VIEW_VERSION, "properties": {}}).json()
    answer(f"GET {view}", {200})
    answer(f"HEAD {view}", {204})
    answer(f"POST {view}", {200}, body=set_property)
    # a view file the catalog does not know yet: that metadata under a new uuid
    copy = Path(objects["location"]) / "copy" / "metadata" / f"00000-{uuid.uuid4()}.metadata.json"
    copy.parent.mkdir(parents=True)
    copy.write_text(json.dumps(second["metadata"] | {"view-uuid": str(uuid.uuid4()),
                                                     "location": f"file://{objects['location']}/copy"}))
    answer(f"POST {namespace}/register-view", {200}, body={"name": "copy", "metadata-location": f"file://{copy}"})
    answer(f"POST {catalog}/views/rename", {204}, body={"source": {"namespace": [NAMESPACE], "name": "second"},
                                                        "destination": {"namespace": [NAMESPACE], "name": "moved"}})
    answer(f"DELETE {view}", {204}, view="moved")

    # generic tables (Lakekeeper's Generic Table API)
    generic = "/lakekeeper/v1/{prefix}/namespaces/{namespace}/generic-tables"
    answer(f"GET {generic}", {200})
    answer(f"POST {generic}", {200}, body={"name": "second", "format": "delta", "doc": "d", "properties": {"k": "v"},
                                          "schema": {"fields": []}, "statistics": {"rows": 1}})
    answer(f"GET {generic}/{{table}}", {200}, table=GENERIC_TABLE)
    answer(f"GET {generic}/{{table}}/credentials", {200}, table=GENERIC_TABLE)
    answer("POST /lakekeeper/v1/{prefix}/generic-tables/rename", {204}, body={
        "source": {"namespace": [NAMESPACE], "name": "second"}, "destination": {"namespace": [NAMESPACE],
                                                                                "name": "moved"}})
    answer(f"DELETE {generic}/{{table}}", {204}, table="moved")

    # other tests against this server may have bootstrapped it already
    answer("POST /management/v1/bootstrap", {204, 400}, body={"accept-terms-of-use": True})
    answer("GET /management/v1/info", {200})
    created_project = answer("POST /management/v1/project", {201}, body={"project-name": f"p-{uuid.uuid4().hex}"})
    other = {"x-project-id": created_project.json()["project-id"]}
    answer("GET /management/v1/project", {200}, headers=other)
    answer("POST /management/v1/project/rename", {200}, headers=other, body={"new-name": f"r-{uuid.uuid4().hex}"})
    answer("GET /management/v1/project-list", {200})
    answer("GET /management/v1/project/{project_id}", {200}, project_id=other["x-project-id"])
    answer("POST /management/v1/project/{project_id}/rename", {200}, project_id=other["x-project-id"],
           body={"new-name": f"r-{uuid.uuid4().hex}"})
    empty = client.post("/management/v1/project", json={"project-name": "empty"}).json()["project-id"]
    answer("DELETE /management/v1/project", {204}, headers={"x-project-id": empty})
    empty = client.post("/management/v1/project", json={"project-name": "empty"}).json()["project-id"]
    answer("DELETE /management/v1/project/{project_id}", {204}, project_id=empty)
    answer("GET /management/v1/maintenance-mode", {200})
    answer("POST /management/v1/maintenance-mode", {200}, body={"mode": "off"})
    spare = answer("POST /management/v1/warehouse", {201}, headers=other, body={
        "warehouse-name": "spare", "storage-profile": {"type": "file", "location": f"file://{tmp_path}/spare"}},
    ).json()["warehouse-id"]
    answer("POST /management/v1/warehouse/test-storage", {200}, headers=other, body={
        "storage-profile": {"type": "file", "location": f"file://{tmp_path}/probe"}})
    answer("POST /management/v1/warehouse-creation-validation", {200}, headers=other, body={
        "warehouse-name": "dry", "storage-profile": {"type": "file", "location": f"file://{tmp_path}/dry"}})
    answer("GET /management/v1/warehouse", {200}, headers=other, query={"warehouseStatus": ["active", "inactive"]})
    answer("GET /management/v1/warehouse/{warehouse_id}/statistics", {200}, warehouse_id=spare,
           query={"page_size": "5"})
    answer("POST /management/v1/endpoint-statistics", {200}, headers=other, body={
        "warehouse": {"type": "all"}, "status-codes": [200, 201],
        "range-specifier": {"type": "window", "end": "2030-01-01T00:00:00Z", "interval": "P1D"}})
    for check in ("validate-access", "validate-profile", "validate-credential"):
        body = {"validate-access": None, "validate-credential": {"new-storage-credential": None},
                "validate-profile": {"storage-profile": {"type": "file", "location": f"file://{tmp_path}/spare"}}}
        answer(f"POST /management/v1/warehouse/{{warehouse_id}}/storage/{check}", {200}, warehouse_id=spare,
               **({"body": body[check]} if body[check] else {}))
    answer("GET /management/v1/warehouse/{warehouse_id}", {200}, warehouse_id=spare)
    answer("POST /management/v1/warehouse/{warehouse_id}/rename", {200}, warehouse_id=spare, body={"new-name": "x"})
    answer("POST /management/v1/warehouse/{warehouse_id}/deactivate", {200}, warehouse_id=spare)
    answer("POST /management/v1/warehouse/{warehouse_id}/activate", {200}, warehouse_id=spare)
    answer("DELETE /management/v1/warehouse/{warehouse_id}", {204}, warehouse_id=spare)
    for kind in ("namespace", "table", "view", "generic-table"):
        path = f"/management/v1/warehouse/{{warehouse_id}}/{kind}/{{{kind.replace('-', '_')}_id}}/protection"
        answer(f"POST {path}", {200}, body={"protected": True})
        answer(f"GET {path}", {200})
        answer(f"POST {path}", {200}, body={"protected": False})
    answer("POST /management/v1/warehouse/{warehouse_id}/protection", {200}, body={"protected": False})
    # the namespace moved (renamed) and back where the later requests expect it
    for destination in ([f"{NAMESPACE}-moved"], [NAMESPACE]):
        answer("POST /management/v1/warehouse/{warehouse_id}/namespace/{namespace_id}/move", {200},
               body={"destination": destination})
    answer("POST /management/v1/warehouse/{warehouse_id}/delete-profile", {200},
           body={"delete-profile": {"type": "soft", "expiration-seconds": 3600}})
    for managed_by in ("instance-admin", "self-managed"):
        answer("POST /management/v1/warehouse/{warehouse_id}/managed-by", {200}, body={"managed-by": managed_by})
    answer("POST /management/v1/warehouse/{warehouse_id}/format-version-policy", {200},
           body={"allowed-format-versions": [1, 2, 3], "default-format-version": 2})
    answer("POST /management/v1/warehouse/{warehouse_id}/drop-purge-default", {200},
           body={"drop-purge-default": "keep"})
    answer("POST /management/v1/warehouse/{warehouse_id}/time-travel-retention", {200},
           body={"time-travel-retention": "P7D"})
    answer("GET /management/v1/warehouse/{warehouse_id}/time-travel-retention", {200})
    answer(f"DELETE {view}", {204})
    answer("GET /management/v1/warehouse/{warehouse_id}/deleted-tabulars", {200}, query={"pageSize": "10"})
    answer("GET /management/v1/warehouse/{warehouse_id}/search-tabulars", {200}, query={"prefix": "t", "pageSize": "5"})
    answer("POST /management/v1/warehouse/{warehouse_id}/search-tabular", {200}, body={"search": NAMESPACE})
    # tasks: the soft-dropped view's expiry, listed, read, cancelled (so the undrop below still finds it)
    wh_tasks = "/management/v1/warehouse/{warehouse_id}/task"
    listed = answer(f"POST {wh_tasks}/list", {200}, body={"page-size": 10, "queue-name": ["soft_deletion"]}).json()
    [view_task] = [t["task-id"] for t in listed["tasks"] if t["entity"].get("view-id") == objects["view_id"]]
    answer(f"GET {wh_tasks}/by-id/{{task_id}}", {200}, task_id=view_task, query={"numAttempts": "5"})
    answer(f"POST {wh_tasks}/control", {204}, body={"action": {"action-type": "cancel"}, "task-ids": [view_task]})
    for queue in ("tabular_expiration", "soft_deletion", "tabular_purge", *MAINTENANCE_QUEUES):
        config = f"/management/v1/warehouse/{{warehouse_id}}/task-queue/{queue}/config"
        answer(f"POST {config}", {204}, body={"queue-config": {}, "max-seconds-since-last-heartbeat": 60})
        answer(f"GET {config}", {200})
    answer("POST /management/v1/project/task/list", {200}, headers=project, body={"page-size": 5})
    answer("GET /management/v1/project/task/by-id/{task_id}", {404}, headers=project, task_id=str(uuid.uuid4()))
    answer("POST /management/v1/project/task/control", {204}, headers=project,
           body={"action": {"action-type": "cancel"}, "task-ids": []})
    answer("POST /management/v1/warehouse/{warehouse_id}/deleted-tabulars/undrop", {204},
           body={"targets": [{"type": "view", "id": objects["view_id"]}]})
    answer("GET /management/v1/warehouse/{warehouse_id}/history", {200},
           query={"namespace": NAMESPACE, "since": "2020-01-01T00:00:00Z", "pageSize": "2"})
    answer("GET /management/v1/history", {200}, query={"type": "project.created", "pageSize": "5"})

    # users and roles (the user and role of `objects` are in the project of `project`)
    someone = f"oidc~good-{uuid.uuid4().hex[:8]}"
    answer("POST /management/v1/user", {201}, body={"id": someone, "name": "Good", "user-type": "human"})
    answer("POST /management/v1/user", {200}, body={"id": someone, "name": "Good Again", "user-type": "human",
                                                    "update-if-exists": True})
    answer("GET /management/v1/user", {200}, query={"name": "good", "pageSize": "5"})
    answer("GET /management/v1/user/{user_id}", {200})
    answer("PUT /management/v1/user/{user_id}", {200}, body={"name": "Put", "user-type": "application"})
    answer("POST /management/v1/user/{user_id}", {200}, body={"name": "Posted", "email": "p@x.org",
                                                            "user-type": "human"})
    answer("GET /management/v1/user/{user_id}/roles", {200}, headers=project)
    answer("POST /management/v1/search/user", {200}, body={"search": "good"})
    answer("GET /management/v1/whoami", {401})  # anonymous here: authentication is off
    answer("POST /management/v1/role", {201}, headers=project, body={"name": "good-role", "description": "d"})
    nested = client.post("/management/v1/role", headers=project, json={"name": "nested"}).json()["id"]
    answer("GET /management/v1/role", {200}, headers=project, query={"pageSize": "5"})
    answer("GET /management/v1/role/{role_id}", {200}, headers=project)
    answer("POST /management/v1/role/{role_id}", {200}, headers=project, body={"name": "renamed-role"})
    answer("POST /management/v1/search/role", {200}, headers=project, body={"search": "role"})
    answer("POST /management/v1/role/{role_id}/members", {200}, headers=project,
           body={"members": [{"type": "role", "id": nested}, {"type": "user", "id": someone}]})
    answer("GET /management/v1/role/{role_id}/members", {200}, headers=project)
    answer("GET /management/v1/role/{role_id}/member-of", {200}, headers=project, role_id=nested)
    answer("GET /management/v1/role/{role_id}/members/transitive", {200}, headers=project)
    answer("GET /management/v1/role/{role_id}/member-of/transitive", {200}, headers=project, role_id=nested)
    answer("GET /management/v1/user/{user_id}/roles/transitive", {200}, headers=project)
    answer("GET /management/v1/role/{role_id}/metadata", {200})
    answer("PUT /management/v1/role/{role_id}/source-system", {200}, headers=project,
           body={"provider-id": "oidc", "source-id": f"group-{uuid.uuid4().hex[:8]}"})
    answer("DELETE /management/v1/role/{role_id}/members/{member_type}/{member_id}", {204}, headers=project,
           member_type="role", member_id=nested)
    # permissions (issue 13): every object kind's assignments and access, checks, the access history
    for kind, path in (("server", "/server"), ("project", "/project"), ("project", "/project/{project_id}"),
                       ("warehouse", "/warehouse/{warehouse_id}"), ("namespace", "/namespace/{namespace_id}"),
                       ("table", "/warehouse/{warehouse_id}/table/{table_id}"),
                       ("view", "/warehouse/{warehouse_id}/view/{view_id}"),
                       ("generic-table", "/warehouse/{warehouse_id}/generic-table/{generic_table_id}"),
                       ("role", "/role/{role_id}")):
        relation = {"server": "operator", "project": "describe", "role": "ownership"}.get(kind, "select")
        base = f"/management/v1/permissions{path}"
        answer(
            f"POST {base}/assignments", {204}, headers=project, body={"writes": [{"type": relation, "user": someone}]}
        )
        answer(f"GET {base}/assignments", {200}, headers=project)
        answer(f"GET {base}/access", {200}, headers=project)
        if "{project_id}" not in path:
            answer(f"GET {base}/authorizer-actions", {200}, headers=project)
    # managed access on a warehouse and a namespace: switched on, answered, switched off again
    for path in ("/warehouse/{warehouse_id}", "/namespace/{namespace_id}"):
        base = f"/management/v1/permissions{path}"
        answer(f"POST {base}/managed-access", {200}, body={"managed-access": True})
        answer(f"GET {base}", {200})
        answer(f"POST {base}/managed-access", {200}, body={"managed-access": False})
    # 0.14's action introspection, and many checks at once
    for path in ("/server", "/project", "/role/{role_id}", "/user/{user_id}", "/warehouse/{warehouse_id}",
                 "/warehouse/{warehouse_id}/namespace/{namespace_id}", "/warehouse/{warehouse_id}/table/{table_id}",
                 "/warehouse/{warehouse_id}/view/{view_id}",
                 "/warehouse/{warehouse_id}/generic-table/{generic_table_id}"):
        answer(f"GET /management/v1{path}/actions", {200}, headers=project)
    # 0.14's grants API: the same assignments, on every object kind
    answer("GET /management/v1/grants/grantable-privileges", {200})
    for path, privilege in (("/server", "operator"), ("/project", "describe"), ("/warehouse/{warehouse_id}", "select"),
                            ("/warehouse/{warehouse_id}/namespace/{namespace_id}", "create"),
                            ("/warehouse/{warehouse_id}/table/{table_id}", "select"),
                            ("/warehouse/{warehouse_id}/view/{view_id}", "describe"),
                            ("/warehouse/{warehouse_id}/generic-table/{generic_table_id}", "modify")):
        base = f"/management/v1{path}/grants"
        answer(f"POST {base}", {204}, headers=project,
               body={"writes": [{"privilege": privilege, "principal": {"user": someone}}]})
        answer(f"GET {base}", {200}, headers=project, query={"principalUser": someone, "pageSize": "5"})
        answer(f"GET {base}/grantable-privileges", {200}, headers=project)
    answer("GET /management/v1/grants", {200}, headers=project, query={"principalUser": someone})
    answer("POST /management/v1/action/batch-check", {200}, headers=project, body={"checks": [
        {"id": "t", "operation": {"table": {"action": "read_data", "warehouse-id": objects["warehouse_id"],
                                            "table-id": objects["table_id"]}}},
        {"operation": {"namespace": {"action": "create_table", "warehouse-id": objects["warehouse_id"],
                                     "namespace": [NAMESPACE]}}, "identity": {"user": someone}}]})
    answer("POST /management/v1/permissions/check", {200}, body={"operation": {"table": {
        "action": "read_data", "table-id": objects["table_id"], "warehouse-id": objects["warehouse_id"]}}})
    answer("GET /management/v1/permissions/check", {200}, query={"type": "warehouse", "action": "use",
                                                               "id": objects["warehouse_id"]})
    answer("GET /management/v1/warehouse/{warehouse_id}/access-history", {200},
           query={"table": objects["table_id"], "at": "2030-01-01T00:00:00Z"})
    # governance tags (Lakekeeper 0.14): a definition, on every object kind and a column, then taken off again
    tag = "/management/v1/tag-definition"
    scope = ["warehouse", "namespace", "table", "view", "generic-table", "column"]
    defined = answer(f"POST {tag}", {201}, headers=project, body={
        "name": "fuzz.tier", "scope": scope, "value-kind": "enumerated", "allowed-values": ["gold"]}).json()
    by_id = {"headers": project, "tag_definition_id": defined["id"]}
    answer(f"GET {tag}", {200}, headers=project, query={"name": "tier", "pageSize": "5"})
    answer(f"GET {tag}/{{tag_definition_id}}", {200}, **by_id)
    answer(f"POST {tag}/{{tag_definition_id}}", {200}, **by_id, body={
        "name": "fuzz.tier", "scope": scope, "add-allowed-values": ["silver"]})
    tagged = [f"/management/v1{path}/tags" for path in (
        "/warehouse/{warehouse_id}", "/warehouse/{warehouse_id}/namespace/{namespace_id}",
        "/warehouse/{warehouse_id}/table/{table_id}", "/warehouse/{warehouse_id}/view/{view_id}",
        "/warehouse/{warehouse_id}/generic-table/{generic_table_id}")]
    for base in tagged:
        answer(f"PUT {base}/{{tag_name}}", {200}, headers=project, tag_name="fuzz.tier", body={"value": "gold"})
        answer(f"GET {base}", {200}, headers=project, query={"effective": "true"})
    column = "/management/v1/warehouse/{warehouse_id}/table/{table_id}/column/{column_name}/tags"
    answer(f"PUT {column}/{{tag_name}}", {200}, headers=project, column_name="id", tag_name="fuzz.tier",
           body={"value": "silver"})
    answer(f"GET {column}", {200}, headers=project, column_name="id")
    answer("GET /management/v1/warehouse/{warehouse_id}/table/{table_id}/column-tags", {200}, headers=project)
    answer(f"GET {tag}/{{tag_definition_id}}/attachments", {200}, **by_id, query={"pageSize": "3"})
    answer(f"GET {tag}/{{tag_definition_id}}/actions", {200}, **by_id)
    answer("POST /management/v1/permissions/tag/{tag_definition_id}/assignments", {204}, **by_id,
           body={"writes": [{"type": "apply", "user": someone}]})
    answer("GET /management/v1/permissions/tag/{tag_definition_id}/assignments", {200}, **by_id)
    # the same assignments through 0.14's grants API
    answer(f"POST {tag}/{{tag_definition_id}}/grants", {204}, **by_id,
           body={"writes": [{"privilege": "ownership", "principal": {"user": someone}}]})
    answer(f"GET {tag}/{{tag_definition_id}}/grants", {200}, **by_id, query={"principalUser": someone, "pageSize": "5"})
    answer(f"GET {tag}/{{tag_definition_id}}/grants/grantable-privileges", {200}, **by_id)
    answer(f"DELETE {column}/{{tag_name}}", {204}, headers=project, column_name="id", tag_name="fuzz.tier")
    for base in tagged:
        answer(f"DELETE {base}/{{tag_name}}", {204}, headers=project, tag_name="fuzz.tier")
    answer(f"DELETE {tag}/{{tag_definition_id}}", {204}, **by_id)
    answer("DELETE /management/v1/role/{role_id}", {204}, headers=project)
    answer("DELETE /management/v1/user/{user_id}", {204}, user_id=someone)

    # maintenance policies on a warehouse, a namespace and a table (not Lakekeeper's: held to our document only)
    for base in ("/management/v1/warehouse/{warehouse_id}", "/management/v1/warehouse/{warehouse_id}/namespace/"
                 "{namespace_id}", "/management/v1/warehouse/{warehouse_id}/table/{table_id}"):
        answer(f"PUT {base}/maintenance-policies/{{policy_type}}", {200}, policy_type="system.snapshot-expiry",
               body={"enabled": True, "max-snapshot-age": "P2D", "min-snapshots-to-keep": 3})
        answer(f"GET {base}/maintenance-policies", {200})
        answer(f"GET {base}/effective-maintenance-policies", {200})
        answer(f"DELETE {base}/maintenance-policies/{{policy_type}}", {204}, policy_type="system.snapshot-expiry")

    # object storage: an S3 warehouse on MinIO, its storage and credential replaced, and one request signed
    bucket = f"fuzz-{uuid.uuid4().hex[:8]}"
    minio.make_bucket(bucket)
    s3 = answer("POST /management/v1/warehouse", {201}, headers=project, body={
        "warehouse-name": bucket, "storage-profile": minio.profile(bucket, "wh"),
        "storage-credential": minio.credential()}).json()["warehouse-id"]
    answer(
        "POST /management/v1/warehouse/{warehouse_id}/storage",
        {200},
        warehouse_id=s3,
        body={
            "storage-profile": minio.profile(bucket, "wh", **{"sts-enabled": True}),
            "storage-credential": minio.credential(),
        },
    )
    answer("POST /management/v1/warehouse/{warehouse_id}/storage-credential", {200}, warehouse_id=s3,
           body={"new-storage-credential": minio.credential()})
    client.post(f"/catalog/v1/{s3}/namespaces", json={"namespace": ["ns"]})
    signing = client.post(f"/catalog/v1/{s3}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA},
                          headers={"X-Iceberg-Access-Delegation": "remote-signing"}).json()
    scope = signing["config"]["s3.signer.endpoint"].split("/")[1]
    answer("POST /catalog/signer/{scope}/v1/aws/s3/sign", {200}, scope=scope, body={
        "region": "us-east-1", "method": "GET", "headers": {},
        "uri": f"{minio.endpoint}/{bucket}/{signing['metadata-location'].split('/', 3)[3]}"})
    answer(f"POST {table}/sign", {200}, prefix=s3, namespace="ns", table="t", body={
        "region": "us-east-1", "method": "GET", "headers": {}, "provider": "s3",
        "uri": f"{minio.endpoint}/{bucket}/{signing['metadata-location'].split('/', 3)[3]}"})

    documented = {result.ok().label for result in schema.get_all_operations()}
    assert answered == documented, f"operations without a good request here: {sorted(documented - answered)}"
    # Lakekeeper answers its update 200 without a body; ours carries the user as replaced, which a client generated
    # from Lakekeeper's document does not read
    assert unlike_lakekeeper.pop("PUT /management/v1/user/{user_id} 200", [""])[0].startswith(
        "a body where the document has none")
    assert not unlike_lakekeeper, f"answers that Lakekeeper's document does not allow: {unlike_lakekeeper}"
    # every operation Lakekeeper's document has too was held to it (none missed for a path template mismatch)
    shared = {label for label in documented if lakekeeper_spec.operation(
        label.split(" ", 1)[0], re.sub(r"{\w+}", "00000000-0000-0000-0000-000000000001", label.split(" ", 1)[1]))}
    assert shared == lakekeepers, sorted(shared ^ lakekeepers)
    assert len(lakekeepers) >= 85, len(lakekeepers)
