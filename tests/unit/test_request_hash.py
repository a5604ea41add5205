"""What binds an Idempotency-Key to its request (lakeledger/domain/idempotency.py)."""

from lakeledger.domain.idempotency import IdempotencyKey, request_hash, same_request

BASE = ("POST", "/catalog/v1/wh/namespaces", b"", b'{"namespace":["a"]}')


def test_each_part_of_a_request_changes_its_hash():
    others = [("PUT", *BASE[1:]), (BASE[0], "/catalog/v1/wh/namespaces/x", *BASE[2:]),
              (*BASE[:2], b"purgeRequested=true", BASE[3]), (*BASE[:3], b'{"namespace":["b"]}')]
    assert len({request_hash(*BASE), *(request_hash(*o) for o in others)}) == 5
    assert request_hash(*BASE) == request_hash(*BASE)


def test_parts_cannot_slide_into_each_other():
    assert request_hash("POST", "/a", b"b", b"") != request_hash("POST", "/ab", b"", b"")
    assert request_hash("POST", "/a", b"", b"b") != request_hash("POST", "/a", b"b", b"")


def test_a_key_recorded_before_requests_were_hashed_is_bound_to_its_method_and_path():
    state = {"key": "k", "method": "POST", "path": "/p"}
    IdempotencyKey.Used.upcast_v1_v2(state)
    assert state["request_hash"] is None
    assert same_request("POST", "/p", None, "POST", "/p", "anything")
    assert not same_request("POST", "/p", None, "DELETE", "/p", "anything")
    assert not same_request("POST", "/p", "h1", "POST", "/p", "h2")
