"""Finding tables and views in a warehouse of any size by the start of their name (the console's search box) and by
the governance tags they carry: live ones only, any case, in name order, paged like every list, and only those the
caller may see."""

from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter, Depends, Query

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
NO_NAME = "\U0010ffff"  # past every name: no name holds it


@router.get("/warehouse/{warehouse_id}/search-tabulars",
            responses={**ok(SearchTabularsResponse, "The tables and views found"), **errors(400, 404)},
            summary="Live tables and views whose name starts with `prefix` (any case) and that carry every `tag`, "
                    "in name order")
async def search_tabulars(container: ContainerDep, warehouse_id: str,
                          prefix: str | None = Query(default=None, min_length=1, max_length=MAX_PREFIX),
                          tag: list[str] | None = Query(default=None, description="A governance tag's name (any "
                                                        "case) the table, view or generic table carries itself; "
                                                        "repeated: every one of them"),
                          paging: Page = Depends(always_paged), az: Guard = Depends(guard)):
    await authorize_warehouse(az, warehouse_id, "can_list_namespaces")
    row = await warehouse_row(container, warehouse_id)
    if prefix is None and not tag:
        raise BadRequest("Search by a name prefix, a tag, or both")
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
