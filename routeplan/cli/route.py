"""``routeplan route``: route keys read on stdin by one table file, as every client does.

The same tool exists in each language (``clients/java``: the jar's main; ``clients/go/cmd/route``)
and the shared vectors (``schemas/vectors``, ``routeplan vectors``) are what they print.
"""

from __future__ import annotations

import argparse
import gzip
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from routeplan.contracts.documents import DEFAULT_MAX_BYTES, parse_document
from routeplan.errors import InputError
from routeplan.model.table import PartitionAssignment, RoutingTable, Table, table_from_document
from routeplan_client import Router
from routeplan_client.kafka import worker_partitions

DESCRIPTION = """\
Read keys from stdin, one per line, and print where each message goes by the table in FILE
(a routing-table document, .json or .json.gz): its worker, and with --partitions N its Kafka
partition too ("worker<TAB>partition"; the partition is the integer the worker's name ends with,
and must be below N). Messages are routed in order, as one producer would send them: a split
key's messages are spread by this run's local loads (docs/routing-spec.md). A line is a key
exactly as it is (UTF-8; nothing trimmed; an empty line is the empty key; the newline after the
last key is optional). A partition_assignment table reads partition numbers and prints each
one's consumer. The table is verified first (checksum, kind, what routing needs); exit 1 if it
is refused."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "route",
        help="route keys from stdin by a table file (worker, --partitions: partition)",
        description=DESCRIPTION,
        epilog="""\
Examples:
  routeplan route --table var/routing/clicks/v3.json
  routeplan route --table schemas/vectors/tables/kr-seed42.json --partitions 8

  (keys on stdin: printf 'user-1\\nuser-2\\n' | routeplan route --table FILE)""",
    )
    s.add_argument("--table", required=True, metavar="FILE", help="a routing-table document")
    s.add_argument(
        "--partitions",
        type=_positive,
        metavar="N",
        help="the topic's partition count: print each message's partition as well",
    )
    s.set_defaults(func=run)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(f"--partitions must be >= 1, got {value}")
    return value


def load_table_file(path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> Table:
    """The verified table in the document at ``path`` (gzip when it ends with ``.gz``):
    bounded JSON, checksum (by its prefix's scheme), kind and routing consistency
    (``table_from_document``); InputError naming the file otherwise."""
    path = Path(path)
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as raw:
            body = raw.read(max_bytes + 1)
        return table_from_document(parse_document(body, str(path), max_bytes))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (ValueError, KeyError, TypeError, OSError, EOFError) as err:
        what = f"missing field {err}" if isinstance(err, KeyError) else str(err)
        raise InputError(f"{path}: refused: {what}") from None


def route_lines(table: Table, lines: Iterable[str], partitions: int | None = None) -> Iterator[str]:
    """What ``routeplan route`` prints for ``lines``: one line per input line, in order."""
    if isinstance(table, PartitionAssignment):
        if partitions is not None:
            raise ValueError("--partitions is for key_routing tables")
        for line in lines:
            if not line.isdigit():
                raise InputError(f"stdin: {line!r} is not a partition number")
            consumer = table.partition_consumer.get(int(line))
            if consumer is None:
                raise InputError(f"stdin: the table assigns no partition {line}")
            yield consumer
        return
    assert isinstance(table, RoutingTable)
    router = Router(table)
    if partitions is None:
        yield from map(router.route, lines)
        return
    partition_of = worker_partitions(table.workers.names)
    too_high = sorted(w for w, p in partition_of.items() if p >= partitions)
    if too_high:
        raise ValueError(
            f"the table needs more than {partitions} partitions: worker {too_high[0]!r} is "
            f"partition {partition_of[too_high[0]]}"
        )
    for line in lines:
        worker = router.route(line)
        yield f"{worker}\t{partition_of[worker]}"


def split_lines(data: bytes) -> list[str]:
    """The keys in ``data``: UTF-8 lines split on ``\\n`` only, the last newline optional."""
    if not data:
        return []
    text = data.decode("utf-8")
    return (text[:-1] if text.endswith("\n") else text).split("\n")


def run(args: argparse.Namespace) -> int:
    table = load_table_file(args.table)
    try:
        keys = split_lines(sys.stdin.buffer.read())
    except UnicodeDecodeError as err:
        raise InputError(f"stdin: not UTF-8: {err}") from None
    out = sys.stdout
    for line in route_lines(table, keys, args.partitions):
        out.write(line)
        out.write("\n")
    out.flush()
    return 0
