"""The translation page's routes: its three files and its settings.

The page (`page/index.html`, `page.js`, `page.css`, shipped in the
package) is plain HTML, CSS and JavaScript with no build step. It asks the
server's own predict API and nothing else: the Content-Security-Policy
lets it reach only the server it came from. Its files are read once, when
the application is made; no request names a file.
"""

import json
from importlib import resources

from starlette.responses import Response
from starlette.routing import Route

# URL path -> (file in page/, media type)
_FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/page/page.js": ("page.js", "text/javascript; charset=utf-8"),
    "/page/page.css": ("page.css", "text/css; charset=utf-8"),
}
_POLICY = (
    "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'"
)


def page_routes(model):
    """The page's routes for `model` (a `ServedModel`)."""
    folder = resources.files("keras_transformer.serving").joinpath("page")
    routes = [
        _constant(path, folder.joinpath(name).read_bytes(), media_type)
        for path, (name, media_type) in _FILES.items()
    ]
    settings = {
        "model": model.name,
        "version": model.version,
        "beam_size": model.decoding["beam_size"],
        "alpha": model.decoding["alpha"],
    }
    routes.append(
        _constant(
            "/page/settings.json", json.dumps(settings).encode(), "application/json"
        )
    )
    return routes


def _constant(path, body, media_type):
    """A GET route answering `body`, the same each time."""

    async def answer(request):
        headers = {"Content-Security-Policy": _POLICY, "Cache-Control": "no-cache"}
        return Response(body, media_type=media_type, headers=headers)

    return Route(path, answer, methods=["GET"])
