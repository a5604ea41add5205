"""What a failed purge attempt records (lakeledger/workers/purger.py ``bounded_error``): the exception's type and
message, a URL's query string (a presigned URL's signature) cut, at most 500 characters."""

from lakeledger.workers.purger import MAX_ERROR_CHARS, bounded_error


def test_a_presigned_urls_signature_is_cut_and_the_error_is_bounded():
    error = bounded_error(ConnectionError(
        "GET https://bucket.s3.amazonaws.com/t/data/f.parquet?X-Amz-Signature=abc123&X-Amz-Credential=AKIA failed"))
    assert error == "ConnectionError: GET https://bucket.s3.amazonaws.com/t/data/f.parquet?… failed"
    long = bounded_error(OSError("x" * 5000))
    assert len(long) == MAX_ERROR_CHARS and long.startswith("OSError: xxx") and long.endswith("…")
