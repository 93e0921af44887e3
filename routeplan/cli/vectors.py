"""``routeplan vectors``: the shared test vectors every client is tested against.

Python (``tests/test_vectors.py``), Java (``clients/java``) and Go (``clients/go``) read the same
files in ``schemas/vectors/``; they are generated, deterministically, by this command from the
Python implementation, which is the reference (docs/routing-spec.md):

* ``tables/``: routing-table documents of both kinds (seeds 0, 42, 7, 2^32 - 1; 8 to 2^24 key
  groups; split keys over 2–8 workers with uneven weights and capacities; the empty key and
  non-ASCII keys among them; two documents with the checksum published before JCS, ``sha256:``);
* ``cases.json``: per table, a sequence of keys (every UTF-8 length class, every Murmur3 tail
  length, the empty key, a skewed stream with the split keys) and the line ``routeplan route``
  prints for each message in order; the table's expected checksum;
* ``key_bytes.json``: keys given to a producer as bytes — their UTF-8, or their text in another
  encoding — and the partition of each message routed by the key's text and by those bytes
  (bytes are a key's UTF-8: others are another key, or refused when they are not UTF-8);
* ``canonical.json``: JSON texts and their RFC 8785 form (numbers, escapes, UTF-16 member order);
* ``refused.json`` and ``refused/``: documents every reader must refuse, and why.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np

from routeplan.model.table import (
    LEGACY_CHECKSUM_PREFIX,
    PartitionAssignment,
    RoutingTable,
    Table,
    checksum,
)
from routeplan.model.workers import Worker, Workers
from routeplan_client.jcs import canonical_json

CREATED_AT = "2026-01-01T00:00:00+00:00"

DESCRIPTION = """\
Write the shared test vectors (tables, key sequences and what `routeplan route` prints for each
message, canonical JSON forms, documents a reader must refuse) into DIR. The output is the same
byte for byte on every run: `routeplan vectors --out schemas/vectors` regenerates the committed
files, and a client that disagrees with them fails its tests."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "vectors",
        help="write the shared test vectors of the clients (schemas/vectors)",
        description=DESCRIPTION,
        epilog="Examples:\n  routeplan vectors --out schemas/vectors",
    )
    s.add_argument("--out", required=True, metavar="DIR", help="folder to write (created)")
    s.set_defaults(func=run)


# --------------------------------------------------------------------------------------------
# tables


