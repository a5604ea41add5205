"""Google's token endpoints for tests of GCS warehouses on fake-gcs-server, which has none: a service account's
access token (its signed JWT checked with the key's public half, as Google does) and the STS token exchange,
recording the Credential Access Boundary each exchange asked for. Shared by test_gcs.py and test_console.py."""

import json
import threading
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
from cryptography.hazmat.primitives import serialization

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


class TokenEndpoints:
    """Google's OAuth2 token endpoint (POST /token: a service account's signed JWT for an access token) and STS
    (POST /v1/token: an access token for a downscoped one), on a free loopback port, in this process."""

    def __init__(self, public_key, client_email: str):
        self.issued: set[str] = set()  # access tokens handed to the service account
        self.exchanges: list[dict] = []  # every token exchange: the subject token, the boundary, the answer
        endpoints = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                form = dict(urllib.parse.parse_qsl(self.rfile.read(int(self.headers["Content-Length"])).decode()))
                status, body = endpoints.answer(self.path, form)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.public_key, self.client_email = public_key, client_email
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, path: str, form: dict[str, str]) -> tuple[int, dict]:
        if path == "/token" and form.get("grant_type") == JWT_BEARER:
            try:
                # google-auth addresses the JWT to Google's token endpoint, wherever the key's token_uri points
                claims = jwt.decode(form["assertion"], self.public_key, algorithms=["RS256"],
                                    audience="https://oauth2.googleapis.com/token")
            except jwt.PyJWTError as e:
                return 400, {"error": "invalid_grant", "error_description": str(e)}
            if claims.get("iss") != self.client_email:
                return 400, {"error": "invalid_grant", "error_description": "unknown service account"}
            token = f"source-{uuid.uuid4().hex}"
            self.issued.add(token)
            return 200, {"access_token": token, "expires_in": 3600, "token_type": "Bearer"}
        if path == "/v1/token" and form.get("grant_type") == TOKEN_EXCHANGE:
            if form.get("subject_token") not in self.issued:
                return 401, {"error": "invalid_grant", "error_description": "subject token not issued here"}
            token = f"downscoped-{uuid.uuid4().hex}"
            self.exchanges.append({"form": form, "options": json.loads(urllib.parse.unquote(form["options"])),
                                   "token": token})
            return 200, {"access_token": token, "expires_in": 3600, "token_type": "Bearer",
                         "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}
        return 404, {"error": "not_found"}

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


def service_account_key(private_key, endpoints: TokenEndpoints) -> dict:
    """A service account's JSON key, as Google's console hands it out, whose token endpoint is ``endpoints``."""
    pem = private_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()).decode()
    return {"type": "service_account", "project_id": "lakeledger-tests", "private_key_id": uuid.uuid4().hex,
            "private_key": pem, "client_email": endpoints.client_email, "client_id": "123456789012345678901",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": f"{endpoints.url}/token",
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/lakeledger",
            "universe_domain": "googleapis.com"}
