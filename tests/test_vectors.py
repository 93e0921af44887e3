"""The shared test vectors (``schemas/vectors``, ``routeplan vectors``): the Python router, the
``routeplan route`` tool and the checksum agree with every file; the files are what the command
writes. Java (``clients/java``) and Go (``clients/go``) are tested against the same files."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from routeplan.cli.main import main
from routeplan.cli.route import load_table_file, route_lines
from routeplan.cli.vectors import generate
from routeplan.errors import InputError
from routeplan.model.table import RoutingTable, Table
from routeplan_client import Router
from routeplan_client.jcs import canonical_json
from routeplan_client.kafka import KafkaPythonPartitioner

VECTORS = Path(__file__).resolve().parents[1] / "schemas" / "vectors"
CASES = json.loads((VECTORS / "cases.json").read_text(encoding="utf-8"))["cases"]
REFUSED = json.loads((VECTORS / "refused.json").read_text(encoding="utf-8"))["cases"]
CANONICAL = json.loads((VECTORS / "canonical.json").read_text(encoding="utf-8"))["cases"]
KEY_BYTES = json.loads((VECTORS / "key_bytes.json").read_text(encoding="utf-8"))["cases"]


def test_the_committed_vectors_are_what_routeplan_vectors_writes(tmp_path):
    written = generate(tmp_path)
    committed = sorted(p.relative_to(VECTORS) for p in VECTORS.rglob("*") if p.is_file())
    assert sorted(p.relative_to(tmp_path) for p in written) == committed
    for path in written:
        name = path.relative_to(tmp_path)
        assert path.read_bytes() == (VECTORS / name).read_bytes(), f"{name} differs"


@cache
def vector_table(name: str) -> Table:
    """The table file ``name`` of the vectors, verified (loaded once per run: the 2^24 one takes
    seconds)."""
    return load_table_file(VECTORS / name)


def test_the_vectors_cover_what_the_spec_asks_for():
    tables = {c["table"]: vector_table(c["table"]) for c in CASES}
    key_tables = [t for t in tables.values() if isinstance(t, RoutingTable)]
    assert {t.hash_seed for t in key_tables} >= {0, 42, 2**32 - 1}
    assert max(t.num_key_groups for t in key_tables) == 2**24
    widths = {len(w) for t in key_tables for w in t.hot_keys.values()}
    assert set(range(2, 9)) <= widths
    keys = {k for c in CASES for k in c["keys"]}
    assert "" in keys and {len(k.encode()) % 4 for k in keys} == {0, 1, 2, 3}
    assert {max(len(ch.encode()) for ch in k) for k in keys if k} == {1, 2, 3, 4}
    assert {t.kind for t in tables.values()} == {"key_routing", "partition_assignment"}
    assert any(c["checksum"].startswith("sha256:") for c in CASES)  # documents from before JCS
    # keys as bytes: their UTF-8, and other encodings' bytes that are another key's or not UTF-8
    assert {c["name"] for c in KEY_BYTES} >= {"utf-8", "utf-16-be", "latin-1"}
    assert all(c["by_bytes"] == c["by_text"] for c in KEY_BYTES if c["name"] == "utf-8")
    by_bytes = [p for c in KEY_BYTES if c["name"] != "utf-8" for p in c["by_bytes"]]
    assert "refused" in by_bytes and {p for p in by_bytes if p != "refused"}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_the_python_router_routes_every_message_as_the_vectors_say(case):
    table = vector_table(case["table"])
    assert json_checksum(VECTORS / case["table"]) == case["checksum"]
    assert list(route_lines(table, case["keys"], case["partitions"])) == case["expected"]
    if isinstance(table, RoutingTable):  # route_many decides as route() does
        workers = [line.split("\t")[0] for line in case["expected"]]
        assert Router(table).route_many(case["keys"]) == workers


@pytest.mark.parametrize("case", KEY_BYTES, ids=[c["name"] for c in KEY_BYTES])
def test_a_producer_routes_a_keys_utf8_bytes_as_its_text_and_other_bytes_as_the_vectors_say(case):
    """kafka-python's partitioner routes the serialized key: the UTF-8 of a key's text as the
    text; bytes of another encoding as the key they are the UTF-8 of, or refused (not counted)
    when they are not UTF-8."""
    table = vector_table(case["table"])
    partitions = list(range(case["partitions"]))

    def routed(serialized: list[bytes]) -> list[str]:
        partitioner, out = KafkaPythonPartitioner(Router(table)), []
        for key in serialized:
            try:
                out.append(str(partitioner(key, partitions, partitions)))
            except ValueError as err:
                assert "not UTF-8" in str(err)
                out.append("refused")
        return out

    assert routed([k.encode() for k in case["keys"]]) == case["by_text"]
    assert routed([bytes.fromhex(b) for b in case["key_bytes"]]) == case["by_bytes"]


def json_checksum(path: Path) -> str:
    import gzip

    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if path.suffix == ".gz" else data)["checksum"]


@pytest.mark.parametrize("case", CANONICAL, ids=[c["name"] for c in CANONICAL])
def test_canonical_json_is_rfc_8785(case):
    assert canonical_json(json.loads(case["input"])).decode("utf-8") == case["canonical"]


@pytest.mark.parametrize("case", REFUSED, ids=[c["name"] for c in REFUSED])
def test_every_reader_refuses_the_refused_documents(case):
    with pytest.raises(InputError, match="refused"):
        load_table_file(VECTORS / case["file"])


def run_route(monkeypatch, capsys, args: list[str], stdin: bytes) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    code = main(["route", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", ["kr-basic", "kr-legacy-partitions", "pa-legacy-shape"])
def test_routeplan_route_prints_the_vectors_lines(monkeypatch, capsys, name):
    case = next(c for c in CASES if c["name"] == name)
    args = ["--table", str(VECTORS / case["table"])]
    if case["partitions"]:
        args += ["--partitions", str(case["partitions"])]
    stdin = "".join(k + "\n" for k in case["keys"]).encode()
    code, out, err = run_route(monkeypatch, capsys, args, stdin)
    assert (code, err) == (0, "")
    assert out == "".join(line + "\n" for line in case["expected"])


def test_routeplan_route_refuses_a_bad_table_too_few_partitions_and_bad_input(monkeypatch, capsys):
    bad = str(VECTORS / "refused" / "bad-checksum.json")
    code, out, err = run_route(monkeypatch, capsys, ["--table", bad], b"k\n")
    assert code == 1 and out == "" and "checksum mismatch" in err
    seed42 = str(VECTORS / "tables" / "kr-seed42.json")
    code, out, err = run_route(monkeypatch, capsys, ["--table", seed42, "--partitions", "4"], b"")
    assert code == 2 and "needs more than 4 partitions: worker 'w4' is partition 4" in err
    code, out, err = run_route(monkeypatch, capsys, ["--table", seed42], b"ok\n\xff\n")
    assert code == 1 and "stdin: not UTF-8" in err
    code, out, err = run_route(monkeypatch, capsys, ["--table", seed42], b"a\n\nb")  # no last \n
    assert code == 0 and len(out.splitlines()) == 3


@pytest.mark.parametrize("tool", ["java", "go"])
def test_the_java_and_go_route_tools_print_the_vectors_lines(tool):
    """The tools as built by ``make setup`` (the jar's own class path; the Go binary), run as a
    user runs them; their full vectors tests are ``make test``'s ``mvn test`` and ``go test``."""
    root = VECTORS.parents[1]
    command = {
        "java": ["java", "-jar", str(root / "clients/java/target/routeplan-client.jar")],
        "go": [str(root / "clients/go/bin/route")],
    }[tool]
    case = next(c for c in CASES if c["name"] == "kr-seedmax-partitions")
    args = ["--table", str(VECTORS / case["table"]), "--partitions", str(case["partitions"])]
    stdin = "".join(k + "\n" for k in case["keys"]).encode()
    done = subprocess.run([*command, *args], input=stdin, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode() == "".join(line + "\n" for line in case["expected"])
    bad = [*command, "--table", str(VECTORS / "refused" / "tampered.json")]
    refused = subprocess.run(bad, input=b"k\n", capture_output=True, timeout=60)
    assert refused.returncode == 1 and b"checksum mismatch" in refused.stderr