def _key_tables() -> dict[str, tuple[RoutingTable, int]]:
    """The key_routing tables by name, each with the partition count of its case."""
    basic = RoutingTable("vectors", "vectors", Workers.homogeneous(3), ("w0", "w1", "w2") * 3)
    weighted = Workers(
        (Worker("w0"), Worker("w1", 2.0), Worker("w2", 0.5), Worker("w3", 1.5), Worker("w4"))
    )
    seed42 = RoutingTable(
        "vectors",
        "vectors",
        weighted,
        tuple(f"w{(g * 7 + g // 13) % 5}" for g in range(1000)),
        hot_keys={
            "hot-a": (("w0", 0.7), ("w1", 0.3)),
            "hot-b": (("w2", 0.2), ("w3", 0.5), ("w4", 0.3)),
            "": (("w4", 0.5), ("w1", 0.5)),  # the empty key, split; equal weights: table order
            "ключ": (("w3", 0.1), ("w0", 0.2), ("w2", 0.3), ("w1", 0.4)),
        },
        hash_seed=42,
    )
    capacities = (1.0, 3.0, 0.25, 1.0, 2.5, 1.0, 0.75, 1.0, 1.0, 4.0, 1.0, 0.5, 1.0, 1.25, 1.0, 2.0)
    nodes = Workers(tuple(Worker(f"node-{i}", c) for i, c in enumerate(capacities)))
    rng = np.random.default_rng(4096)
    hot = {}
    split = ("😀", "€uro", "a", "hot-5", "日本語", "x" * 40, "hot-8")
    for d, key in zip(range(2, 9), split, strict=True):
        chosen = rng.choice(16, size=d, replace=False).tolist()
        weights = np.round(rng.dirichlet(np.ones(d) * 0.7), 4) + 0.0001
        hot[key] = tuple((f"node-{w}", float(x)) for w, x in zip(chosen, weights, strict=True))
    seedmax = RoutingTable(
        "vectors",
        "vectors",
        nodes,
        tuple(f"node-{int(v)}" for v in rng.integers(0, 16, size=4096)),
        hot_keys=hot,
        hash_seed=2**32 - 1,
    )
    # 2^24 key groups in runs of uneven length (a wrong modulo lands in another run)
    bounds = np.sort(rng.choice(np.arange(1, 2**24), size=999, replace=False))
    owners = rng.integers(0, 6, size=1000)
    group_owner = np.repeat(owners, np.diff(np.concatenate(([0], bounds, [2**24]))))
    big = RoutingTable(
        "vectors",
        "vectors",
        Workers(tuple(Worker(str(i), 1.0 + (i % 3)) for i in range(6))),  # short names: small gzip
        tuple(np.array([str(i) for i in range(6)], dtype=object)[group_owner].tolist()),
        hot_keys={"hot-a": (("5", 0.5), ("0", 0.25), ("3", 0.25)), "𝄞": (("1", 1), ("2", 1))},
        hash_seed=7,
    )
    return {
        "kr-basic": (basic, 3),
        "kr-seed42": (seed42, 8),
        "kr-seedmax": (seedmax, 16),
        "kr-groups-2p24": (big, 6),
    }


def _published(table: Table, version: int = 1) -> dict[str, Any]:
    return table.published(version, None, CREATED_AT, reason="test vectors").to_document()


