"""Which operations of Lakekeeper's management OpenAPI document a Lakeledger server serves, by its /openapi.json.

    python scripts/lakekeeper_operations.py http://localhost:8181/openapi.json   # or a saved openapi.json
    python scripts/lakekeeper_operations.py URL --missing                          # and list the missing ones

An operation is a method and a path; path parameters match whatever their names (``{warehouse_id}`` and ``{id}``)."""

import argparse
import json
import re
import sys
import urllib.request
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "conformance/specs/lakekeeper-management-open-api-90892e9.yaml"
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


def operations(document: dict) -> set[tuple[str, str]]:
    return {(method.upper(), re.sub(r"\{[^}]*\}", "{}", path))
            for path, item in document.get("paths", {}).items() for method in item if method in METHODS}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("openapi", help="URL or file of the server's /openapi.json")
    parser.add_argument("--spec", type=Path, default=SPEC)
    parser.add_argument("--missing", action="store_true", help="list the operations not served")
    args = parser.parse_args()
    if args.openapi.startswith(("http://", "https://")):
        with urllib.request.urlopen(args.openapi) as answer:  # noqa: S310 (a URL the caller names)
            ours = json.load(answer)
    else:
        ours = json.loads(Path(args.openapi).read_text())
    theirs = operations(yaml.safe_load(args.spec.read_text()))
    served = theirs & operations(ours)
    print(f"{len(served)} of {len(theirs)} operations of {args.spec.name} are served")
    if args.missing:
        for method, path in sorted(theirs - served, key=lambda op: (op[1], op[0])):
            print(f"  missing: {method} {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
