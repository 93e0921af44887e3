"""Build the zip that spark-submit ships to the executors (``--py-files``): routeplan's packages
``routeplan/`` and ``jobs/`` and the client's ``routeplan_client/`` (the hash the key-group UDF
runs), their Python sources only (no caches, no data files).

    python scripts/build_zip.py dist/routeplan.zip     # make setup, and both images in docker/
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

PACKAGES = ("routeplan", "jobs", "clients/python/routeplan_client")


def build(target: Path, root: Path) -> int:
    """Write ``target`` from the packages under ``root`` (each at the zip's top level, as
    Python imports it); the number of files in it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in PACKAGES:
            folder = root / package
            for path in sorted(folder.rglob("*.py")):
                archive.write(path, path.relative_to(folder.parent).as_posix())
                count += 1
    return count


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    count = build(Path(sys.argv[1]), Path(__file__).resolve().parents[1])
    print(f"{sys.argv[1]}: {count} files")