def _legacy(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` as published before JCS: its checksum over Python's own JSON spelling."""
    body = {k: v for k, v in doc.items() if k != "checksum"}
    return {**body, "checksum": checksum(body, LEGACY_CHECKSUM_PREFIX)}


def _legacy_key_table() -> dict[str, Any]:
    table = RoutingTable(
        "vectors",
        "vectors",
        Workers((Worker("w0", 1.5), Worker("w1"), Worker("w2", 0.1))),
        tuple(f"w{g % 3}" for g in range(64)),
        hot_keys={"hot-a": (("w1", 0.6), ("w2", 0.4))},
        hash_seed=3,
        predicted={"imbalance": 0.1234, "moves": 3.0, "tiny": 1e-05, "huge": 1e16, "third": 1 / 3},
    )
    return _legacy(_published(table, 2))


def _partition_tables() -> dict[str, dict[str, Any]]:
    consumers = Workers((Worker("c0", 1e6), Worker("c1", 2.5e6), Worker("c2", 1e6), Worker("c3")))
    table = PartitionAssignment(
        "vectors", "binpack", consumers, {p: f"c{(p * 5) % 4}" for p in range(12)}
    )
    old = _published(table)
    old.pop("consumers")
    old.update(
        hash={"function": "murmur3_x86_32", "seed": 0},
        num_key_groups=0,
        workers=consumers.to_records(),
        key_group_worker=[],
        hot_keys=[],
    )
    racked = PartitionAssignment(
        "vectors",
        "bfd",
        Workers((Worker("c0", 1e6, rack="az1"), Worker("c1", 1e6), Worker("c2", 1e6, rack="az2"))),
        {p: f"c{p % 3}" for p in range(12)},
        planning_load={
            "partition_load": [float(p + 1) for p in range(12)],
            "partition_racks": [["az1", "az2"], ["az2"], ["az2", "az3"], [], ["az1"], ["az3"]] * 2,
        },
    )
    return {
        "pa-basic": _published(table),
        "pa-legacy-shape": _legacy(old),
        # consumers with an optional rack, partitions with their replicas' racks (KIP-881)
        "pa-racks": _published(racked),
    }


# --------------------------------------------------------------------------------------------
# keys


def special_keys() -> list[str]:
    """Keys of every UTF-8 length class (1–4 bytes a character), every Murmur3 tail length
    (0–3 bytes after the 4-byte blocks), the empty key, controls and a long key."""
    keys = ["", "a", "é", "€", "😀", "a€", "é😀", "€€€", "😀😀", "\x00", "tab\tkey", " space "]
    keys += ["k" * n for n in range(1, 17)]
    keys += ["é" * n for n in range(1, 6)] + ["€" * n for n in range(1, 6)]
    keys += ["x" * 255, "ключ-" * 30, "\U0010ffff", "\ud7ff\ue000\uffff", "ascii-😀-é-€-end"]
    return keys


def key_stream(table: RoutingTable, n: int, seed: int) -> list[str]:
    """A skewed stream of ``n`` keys: a third split keys (unevenly), the rest Zipf-like users."""
    rng = np.random.default_rng(seed)
    hot = sorted(table.hot_keys)
    out = []
    for r in rng.random(n).tolist():
        if hot and r < 0.35:
            out.append(hot[min(int((r / 0.35) ** 2 * len(hot)), len(hot) - 1)])
        else:
            out.append(f"user-{int(rng.zipf(1.3)) % 5000}" if r < 0.9 else f"ü-{int(r * 1e6)}")
    return out


# --------------------------------------------------------------------------------------------
# keys as bytes

# Texts a producer may serialize other than as UTF-8: split keys, non-ASCII keys of every UTF-8
# length, keys whose UTF-16BE happens to be UTF-8 too ("ключ", "hot-a": another key's bytes);
# for Latin-1, texts it can encode.
KEY_TEXTS = ("hot-a", "ключ", "é", "", "€uro", "😀", "hot-b", "ü-1", "user-1", "日本語")
KEY_BYTES_TEXTS = {
    "utf-8": KEY_TEXTS,
    "utf-16-be": KEY_TEXTS,
    "latin-1": ("hot-a", "é", "", "Größe", "hot-b", "naïve", "user-1", "ü-1"),
}


def _key_bytes_cases(name: str, table: RoutingTable, partitions: int) -> list[dict[str, Any]]:
    """Per encoding, messages of table ``name``: each key's text, its bytes in the encoding
    (hex), and the partition of each message when a producer routes by the text (``by_text``)
    and by the bytes, read as the UTF-8 of a key (``by_bytes``; ``refused`` when they are not
    UTF-8, a message not routed: the next one is decided as if it had not been sent). A fresh
    router for each column."""
    from routeplan.cli.route import route_lines

    def partitions_of(keys: list[str]) -> list[str]:
        return [line.split("\t")[1] for line in route_lines(table, keys, partitions)]

    rng = np.random.default_rng(8)
    records = []
    for encoding, texts in KEY_BYTES_TEXTS.items():
        keys = [texts[i] for i in rng.integers(0, len(texts), size=60).tolist()]
        encoded = [k.encode(encoding) for k in keys]
        decoded = []
        for b in encoded:
            try:
                decoded.append(b.decode("utf-8"))
            except UnicodeDecodeError:
                decoded.append(None)
        routed = iter(partitions_of([k for k in decoded if k is not None]))
        records.append(
            {
                "name": encoding,
                "table": _table_path(name),
                "partitions": partitions,
                "keys": keys,
                "key_bytes": [b.hex() for b in encoded],
                "by_text": partitions_of(keys),
                "by_bytes": ["refused" if k is None else next(routed) for k in decoded],
            }
        )
    return records


# --------------------------------------------------------------------------------------------
# canonical forms and refused documents

CANONICAL_INPUTS = {
    "rfc8785-example": '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001'
    '],"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}',
    "numbers": "[0, -0.0, 1.0, -1, 1e21, 1e20, 123456789012345678901, 1e-6, 1e-7, 0.1, 1.5e300, "
    "5e-324, 1.7976931348623157e308, 9007199254740993, 100, 0.000001234, 12.5e-8, 4294967295]",
    "escapes": '["\\u0000\\u0001\\u001f\\u007f", "\\b\\f\\n\\r\\t\\"\\\\/", "\\u00e9\\u20ac", '
    '"\\ud83d\\ude00"]',
    "utf16-member-order": '{"\\ue000":1,"\\ud83d\\ude00":2,"z":3,"a":{"b":[],"a":{}},"":0,'
    '"\\u00e9":4}',
    "nesting": '{"b":[{"y":true,"x":null}],"a":[[],[[]],{}]}',
}


def _refused_base() -> dict[str, Any]:
    """A small key_routing document with split keys, the base of every refused one."""
    table = RoutingTable(
        "vectors",
        "vectors",
        Workers((Worker("w0"), Worker("w1", 2.0), Worker("w2", 0.5))),
        tuple(f"w{g % 3}" for g in range(16)),
        hot_keys={"hot-a": (("w0", 0.7), ("w1", 0.3)), "hot-b": (("w2", 0.5), ("w1", 0.5))},
        hash_seed=42,
    )
    return _published(table)


def _refused(seed42: dict[str, Any]) -> dict[str, tuple[str, bytes]]:
    """Documents every reader refuses, by name: (why, bytes)."""

    def resealed(**changes: Any) -> bytes:
        doc = {**seed42, **changes}
        doc["checksum"] = checksum(doc)
        return json.dumps(doc, ensure_ascii=False).encode()

    good = json.dumps(seed42, ensure_ascii=False).encode()
    kgw = list(seed42["key_group_worker"])
    hot = [dict(h) for h in seed42["hot_keys"]]
    workers = [dict(w) for w in seed42["workers"]]
    return {
        "bad-checksum": (
            "the checksum is not the document's",
            json.dumps({**seed42, "checksum": "jcs-sha256:" + "0" * 64}).encode(),
        ),
        "tampered": (
            "a key group changed after the checksum was computed",
            json.dumps({**seed42, "key_group_worker": ["w1"] + kgw[1:]}).encode(),
        ),
        "unknown-checksum-scheme": (
            "the checksum's prefix names no known scheme",
            json.dumps({**seed42, "checksum": "md5:" + "0" * 32}).encode(),
        ),
        "no-checksum": (
            "no checksum",
            json.dumps({k: v for k, v in seed42.items() if k != "checksum"}).encode(),
        ),
        "truncated": ("not whole JSON", good[: len(good) // 2]),
        "not-json": ("not JSON", b"\xef\xbb\xbfLATEST v3"),
        "unknown-kind": ("kind is neither of the two", resealed(kind="x")),
        "unknown-hash": (
            "hash.function is not murmur3_x86_32",
            resealed(hash={"function": "murmur3_x64_128", "seed": 42}),
        ),
        "seed-too-large": (
            "hash.seed is not in [0, 2^32)",
            resealed(hash={"function": "murmur3_x86_32", "seed": 2**32}),
        ),
        "group-count-mismatch": (
            "key_group_worker has not num_key_groups entries",
            resealed(num_key_groups=15),
        ),
        "unknown-worker": (
            "a key group's worker is not in workers",
            resealed(key_group_worker=["w9"] + kgw[1:]),
        ),
        "hot-key-unknown-worker": (
            "a split key's worker is not in workers",
            resealed(hot_keys=[{**hot[0], "workers": [{"worker": "w9", "weight": 1}]}] + hot[1:]),
        ),
        "hot-key-zero-weight": (
            "a split key's weight is not > 0",
            resealed(hot_keys=[{**hot[0], "workers": [{"worker": "w0", "weight": 0}]}] + hot[1:]),
        ),
        "hot-key-twice": ("a key is listed twice in hot_keys", resealed(hot_keys=hot + hot[:1])),
        "zero-capacity": (
            "a worker's capacity is not > 0",
            resealed(workers=[{**workers[0], "capacity": 0}] + workers[1:]),
        ),
        "duplicate-worker": ("two workers of one name", resealed(workers=workers + workers[:1])),
    }


# --------------------------------------------------------------------------------------------
# writing


def _write_json(path: Path, doc: Any, gz: bool = False) -> None:
    data = (json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    if gz:
        path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    else:
        path.write_bytes(data)


def generate(out: Path) -> list[Path]:
    """Write every vectors file into ``out``; the files written, in order."""
    from routeplan.cli.route import route_lines  # the tool's own output is the expectation

    (out / "tables").mkdir(parents=True, exist_ok=True)
    (out / "refused").mkdir(exist_ok=True)
    written: list[Path] = []
    cases = []
    documents: dict[str, dict[str, Any]] = {}
    key_tables = _key_tables()
    for i, (name, (table, partitions)) in enumerate(key_tables.items()):
        documents[name] = _published(table)
        keys = special_keys() + key_stream(table, 1000, seed=i)
        cases.append((name, table, partitions, keys))
    documents["kr-legacy"] = _legacy_key_table()
    legacy = RoutingTable.from_document(documents["kr-legacy"])
    cases.append(("kr-legacy", legacy, 3, special_keys() + key_stream(legacy, 300, seed=9)))
    documents.update(_partition_tables())

    records = []
    for name, table, partitions, keys in cases:
        both = name in ("kr-basic", "kr-legacy")  # the others: with partitions only
        for with_partitions in (False, True) if both else (True,):
            records.append(
                {
                    "name": f"{name}{'-partitions' if with_partitions else ''}",
                    "table": _table_path(name),
                    "checksum": documents[name]["checksum"],
                    "partitions": partitions if with_partitions else None,
                    "keys": keys,
                    "expected": list(
                        route_lines(table, keys, partitions if with_partitions else None)
                    ),
                }
            )
    for name in ("pa-basic", "pa-legacy-shape", "pa-racks"):
        table = PartitionAssignment.from_document(documents[name])
        lines = [str(p) for p in (3, 0, 11, 5, 5, 1, 10, 2, 4, 6, 7, 8, 9)]
        records.append(
            {
                "name": name,
                "table": _table_path(name),
                "checksum": documents[name]["checksum"],
                "partitions": None,
                "keys": lines,
                "expected": list(route_lines(table, lines)),
            }
        )
    for name, doc in documents.items():
        path = out / _table_path(name)
        _write_json(path, doc, gz=path.suffix == ".gz")
        written.append(path)
    _write_json(out / "cases.json", {"cases": records})
    written.append(out / "cases.json")
    key_bytes = _key_bytes_cases("kr-seed42", *key_tables["kr-seed42"])
    _write_json(out / "key_bytes.json", {"cases": key_bytes})
    written.append(out / "key_bytes.json")

    canonical = [
        {"name": name, "input": text, "canonical": canonical_json(json.loads(text)).decode()}
        for name, text in CANONICAL_INPUTS.items()
    ]
    _write_json(out / "canonical.json", {"cases": canonical})
    written.append(out / "canonical.json")

    refused = []
    for name, (why, data) in _refused(_refused_base()).items():
        path = out / "refused" / f"{name}.json"
        path.write_bytes(data)
        written.append(path)
        refused.append({"name": name, "file": f"refused/{name}.json", "why": why})
    _write_json(out / "refused.json", {"cases": refused})
    written.append(out / "refused.json")
    return written


def _table_path(name: str) -> str:
    return f"tables/{name}.json" + (".gz" if name == "kr-groups-2p24" else "")


def run(args: argparse.Namespace) -> int:
    for path in generate(Path(args.out)):
        print(path)
    return 0
