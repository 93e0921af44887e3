"""The API's OpenAPI page, served with no internet: Swagger UI's script and style come from an
installed Python package (``fastapi-offline``'s copy of Swagger UI 5, which renders OpenAPI 3.1),
not from a CDN.

``install(app)`` replaces FastAPI's own ``/docs`` and ``/redoc`` (whose pages load Swagger UI,
ReDoc and a favicon from jsdelivr and fastapi.tiangolo.com) by ``/docs``, its OAuth2 redirect
page and ``/docs/assets/{file}``: three files of the package, nothing else. Swagger UI's
validator badge (a request to validator.swagger.io) is off. The pages are public — they carry
no data, only the description ``/openapi.json`` already gives — so they are Starlette routes,
outside the app's dependencies (``routeplan.api.auth``). Behind a mount (Airflow's
``/routeplan``) every URL in the page carries the mount's ``root_path``.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Route

__all__ = ["ASSETS", "assets_dir", "install"]

ASSETS = {  # the files the page loads, by the name it asks for
    "swagger-ui-bundle.js": "application/javascript",
    "swagger-ui.css": "text/css",
    "favicon.png": "image/png",
}
DOCS = "/docs"
FASTAPI_PAGES = ("/docs", "/docs/oauth2-redirect", "/redoc")


def assets_dir() -> Path:
    """The installed package's folder of Swagger UI's files (ImportError naming the package to
    install when it is missing)."""
    try:
        import fastapi_offline
    except ImportError as err:  # pragma: no cover - a dependency of the api extra
        raise ImportError(
            "the API's offline docs need fastapi-offline: pip install 'routeplan[api]'"
        ) from err
    return Path(fastapi_offline.__file__).parent / "static"


def install(app: FastAPI) -> None:
    """Serve ``/docs`` from the installed assets instead of FastAPI's CDN pages."""
    folder = assets_dir()
    missing = [name for name in ASSETS if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(f"Swagger UI assets missing from {folder}: {', '.join(missing)}")
    app.router.routes[:] = [
        r for r in app.router.routes if getattr(r, "path", None) not in FASTAPI_PAGES
    ]
    app.docs_url = app.redoc_url = None
    redirect = f"{DOCS}/oauth2-redirect"
    openapi_url = app.openapi_url or "/openapi.json"

    async def page(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "").rstrip("/")
        assets = f"{root}{DOCS}/assets"
        return get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=f"{root}{redirect}",
            swagger_js_url=f"{assets}/swagger-ui-bundle.js",
            swagger_css_url=f"{assets}/swagger-ui.css",
            swagger_favicon_url=f"{assets}/favicon.png",
            swagger_ui_parameters={**(app.swagger_ui_parameters or {}), "validatorUrl": None},
        )

    async def oauth2_redirect(request: Request) -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS:  # only the listed files: no path from the URL reaches the disk
            return Response("not found", status_code=404, media_type="text/plain")
        return FileResponse(
            folder / name,
            media_type=ASSETS[name],
            headers={"Cache-Control": "public, max-age=86400"},
        )

    app.router.routes.extend(
        [
            Route(DOCS, page, methods=["GET"], include_in_schema=False),
            Route(redirect, oauth2_redirect, methods=["GET"], include_in_schema=False),
            Route(f"{DOCS}/assets/{{name}}", asset, methods=["GET"], include_in_schema=False),
        ]
    )
