"""The reference server: a bare FastAPI app that answers loadTable's URL with fixed bytes.

Run as ``python -m bench.bare_server BODY_FILE HOST PORT``. It uses the same uvicorn settings as
``lakeledger serve`` (default loop and http implementations, one process, access log off), so the
ratio Lakeledger/bare measures what the catalog adds on top of the framework."""

import sys
from pathlib import Path

import uvicorn
from fastapi import FastAPI, Response


def create_app(body: bytes) -> FastAPI:
    app = FastAPI()

    @app.get("/catalog/v1/{prefix}/namespaces/{namespace}/tables/{table}")
    async def load_table(prefix: str, namespace: str, table: str):
        return Response(body, media_type="application/json")

    @app.get("/health")
    async def health():
        return Response(b'{"status":"ok"}', media_type="application/json")

    return app


def main(argv: list[str]) -> None:
    body_file, host, port = argv
    uvicorn.run(create_app(Path(body_file).read_bytes()), host=host, port=int(port), log_level="warning",
                access_log=False)


if __name__ == "__main__":
    main(sys.argv[1:])
