"""Lakekeeper's dry runs: POST /management/v1/warehouse-creation-validation and
/management/v1/warehouse/{id}/storage/validate-profile|validate-credential|validate-access answer 200 with each check
passed, failed or skipped, run the create's connection test against real MinIO, and record nothing."""

import uuid

from lakekeeper_spec import check

ORDER = ["profile-well-formed", "profile-compatible", "spec-mutable", "format-version-policy-consistent",
         "managed-by-allowed", "warehouse-name-valid", "location-exclusive", "storage-client-initialized",
         "lakekeeper-read-write", "vended-credentials-issued", "vended-credentials-read-write",
         "vended-credentials-scope-enforced", "cleanup"]


def _validate(client, path: str, body: dict | None = None) -> dict:
    r = client.post(f"/management/v1/{path}", json=body)
    assert r.status_code == 200, r.text
    return check(r)


def _status(report: dict) -> dict[str, str]:
    return {c["name"]: c["status"] for c in report["checks"]}


def test_a_creation_that_would_work_is_valid_and_creates_nothing(client, minio, bucket, log_length):
    before = log_length()
    name = f"dry-{uuid.uuid4().hex[:8]}"
    report = _validate(client, "warehouse-creation-validation", {
        "warehouse-name": name, "storage-profile": minio.profile(bucket, name),
        "storage-credential": minio.credential()})
    assert report["valid"] is True
    assert [c["name"] for c in report["checks"]] == ORDER  # every check, in Lakekeeper's order
    statuses = _status(report)
    assert {statuses[n] for n in ("profile-well-formed", "warehouse-name-valid", "location-exclusive",
                                  "lakekeeper-read-write")} == {"passed"}
    assert all(c["reason"] for c in report["checks"] if c["status"] == "skipped")
    assert log_length() == before
    names = [w["name"] for w in client.get("/management/v1/warehouse").json()["warehouses"]]
    assert name not in names


def test_a_creation_that_would_fail_says_which_checks_fail(client, minio, bucket, s3_warehouse, log_length):
    before = log_length()
    wrong = {**minio.credential(), "aws-secret-access-key": "not-the-secret"}
    report = _validate(client, "warehouse-creation-validation", {
        "warehouse-name": s3_warehouse["name"], "storage-profile": minio.profile(bucket, s3_warehouse["key-prefix"]),
        "storage-credential": wrong})
    assert report["valid"] is False
    statuses = _status(report)
    assert statuses["warehouse-name-valid"] == "failed"  # taken
    assert statuses["location-exclusive"] == "failed"  # the same key prefix
    failed = next(c for c in report["checks"] if c["name"] == "lakekeeper-read-write")
    assert failed["status"] == "failed" and failed["error"]["code"] == 400
    assert "secret access key" in failed["error"]["message"] and "not-the-secret" not in failed["error"]["message"]
    # a malformed profile: the storage probe is skipped for it
    report = _validate(client, "warehouse-creation-validation", {
        "warehouse-name": "x", "storage-profile": {"type": "s3"}})
    assert _status(report)["profile-well-formed"] == "failed"
    assert _status(report)["lakekeeper-read-write"] == "skipped"
    assert log_length() == before


def test_storage_changes_are_validated_without_being_made(client, minio, bucket, s3_warehouse, log_length):
    w = s3_warehouse["id"]
    before = log_length()
    report = _validate(client, f"warehouse/{w}/storage/validate-access")
    assert report["valid"] is True and _status(report)["lakekeeper-read-write"] == "passed"

    report = _validate(client, f"warehouse/{w}/storage/validate-credential",
                       {"new-storage-credential": {**minio.credential(), "aws-secret-access-key": "wrong"}})
    assert report["valid"] is False and _status(report)["lakekeeper-read-write"] == "failed"
    report = _validate(client, f"warehouse/{w}/storage/validate-credential",
                       {"new-storage-credential": minio.credential()})
    assert report["valid"] is True

    moved = minio.profile(bucket, s3_warehouse["key-prefix"] + "-elsewhere")
    report = _validate(client, f"warehouse/{w}/storage/validate-profile",
                       {"storage-profile": moved, "storage-credential": minio.credential()})
    assert _status(report)["profile-compatible"] == "failed" and report["valid"] is False
    same = minio.profile(bucket, s3_warehouse["key-prefix"], **{"sts-enabled": False})
    report = _validate(client, f"warehouse/{w}/storage/validate-profile",
                       {"storage-profile": same, "storage-credential": minio.credential()})
    assert report["valid"] is True, report
    assert _status(report)["spec-mutable"] == "passed"
    assert log_length() == before
    # nothing changed: the warehouse still vends (sts-enabled stays)
    assert client.get(f"/management/v1/warehouse/{w}").json()["storage-profile"]["sts-enabled"] is True


def test_validation_refuses_what_a_change_would_refuse(client, warehouse):
    missing = "00000000-0000-0000-0000-00000000abcd"
    r = client.post(f"/management/v1/warehouse/{missing}/storage/validate-access")
    assert r.status_code == 404, r.text
    check(r)
    r = client.post(f"/management/v1/warehouse/{warehouse['id']}/storage/validate-credential",
                    json={"new-storage-credential": None, "misspelt": 1})
    assert r.status_code == 400, r.text
    r = client.post("/management/v1/warehouse-creation-validation",
                    headers={"x-project-id": str(uuid.uuid4())},
                    json={"warehouse-name": "x", "storage-profile": {"type": "file", "location": "file:///tmp/x"}})
    assert r.status_code == 404, r.text
    # a file warehouse takes no credential: rotating one is a failed check, not an error
    report = _validate(client, f"warehouse/{warehouse['id']}/storage/validate-credential",
                       {"new-storage-credential": None})
    assert _status(report)["profile-well-formed"] == "failed"
    report = _validate(client, f"warehouse/{warehouse['id']}/storage/validate-access")
    assert report["valid"] is True
