"""MkDocs hooks (``hooks:`` in mkdocs.yml) for routeplan's documentation site.

The pages are written to read well where they are — on a code host, in an editor — so they link
to the repository's own files by relative paths (``../schemas/name.schema.json``), and the
README links to the pages as ``docs/<page>.md``. Two rules make the same text a site:

* **The README is the site's home** (``index.md``): one text, not a copy that drifts. Its links
  to ``docs/<page>.md`` become links to the pages.
* **A link to a file of the repository outside docs/** (a schema, the sample policies, a module,
  another README) becomes a link to a copy of that file in the site, under ``repo/<path>``, so
  the site works offline and MkDocs still checks every link. A link to a file that does not
  exist, or to a folder, is left as written: MkDocs reports it and ``mkdocs build --strict``
  fails on it.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File, Files, InclusionLevel

REPO = Path(__file__).resolve().parents[1]
README = "README.md"
COPIES = "repo"  # the site's folder holding the repository files the pages link to
# an inline Markdown link's target: [text](target) or ![alt](target), up to a blank or ")"
LINK = re.compile(r"(\]\()([^)\s]+)(\))")
FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)


def repository_path(src_uri: str) -> str:
    """The repository path of the page the site has at ``src_uri``."""
    if src_uri == "index.md":
        return README
    if src_uri.startswith(f"{COPIES}/"):
        return src_uri.removeprefix(f"{COPIES}/")
    return f"docs/{src_uri}"


def site_path(repository: str) -> str:
    """Where the repository's file ``repository`` is in the site."""
    if repository == README:
        return "index.md"
    if repository.startswith("docs/"):
        return repository.removeprefix("docs/")
    return f"{COPIES}/{repository}"


def local_target(target: str) -> tuple[str, str] | None:
    """``(path, '#anchor' or '')`` of a relative link; None for a URL, an absolute path or an
    anchor on the same page."""
    if target.startswith(("#", "/")) or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
        return None
    path, _, anchor = target.partition("#")
    return path, f"#{anchor}" if anchor else ""


def linked_files(markdown: str, page_repository: str) -> list[str]:
    """The repository paths that ``markdown`` (the file at ``page_repository``) links to, outside
    code blocks."""
    found = []
    for _, target, _ in LINK.findall(FENCE.sub("", markdown)):
        local = local_target(target)
        if local:
            joined = posixpath.join(posixpath.dirname(page_repository), local[0])
            found.append(posixpath.normpath(joined))
    return found


def copied(repository: str) -> bool:
    """A link to ``repository`` is served from a copy: an existing file outside docs/."""
    return (
        not repository.startswith(("docs/", "../"))
        and repository != README
        and (REPO / repository).is_file()
    )


def on_files(files: Files, config) -> Files:
    """The README as ``index.md``, and a copy of each repository file a page links to (a linked
    Markdown file becomes a page outside the nav, whose own links count too)."""
    pending = [(README, REPO / README)]
    pending += [
        (repository_path(f.src_uri), Path(f.abs_src_path)) for f in files.documentation_pages()
    ]
    files.append(File.generated(config, "index.md", abs_src_path=str(REPO / README)))
    seen = {repository for repository, _ in pending}
    while pending:
        page, source = pending.pop()
        for repository in linked_files(source.read_text(encoding="utf-8"), page):
            if repository in seen or not copied(repository):
                continue
            seen.add(repository)
            markdown = repository.endswith(".md")
            inclusion = InclusionLevel.NOT_IN_NAV if markdown else InclusionLevel.UNDEFINED
            files.append(
                File.generated(
                    config,
                    site_path(repository),
                    abs_src_path=str(REPO / repository),
                    inclusion=inclusion,
                )
            )
            if markdown:
                pending.append((repository, REPO / repository))
    return files


def on_page_markdown(markdown: str, page, config, files: Files) -> str:
    """Each relative link aimed where the site has its target: a page, or a copy."""
    here = repository_path(page.file.src_uri)
    site_dir = posixpath.dirname(page.file.src_uri)

    def aim(match: re.Match[str]) -> str:
        local = local_target(match.group(2))
        if local is None:
            return match.group(0)
        path, anchor = local
        repository = posixpath.normpath(posixpath.join(posixpath.dirname(here), path))
        if not (copied(repository) or repository == README or repository.startswith("docs/")):
            return match.group(0)  # missing, a folder, or outside: MkDocs reports it
        target = posixpath.relpath(site_path(repository), site_dir or ".")
        return f"{match.group(1)}{target}{anchor}{match.group(3)}"

    # links inside code blocks are code, not links
    pieces, last = [], 0
    for fence in FENCE.finditer(markdown):
        pieces.append(LINK.sub(aim, markdown[last : fence.start()]))
        pieces.append(fence.group(0))
        last = fence.end()
    pieces.append(LINK.sub(aim, markdown[last:]))
    return "".join(pieces)
