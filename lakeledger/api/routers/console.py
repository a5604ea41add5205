"""The web console at ``/ui`` (lakeledger/console/): its page, its script and style, and what the script needs to know
about this server. Open without a token like any static file; everything the console shows comes from API calls the
browser makes with the user's own credentials."""

from fastapi import APIRouter
from starlette.responses import FileResponse, RedirectResponse

from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.responses import JSONResponse
from lakeledger.console import STATIC

router = APIRouter(prefix="/ui", include_in_schema=False)

_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html"}


@router.get("")
async def console_page():
    return FileResponse(STATIC / "index.html", media_type="text/html", headers={"cache-control": "no-cache"})


@router.get("/")
async def console_page_slash():
    return RedirectResponse("/ui", status_code=308)


@router.get("/config.json")
async def console_config(container: ContainerDep):
    """What the console needs to sign people in: nothing when authentication is off."""
    settings = container.settings
    if settings.openid_provider_uri is None:
        return JSONResponse({"authentication": False})
    ui = settings.ui
    return JSONResponse({"authentication": True,
                         "openid-provider-uri": ui.openid_provider_uri or settings.openid_provider_uri,
                         "client-id": ui.openid_client_id, "scope": ui.openid_scope, "resource": ui.openid_resource})


@router.get("/static/{name}")
async def console_file(name: str):
    path = STATIC / name
    # the folder's own files only: no subfolders, no way out of it
    if "/" in name or name.startswith(".") or not path.is_file() or path.suffix not in _TYPES:
        return JSONResponse({"error": {"message": f"No console file {name}", "type": "NotFoundException",
                                       "code": 404}}, status_code=404)
    return FileResponse(path, media_type=_TYPES[path.suffix], headers={"cache-control": "no-cache"})
