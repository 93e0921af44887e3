"""``routeplan docs``: serve the Great Expectations Data Docs the validate job built."""

from __future__ import annotations

import argparse
import contextlib
import functools
import webbrowser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from routeplan import storage
from routeplan.errors import InputError
from routeplan.parsing import port

DESCRIPTION = """\
Serve the Data Docs site of the validate job (Great Expectations: each night's suites, their
expectations and what failed) over HTTP on 127.0.0.1, from $ROUTEPLAN_HOME/data_docs or
--build-dir. The site is static files: this only serves them, it builds nothing."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "docs",
        help="serve the Data Docs of the validate job's suites",
        description=DESCRIPTION,
        epilog="""\
Examples:
  routeplan docs
  routeplan docs --port 8001 --open
  routeplan docs --build-dir /srv/routeplan/data_docs""",
    )
    s.add_argument(
        "--build-dir",
        help="the site's folder, holding index.html (default $ROUTEPLAN_HOME/data_docs)",
    )
    s.add_argument("--port", type=port, default=8001, help="0 picks a free one (default 8001)")
    s.add_argument("--open", action="store_true", help="open the index in a web browser")
    s.set_defaults(func=run)


def site_folder(build_dir: str | None = None) -> Path:
    """The Data Docs folder to serve: ``build_dir``, else ``<home>/data_docs``; an
    ``InputError`` when it is in an object store or holds no built site."""
    from routeplan import settings

    folder = build_dir or settings.data_docs_root()
    if storage.is_remote(folder):
        raise InputError(
            f"{folder}: Data Docs in an object store are not served from there; copy the folder "
            "and pass --build-dir"
        )
    if not (Path(folder) / "index.html").is_file():
        raise InputError(f"{folder}: no Data Docs built yet (no index.html); run the validate job")
    return Path(folder).resolve()


def make_server(folder: Path, port_number: int) -> ThreadingHTTPServer:
    """An HTTP server of ``folder``'s files on 127.0.0.1 (``port_number`` 0: a free port)."""
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(folder))
    return ThreadingHTTPServer(("127.0.0.1", port_number), handler)


def run(args: argparse.Namespace) -> int:
    folder = site_folder(args.build_dir)
    with make_server(folder, args.port) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
        print(f"Data Docs of {folder} at {url} (Ctrl-C stops)", flush=True)
        if args.open:
            webbrowser.open(url)
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: stop serving, exit 0
            server.serve_forever()
    return 0
