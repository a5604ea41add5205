"""What a `serve` with its defaults imports: not the libraries only an optional feature needs (PyJWT and cryptography
for OpenID tokens and stored secrets, httpx with its command line's rich and click for OpenID discovery and the
change-approval hook), about 13 MB of its memory (CHANGELOG 2026-11-28). Checked in a fresh interpreter, as `serve`
imports its modules, and again with the features on, so that the check cannot pass by looking at nothing."""

import json
import subprocess
import sys

OPTIONAL = ("jwt", "cryptography", "httpx", "rich", "pygments")

# the modules `lakeledger serve` imports before it answers (lakeledger/cli.py's _serve), then what a configured
# provider, hook and key bring in
PROBE = """
import json, sys
import lakeledger.cli, lakeledger.bootstrap, lakeledger.http_server, lakeledger.api_processes, lakeledger.postgres
from lakeledger.api.app import create_app
if sys.argv[1] == "features":
    import lakeledger.identity.oidc, lakeledger.services.http_approval
    from lakeledger.secretstore.cipher import SecretCipher
    SecretCipher("a-key-of-sixteen-characters")
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def _imported(mode: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, timeout=120, check=True)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_serve_with_defaults_imports_no_optional_library():
    imported = _imported("defaults")
    assert "fastapi" in imported and "pyiceberg" in imported  # it did import the server
    assert imported.isdisjoint(OPTIONAL), sorted(imported & set(OPTIONAL))


def test_the_features_that_need_them_import_them():
    assert set(OPTIONAL) <= _imported("features")
