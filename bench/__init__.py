"""Lakeledger benchmark: ``make bench`` (or ``.venv/bin/python -m bench``).

One run starts an embedded Postgres (pgserver) and a real ``lakeledger serve`` in a temporary
directory, builds a table with 100 snapshots, and measures on loopback:

1. loadTable of that table with 16 keep-alive connections (wrk when installed, else a
   multi-process asyncio client);
2. the same load against a bare FastAPI/uvicorn process serving the very same response bytes,
   and the Lakeledger/bare ratio;
3. commits (add-snapshot + set-snapshot-ref main) from 16 clients over 50 tables;
4. then S3, soft deletion and publication lag, and last the authorization section (bench/auth.py): loadTable, 304
   and commits with OIDC + OpenFGA against neither, on the same tables (``--only auth`` runs it alone,
   ``--skip-auth`` leaves it out).

Everything is torn down at the end. See ``python -m bench --help`` for the knobs.
"""
