"""The session policy that confines vended S3 credentials to one table's location, and which locations such a
policy can name exactly.

In an IAM policy, ``*`` and ``?`` in a ``Resource`` or a ``StringLike`` condition are wildcards and ``${...}`` is
a policy variable. A key prefix copied into a policy as it is spelt therefore names more than the table: a table
at ``.../x/*`` would be given every key below ``.../x/``. AWS has escapes for these three characters (``${*}``,
``${?}``, ``${$}``); MinIO has none (its matcher treats every ``*`` and ``?`` as a wildcard and substitutes
``${aws:username}`` and the like), and other S3-compatible stores may have either behaviour. So the policy is
rendered per storage flavor, and a key whose policy cannot be exact on that flavor is refused, as a location,
before anything is recorded.

``${`` is refused on every flavor: AWS could escape it, but a warehouse whose flavor says ``aws`` while its store
is in fact MinIO would then receive a policy naming ``${*}`` literally; with no location containing ``${`` such a
policy matches nothing at all rather than another table (a wrong flavor fails closed).
"""

import json

from lakeledger.domain.errors import BadRequest

# AWS STS (and MinIO) refuse a session policy longer than this (MinIO counts the bytes of its own re-encoding)
MAX_SESSION_POLICY_CHARS = 2048

_AWS_ESCAPES = {"*": "${*}", "?": "${?}", "$": "${$}"}
# characters with a meaning in a policy that the flavor cannot escape
_UNESCAPABLE = {"aws": "", "minio": "*?", "s3-compat": "*?$"}
# Go's encoder (MinIO re-encodes the policy before measuring it) writes these as \u003c, \u003e, \u0026
_GO_ESCAPED = "<>&"


def iam_literal(text: str, flavor: str) -> str:
    """``text`` (an S3 key or key prefix) spelt so that a policy on ``flavor`` matches exactly it; BadRequest if
    no spelling does."""
    if "${" in text:
        raise BadRequest(f"Location key {text!r} contains '${{', an IAM policy variable: credentials for it could "
                         "not be confined to it")
    special = sorted({c for c in text if c in _UNESCAPABLE[flavor]})
    if special:
        raise BadRequest(f"Location key {text!r} contains {' '.join(repr(c) for c in special)}, an IAM wildcard "
                         f"that storage of flavor {flavor} cannot escape: credentials for it would reach other "
                         "tables")
    if flavor == "aws":
        return "".join(_AWS_ESCAPES.get(c, c) for c in text)
    return text


def table_policy(bucket: str, key_prefix: str, write: bool, flavor: str, kms_key_arn: str | None = None) -> str:
    """The session policy for everything at or below ``key_prefix`` (a table's location) in ``bucket`` and nothing
    else; BadRequest if ``key_prefix`` cannot be named exactly on ``flavor`` or the policy would be too long."""
    prefix = iam_literal(key_prefix.rstrip("/"), flavor)
    objects = ["s3:GetObject", "s3:GetObjectVersion"]
    if write:
        objects += ["s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"]
    policy = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": objects, "Resource": [f"arn:aws:s3:::{bucket}/{prefix}/*"]},
        {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [f"arn:aws:s3:::{bucket}"],
         # not the bare prefix: listing "wh/t1" would name the objects of a neighbour at "wh/t10"
         "Condition": {"StringLike": {"s3:prefix": [f"{prefix}/*"]}}},
        {"Effect": "Allow", "Action": ["s3:GetBucketLocation"], "Resource": [f"arn:aws:s3:::{bucket}"]},
        # objects encrypted with the warehouse's KMS key are read and written only with the key's use allowed
        *([{"Effect": "Allow", "Action": ["kms:Decrypt", "kms:GenerateDataKey"], "Resource": [kms_key_arn]}]
          if kms_key_arn else []),
    ]}, separators=(",", ":"))
    # non-ASCII is written as \uXXXX: never shorter than its UTF-8 bytes, so this bounds both AWS's and MinIO's count
    size = len(policy) + 5 * sum(policy.count(c) for c in _GO_ESCAPED)
    if size > MAX_SESSION_POLICY_CHARS:
        raise BadRequest(f"Location key {key_prefix[:100]!r}... is too long for a session policy confining "
                         f"credentials to it ({size} characters; STS takes at most {MAX_SESSION_POLICY_CHARS})")
    return policy
