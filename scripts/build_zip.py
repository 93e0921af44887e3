"""Build the zip that spark-submit ships to the executors (``--py-files``): routeplan's packages
``routeplan/`` and ``jobs/``, their Python sources only (no caches, no data files).

    python scripts/build_zip.py dist/routeplan.zip     # make setup, and both images in docker/
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

PACKAGES = ("routeplan", "jobs")


def build(target: Path, root: Path) -> int:
    """Write ``target`` from the packages under ``root``; the number of files in it."""
    files = sorted(p for package in PACKAGES for p in (root / package).rglob("*.py"))
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            archive.write(path, path.relative_to(root).as_posix())
    return len(files)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    count = build(Path(sys.argv[1]), Path(__file__).resolve().parents[1])
    print(f"{sys.argv[1]}: {count} files")
