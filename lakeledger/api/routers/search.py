"""Finding tables and views in a warehouse of any size by the start of their name (the console's search box) and by
the governance tags they carry: live ones only, any case, in name order, paged like every list, and only those the
caller may see."""

from collections.abc import Sequence
from typing import Any, Literal
from uuid import UUID

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field

from lakeledger.api import authorization
from lakeledger.api.authorization import Guard, fetch_visible, guard
from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.openapi import SearchTabularsResponse, errors, ok
from lakeledger.api.pagination import Page, always_paged, is_keyed_by_id
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.management import authorize_warehouse, warehouse_row
from lakeledger.domain.errors import BadRequest
from lakeledger.projections.catalog_queries import NamedTabular, name_prefix_range

router = APIRouter(prefix="/management/v1", tags=["Management API"])

MAX_PREFIX = 255
SEARCH_LENGTH = 64  # Lakekeeper's search-tabular truncates its search string to 64 characters
NO_NAME = "\U0010ffff"  # past every name: no name holds it


@router.get("/warehouse/{warehouse_id}/search-tabulars",
            responses={**ok(SearchTabularsResponse, "The tables and views found"), **errors(400, 404)},
            summary="Live tables and views whose name starts with `prefix` (any case) and that carry every `tag`, "
                    "in name order")
async def search_tabulars(container: ContainerDep, warehouse_id: str,
                          prefix: str | None = Query(default=None, description=f"1 to {MAX_PREFIX} characters"),
                          tag: list[str] | None = Query(default=None, description="A governance tag's name (any "
                                                            "case) the table, view or generic table carries itself; "
                                                            "repeated: every one of them"),
                          paging: Page = Depends(always_paged), az: Guard = Depends(guard)):
    await authorize_warehouse(az, warehouse_id, "can_list_namespaces")
    row = await warehouse_row(container, warehouse_id)
    # checked here rather than in the schema, so that fuzzing sees free-text query parameters (tests/fuzzing.py)
    if prefix is None and not tag:
        raise BadRequest("Search by a name prefix, a tag, or both")
    if prefix is not None and not 1 <= len(prefix) <= MAX_PREFIX:
        raise BadRequest(f"A prefix is 1 to {MAX_PREFIX} characters")
    if tag and not all(tag):
        raise BadRequest("A tag name is not empty")
    if prefix is not None and ("\x00" in prefix or "\U0010ffff" in prefix):
        raise BadRequest("prefix holds a character no name can (NUL or U+10FFFF)")
    low, high = name_prefix_range(prefix) if prefix is not None else ("", NO_NAME)
    tagged = await container.tag_queries.tabulars_tagged(row.id, tag) if tag else None

    async def rows(after: Any, limit: int | None) -> list[NamedTabular]:
        return await container.queries.tabulars_by_name_prefix(row.id, low, high,
                                                               (after[0], after[1]) if after else None, limit,
                                                               tagged)

    async def objects(found: Sequence[NamedTabular]) -> list[str | None]:
        return [authorization.tabular(r.typ, r.id) for r in found]

    found, next_token = await fetch_visible(az, paging, rows, is_keyed_by_id, lambda r: [r.key, str(r.id)],
                                            objects, "can_include_in_list")
    return JSONResponse({"tabulars": [{"id": str(r.id), "type": r.typ, "namespace": r.namespace, "name": r.name}
                                      for r in found], "next-page-token": next_token})


class SearchTabularRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    search: str = Field(description="A tabular's or a namespace's id, or a part of `namespace.name` (any case); "
                                    "only its first 64 characters count")
    tags: list[str] | None = Field(default=None, description="Lakeledger's addition: only tabulars that carry "
                                                            "every one of these governance tags (any case)")


class TabularIdent(BaseModel):
    type: Literal["table", "view", "generic-table"]
    id: UUID


class SearchTabular(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    namespace_name: list[str] = Field(alias="namespace-name")
    tabular_name: str = Field(alias="tabular-name")
    tabular_id: TabularIdent = Field(alias="tabular-id")
    distance: float | None = Field(description="Lower is better; null for a match by id")


class SearchTabularResponse(BaseModel):
    tabulars: list[SearchTabular]


@router.post("/warehouse/{warehouse_id}/search-tabular",
             responses={**ok(SearchTabularResponse, "Up to 10 live tabulars, best match first"), **errors(400, 404)})
async def search_tabular(container: ContainerDep, warehouse_id: str, body: SearchTabularRequest,
                         az: Guard = Depends(guard)):
    """Lakekeeper's search: the tabular whose id the search string is, or the tabulars of the namespace whose id it
    is; else names equal to it, starting with it, or holding it in `namespace.name`, in that order (a rank, not
    Lakekeeper's trigram distance)."""
    await authorize_warehouse(az, warehouse_id, "can_list_namespaces")
    row = await warehouse_row(container, warehouse_id)
    term = body.search[:SEARCH_LENGTH]
    if "\x00" in term or (body.tags and any("\x00" in t for t in body.tags)):
        return JSONResponse({"tabulars": []})  # nothing stored holds NUL
    tagged = await container.tag_queries.tabulars_tagged(row.id, body.tags) if body.tags else None
    found = await container.queries.search_tabulars(row.id, term, tagged)
    seen = await az.visible([authorization.tabular(r.typ, r.id) for r in found], "can_include_in_list")
    return JSONResponse({"tabulars": [
        {"namespace-name": r.namespace, "tabular-name": r.name, "tabular-id": {"type": r.typ, "id": str(r.id)},
         "distance": None if r.rank == 0 else r.rank / 4} for r, yes in zip(found, seen, strict=True) if yes]})
