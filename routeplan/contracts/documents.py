"""Reading routing-table JSON with bounds: every reader (store, HTTP API, client) parses here.

The bounds and the parser are ``routeplan_client.documents``' (the client every producer
installs): at most ``max_bytes`` (256 MiB by default) and at most ``max_depth`` nested arrays and
objects (64), measured before ``json.loads`` runs; ``read_limited`` reads a file or URI within
them.
"""

from __future__ import annotations

import os

from routeplan_client.documents import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_DEPTH,
    check_bounds,
    parse_document,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DEPTH",
    "check_bounds",
    "parse_document",
    "read_limited",
]


def read_limited(path: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """At most ``max_bytes + 1`` bytes of the file at ``path``, a local path or a URI (one more
    than allowed: enough for ``parse_document`` to tell that it is too large, without reading
    all of it)."""
    from routeplan import storage

    return storage.read_bytes(path, limit=max_bytes)
