"""The catalog's S3 signer: signs a request for an engine only when everything it touches lies inside the one
table its signer URL was issued for. The URL carries a sealed scope (warehouse, table, location; see
``scope_token``), so a signer request needs no lookup by name; a table that has since been dropped or moved,
or a staged table whose location another table now owns, gets nothing signed — except that a table dropped less
than an hour ago still gets its reads and deletes signed (not its writes), while no other table owns its location:
an engine that purges a table itself (Spark's DROP TABLE ... PURGE) drops it first, then reads its manifests and
deletes its files through the same signer URL. Vended credentials allow as much until they expire."""

import time
from collections.abc import Callable
from typing import Any
from uuid import UUID

from lakeledger.domain.errors import BadRequest, Forbidden
from lakeledger.domain.storage_credential import S3AccessKeyCredential
from lakeledger.domain.storage_profile import (
    S3StorageProfile,
    check_no_dot_segments,
    normalize_location,
    split_s3_location,
)
from lakeledger.domain.tabular import TABLE
from lakeledger.secretstore import SecretStore
from lakeledger.services import resolve
from lakeledger.services.unit_of_work import Ledger
from lakeledger.storage import Storages, s3_signer

STAGED_SCOPE_SECONDS = 24 * 3600  # a staged create's data is written, then committed, within a day
DROPPED_SCOPE_SECONDS = 3600  # an engine's own purge after its drop

TABLE_STATE = ("SELECT location, dropped_at, purged_at FROM ll_tabulars"
               " WHERE id = %(id)s AND warehouse_id = %(warehouse_id)s")


class RemoteSigning:
    def __init__(self, ledger: Ledger, storages: Storages, secrets: SecretStore,
                 clock: Callable[[], float] = time.time):
        self.ledger = ledger
        self.storages = storages
        self.secrets = secrets
        self._clock = clock

    def scope_token(self, warehouse_id: UUID, table_id: UUID, location: str, staged: bool, kind: str = TABLE) -> str:
        """``kind``: the tabular's (a generic table's grants are on its own object); a table's is left out, as in
        the URLs issued before generic tables."""
        scope: dict[str, str | int] = {"w": str(warehouse_id), "t": str(table_id), "l": normalize_location(location)}
        if kind != TABLE:
            scope["k"] = kind
        if staged:
            scope["x"] = int(self._clock()) + STAGED_SCOPE_SECONDS
        return self.secrets.seal(scope)

    def table_of(self, token: str) -> tuple[UUID, bool, str] | None:
        """(table id, whether the table was only staged when the URL was issued, its kind) of a signer URL's scope;
        None for a token this catalog did not seal."""
        scope = self.secrets.unseal(token)
        if scope is None:
            return None
        return UUID(scope["t"]), "x" in scope, str(scope.get("k", TABLE))

    def sign(self, token: str, region: str, method: str, uri: str, headers: dict[str, list[str]],
             body: str | None, may_write: bool = True) -> dict[str, Any]:
        """``may_write`` False (a caller who may only read the table's data): anything that writes is refused."""
        scope = self.secrets.unseal(token)
        if scope is None:
            raise Forbidden("This signer URL was not issued by this catalog")
        return self._sign(scope, region, method, uri, headers, body, may_write)

    def sign_for_table(self, warehouse_id: UUID, table_id: UUID, location: str, region: str, method: str, uri: str,
                       headers: dict[str, list[str]], body: str | None, may_write: bool = True) -> dict[str, Any]:
        """The same for Iceberg's per-table endpoint (``.../tables/{table}/sign``), whose path names the live table
        the caller was found allowed to see: its scope is that table's now."""
        scope = {"w": str(warehouse_id), "t": str(table_id), "l": normalize_location(location)}
        return self._sign(scope, region, method, uri, headers, body, may_write)

    def _sign(self, scope: dict[str, Any], region: str, method: str, uri: str, headers: dict[str, list[str]],
              body: str | None, may_write: bool) -> dict[str, Any]:
        wh = resolve.warehouse(self.ledger, scope["w"])
        profile = wh.profile()
        if not isinstance(profile, S3StorageProfile):
            raise Forbidden("The warehouse of this signer URL has no S3 storage")
        request = s3_signer.touched(profile, method.upper(), uri, body)
        if request.changes and not may_write:
            raise Forbidden("Signing refused: the caller may read this table's data but not write or delete it "
                            "(can_write_data)")
        location = self._current_location(wh.id, UUID(scope["t"]), scope, request.writes)
        if request.bucket != profile.bucket:
            raise Forbidden(f"Signing refused: bucket {request.bucket} is not the warehouse's bucket")
        table_key = split_s3_location(location)[1]
        for key in request.keys:
            if not _inside(key, table_key, request.listing):
                raise Forbidden(f"Signing refused: s3://{request.bucket}/{key} is outside the table's location "
                                f"{location}")
        source = s3_signer.copy_source(headers)
        if source is not None and (source[0] != profile.bucket or not _inside(source[1], table_key, False)):
            raise Forbidden(f"Signing refused: the copy source s3://{source[0]}/{source[1]} is outside the table's "
                            f"location {location}")
        if region and region != profile.region:
            raise BadRequest(f"The request is for region {region}; the warehouse's storage is in {profile.region}")
        credential = self.storages.credential(wh)
        assert isinstance(credential, S3AccessKeyCredential)  # an S3 warehouse's only kind (parse_storage_credential)
        signed = s3_signer.sign(credential, profile.region, method.upper(), uri, headers)
        return {"uri": uri, "headers": signed}

    def _current_location(self, warehouse_id: UUID, table_id: UUID, scope: dict[str, Any], writes: bool) -> str:
        with self.ledger.queries.pool.connection() as conn:
            row = conn.execute(TABLE_STATE, {"id": table_id, "warehouse_id": warehouse_id}).fetchone()
        if row is not None and row[0] != scope["l"]:
            raise Forbidden("The table of this signer URL has moved: load it again")
        if row is not None and row[1] is None:
            current: str = row[0]
            return current
        if row is not None:
            if writes or row[2] is not None or row[1].timestamp() + DROPPED_SCOPE_SECONDS < self._clock():
                raise Forbidden("The table of this signer URL no longer exists")
        elif "x" not in scope:
            raise Forbidden("The table of this signer URL no longer exists")
        elif scope["x"] < self._clock():
            raise Forbidden("This signer URL for a staged table has expired: stage it again")
        other = self.ledger.queries.overlapping_tabular(warehouse_id, scope["l"], table_id)
        if other is not None:
            raise Forbidden(f"The table's location is now owned by another table: {other}")
        sealed: str = scope["l"]
        return sealed


def _inside(key: str, table_key: str, listing: bool) -> bool:
    """Whether an S3 key (or a listing's prefix) lies in the table whose location has the key ``table_key``,
    compared as the store compares keys: character for character, no wildcard, no normalisation. A listing's prefix
    must end below the table (the prefix ``wh/t1`` would list ``wh/t10/...``); a key with a ``.`` or ``..`` segment
    is refused, since an HTTP stack on the way may resolve it to another key than the one checked."""
    if not key or not (key.startswith(table_key + "/") or (key == table_key and not listing)):
        return False
    try:
        check_no_dot_segments(key)
    except BadRequest:
        return False
    return True
