"""Run by tests/test_client_package.py with the interpreter of a fresh virtualenv holding the
``routeplan-client`` wheel alone: routes the shared vectors (``schemas/vectors/``) and reads the
refused ones, then prints one JSON object of what it found (the test judges it).

    python tests/client_package_check.py schemas/vectors
"""

import gzip
import json
import sys
from pathlib import Path

import routeplan_client
from routeplan_client import PartitionAssignment, Router, table_from_document
from routeplan_client.kafka import worker_partitions


def load(path):
    raw = path.read_bytes()
    return table_from_document(json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw))


def routed(case, vectors):
    table = load(vectors / case["table"])
    if isinstance(table, PartitionAssignment):
        return [table.partition_consumer[int(k)] for k in case["keys"]]
    router = Router(table)
    workers = [router.route(k) for k in case["keys"]]
    assert router.route_many(case["keys"][::-1]) is not None
    if case["partitions"] is None:
        return workers
    partition_of = worker_partitions(table.worker_names)
    return [f"{w}\t{partition_of[w]}" for w in workers]


def main(vectors):
    cases = json.loads((vectors / "cases.json").read_text(encoding="utf-8"))["cases"]
    refused = {}
    for path in sorted((vectors / "refused").iterdir()):
        try:
            load(path)
            refused[path.name] = "accepted"
        except ValueError as err:
            refused[path.name] = f"refused: {err}"[:200]
    found = {
        "version": routeplan_client.__version__,
        "spec": routeplan_client.ROUTING_SPEC_VERSION,
        "python": "{}.{}".format(*sys.version_info[:2]),
        "cases": {c["name"]: routed(c, vectors) == c["expected"] for c in cases},
        "refused": refused,
        "imported": sorted({"numpy", "routeplan", "fsspec"} & set(sys.modules)),
    }
    print(json.dumps(found))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
