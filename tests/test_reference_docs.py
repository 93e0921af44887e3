"""The reference pages (docs/reference/, scripts/reference_docs.py): committed as the code makes
them, built by pure functions that say what the code says; and the hand-written pages name only
things that exist — flags, settings, files, tables, HTTP paths and DAG Params."""

from __future__ import annotations

import argparse
import ast
import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

import reference_docs as ref  # noqa: E402  (scripts/ is no package)

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
SPAN = re.compile(r"`([^`\n]+)`")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
VARIABLE = re.compile(r"\bROUTEPLAN_[A-Z][A-Z0-9_]*")
TABLE = re.compile(r"\b(?:bronze|silver|gold)\.[a-z_]+")
ROOTS = ("routeplan", "jobs", "dags", "scripts", "schemas", "config", "docs", "bench", "tests")
PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(ROOTS) + r"|clients)/[^\s`'\"),;]*)")
# Flags of other tools that the pages rightly name (a routeplan flag of the same name counts too)
OTHER_TOOLS = {
    "--properties-file": "spark-submit and spark-sql: the Spark properties file every task passes",
    "--py-files": "spark-submit: the zip of routeplan shipped to the executors",
    "--driver-class-path": "spark-sql: Delta Lake's jars on the driver's class path",
    "--conf": "spark-sql and spark-submit: a Spark property",
    "--driver-java-options": "spark-sql: the driver JVM's options (Derby's log, in operating.md)",
}
# A code block's line that runs something whose flags are known
COMMAND = re.compile(r"(routeplan|python3?|make|spark-sql|spark-submit|java|clients/go/bin/)\b")
# The route tool of the Java and Go clients takes the flags of `routeplan route` (routing-spec.md)
ROUTE_TOOLS = ("java -jar clients/java/target/routeplan-client.jar", "clients/go/bin/route")


def hand_written() -> list[Path]:
    """The README and the hand-written pages (not the generated reference)."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def spans(text: str) -> list[tuple[str, str, str]]:
    """Each inline code span outside code blocks: ``(code, text before, text after)``."""
    prose = FENCE.sub("", text)
    return [
        (m.group(1), prose[max(0, m.start() - 80) : m.start()], prose[m.end() : m.end() + 80])
        for m in SPAN.finditer(prose)
    ]


# ---- what exists ----------------------------------------------------------------------------


@functools.cache
def routeplan_flags() -> dict[str, set[str]]:
    """Each ``routeplan`` subcommand's flags (hidden ones too), ``""`` for the top level."""
    from routeplan.cli.main import build_parser

    def options(parser: argparse.ArgumentParser) -> set[str]:
        return {o for a in parser._actions for o in a.option_strings if o.startswith("--")}

    top = build_parser()
    found = {"": options(top)}
    for name, _, parser in ref.subcommands(top):
        found[name] = options(parser)
    return found


def declared_flags(path: Path) -> set[str]:
    """The ``--flags`` a script declares with ``add_argument``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            found |= {
                a.value
                for a in node.args
                if isinstance(a, ast.Constant) and str(a.value).startswith("--")
            }
    return found


@functools.cache
def script_flags() -> dict[str, set[str]]:
    """The flags of each Python script of the repository (jobs, scripts, benchmarks): a job's
    include the common ones of jobs/common.py."""
    common = declared_flags(REPO / "jobs" / "common.py")
    found = {}
    for folder in ("jobs", "scripts", "bench"):
        for path in (REPO / folder).glob("*.py"):
            extra = common if folder == "jobs" else set()
            found[f"{folder}/{path.name}"] = declared_flags(path) | extra
    return found


def unknown_flags(code: str) -> list[str]:
    """The flags of ``code`` that what it runs does not take: a routeplan subcommand's (``routeplan
    plan --x``, ``plan --x``), a script's (``jobs/plan.py --x``, ``make demo DEMO_ARGS="--x"``),
    the route tool's; a flag alone, any of them or another tool's (``OTHER_TOOLS``)."""
    flags = FLAG.findall(code)
    if not flags:
        return []
    commands = routeplan_flags()
    words = code.replace("[", " ").split()
    if words[0] == "routeplan":
        words = words[1:]
    if code.startswith(ROUTE_TOOLS):
        known = commands["route"]
    elif words and words[0] in commands:
        known = commands[words[0]] | commands[""]
    elif script := next((s for s in script_flags() if s in code), None):
        known = script_flags()[script]
    elif "DEMO_ARGS=" in code:
        known = script_flags()["scripts/demo.py"]
    elif "CLUSTER_ARGS=" in code:
        known = script_flags()["scripts/cluster.py"]
    elif "BENCH_ARGS=" in code:
        known = set().union(*(f for s, f in script_flags().items() if s.startswith("bench/")))
    else:
        known = set().union(*commands.values(), *script_flags().values(), OTHER_TOOLS)
    return [f for f in flags if f not in known]


@functools.cache
def settings_variables() -> set[str]:
    from routeplan.settings import Settings

    return {Settings.variable(name) for name in Settings.model_fields}


def path_exists(token: str) -> bool:
    """A repository path that exists, a build output git ignores (``clients/go/bin/route``), a
    pattern (``jobs/<stage>.py``), or a module's attribute (``jobs/common.TABLE_NAMES``)."""
    token = token.split("::")[0].rstrip(".:")
    if any(c in token for c in "<>{}*…"):
        return True
    if (REPO / token).exists():
        return True
    module, _, name = token.rpartition(".")
    source = REPO / f"{module}.py"
    if module and source.is_file():
        defined = rf"^(def |class )?{re.escape(name)}\b"
        return re.search(defined, source.read_text(encoding="utf-8"), re.M) is not None
    ignored = subprocess.run(["git", "check-ignore", "-q", token], cwd=REPO, check=False)
    return ignored.returncode == 0


@functools.cache
def api_paths() -> list[re.Pattern[str]]:
    """The OpenAPI document's paths as patterns, each ``{parameter}`` one segment."""
    return [
        re.compile("^" + re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(p)) + "$")
        for p in ref.collect_openapi()["paths"]
    ]


def http_paths(code: str) -> list[str]:
    """The HTTP API paths ``code`` names (``GET /streams/{stream}/latest``, under the Airflow
    plugin's ``/routeplan`` too): those whose first segment is one of the API's."""
    roots = {p.pattern.split("/")[1].rstrip("$") for p in api_paths()}
    found = []
    for token in re.findall(r"(?:^|\s)(/[^\s`]+)", code):
        path = token.removeprefix("/routeplan").split("?")[0].rstrip(".,")
        if path.split("/")[1:2] and path.split("/")[1] in roots:
            found.append(re.sub(r"<[^>]*>|\{[^}]*\}", "x", path))
    return found


@functools.cache
def dag_params() -> set[str]:
    return {p.name for _, _, params in ref.collect_dags() for p in params}


def named_as_params(text: str) -> list[str]:
    """The names a page calls DAG Params: "`x` Param", "Params `x`, `y` and `z`", "`x` (…, DAG
    Param, …)"."""
    found = []
    prose = FENCE.sub("", text)
    for match in re.finditer(r"`(\w+)` Params?\b", prose):
        found.append(match.group(1))
    for match in re.finditer(r"\bParams? ((?:`\w+`(?:, | and | or |/)?)+)", prose):
        found += re.findall(r"`(\w+)`", match.group(1))
    for match in re.finditer(r"`(\w+)` \([^)]*\bDAG Param\b", prose):
        found.append(match.group(1))
    return found


def stale_names(path: Path) -> list[str]:
    """What ``path`` names in backticks that does not exist."""
    text = path.read_text(encoding="utf-8")
    problems = []
    known = settings_variables()
    for code, _, _ in spans(text):
        problems += [f"flag {f} (in `{code}`)" for f in unknown_flags(code)]
        problems += [f"setting {v}" for v in VARIABLE.findall(code) if v not in known]
        problems += [f"path {p}" for p in PATH.findall(code) if not path_exists(p)]
        problems += [f"table {t}" for t in TABLE.findall(code) if t not in table_names()]
        problems += [
            f"HTTP path {p}" for p in http_paths(code) if not any(a.match(p) for a in api_paths())
        ]
    for block in FENCE.finditer(text):
        body = block.group(0).replace("\\\n", " ")  # a command's continued lines as one
        for line in body.splitlines()[1:-1]:
            command = " ".join(line.split()).removeprefix("$ ")
            if COMMAND.match(command):
                problems += [f"flag {f} (in `{command}`)" for f in unknown_flags(command)]
        problems += [f"setting {v}" for v in VARIABLE.findall(body) if v not in known]
        problems += [f"table {t}" for t in TABLE.findall(body) if t not in table_names()]
    problems += [f"DAG Param {p}" for p in named_as_params(text) if p not in dag_params()]
    return problems


@functools.cache
def table_names() -> set[str]:
    sys.path.insert(0, str(REPO))
    from jobs.common import TABLE_NAMES

    return set(TABLE_NAMES)


# ---- the tests ------------------------------------------------------------------------------


def test_the_committed_pages_are_what_the_code_makes():
    pages = ref.collect()
    assert set(pages) == {p.name for p in ref.OUT.glob("*.md")}, "run scripts/reference_docs.py"
    for name, text in pages.items():
        committed = (ref.OUT / name).read_text(encoding="utf-8")
        assert committed == text, (
            f"docs/reference/{name} is stale: run python scripts/reference_docs.py --write"
        )
        assert committed.startswith(f"<!-- Generated by {ref.SCRIPT} from ")


def test_the_pages_are_in_the_nav_and_linked_from_the_guides():
    nav = (REPO / "mkdocs.yml").read_text()
    for page in ref.OUT.glob("*.md"):
        assert f"reference/{page.name}" in nav
    guides = "".join(p.read_text() for p in hand_written())
    linked = set(re.findall(r"reference/([\w-]+\.md)", guides))
    assert {p.name for p in ref.OUT.glob("*.md")} <= linked


@pytest.mark.parametrize("path", hand_written(), ids=lambda p: p.name)
def test_the_pages_name_only_what_exists(path):
    assert stale_names(path) == []


def test_stale_names_are_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "Run `routeplan plan --loads x --no-such-flag`, `jobs/plan.py --strategy`, "
        "`doctor --fix`; set `ROUTEPLAN_NOPE` and `ROUTEPLAN_HOME`; see `jobs/gone.py`, "
        "`jobs/<stage>.py`, `jobs/common.TABLE_NAMES`, `jobs/common.NOPE`; read `gold.nope` and "
        "`gold.plans`; GET `/streams/{stream}/nope` and `/routeplan/streams/clicks/latest`; the "
        "`strategy` Param and the Params `date`, `nope` and `stream`.\n"
        "```bash\nrouteplan plan --loads x \\\n    --in-a-code-block\ncurl --anything\n```\n"
    )
    assert stale_names(page) == [
        "flag --no-such-flag (in `routeplan plan --loads x --no-such-flag`)",
        "setting ROUTEPLAN_NOPE",
        "path jobs/gone.py",
        "path jobs/common.NOPE",
        "table gold.nope",
        "HTTP path /streams/x/nope",
        "flag --in-a-code-block (in `routeplan plan --loads x --in-a-code-block`)",
        "DAG Param nope",
    ]


def test_a_flag_is_checked_against_what_runs_it():
    assert unknown_flags("routeplan plan --max-moves 3") == []
    assert unknown_flags("routeplan show --max-moves 3") == ["--max-moves"]  # plan's, not show's
    assert unknown_flags("jobs/plan.py --strategy") == []
    assert unknown_flags("jobs/plan.py --loads") == ["--loads"]  # routeplan plan's, not the job's
    assert unknown_flags("clients/go/bin/route --table FILE [--partitions N]") == []
    assert unknown_flags("--py-files") == []  # spark-submit's (OTHER_TOOLS)
    assert unknown_flags("--nope") == ["--nope"]


# ---- the generator's pure functions ---------------------------------------------------------


def test_a_parser_becomes_its_usage_and_argument_table():
    parser = argparse.ArgumentParser(prog="tool")
    sub = parser.add_subparsers().add_parser("go", help="go somewhere")
    sub.add_argument("--speed", type=float, default=1.5, help="how fast (default %(default)s)")
    sub.add_argument("--mode", choices=("a", "b"), default="a", help="the mode")
    sub.add_argument("--dry-run", action="store_true", help="do nothing")
    sub.add_argument("--secret", help=argparse.SUPPRESS)
    sub.add_argument("target", help="where")
    page = ref.cli_page(parser)
    assert "| `tool go` | go somewhere |" in page
    assert "## `tool go`\n\ngo somewhere\n\n```text\ntool go [-h]" in page
    assert "| `--speed SPEED` | how fast (default 1.5) | `1.5` |" in page
    assert "| `--mode {a,b}` | the mode (one of: a, b) | `a` |" in page
    assert "| `--dry-run` | do nothing | – |" in page  # a switch has no default to show
    assert "| `target` | where | – |" in page
    assert "--secret" not in page.split("```text")[-1].split("```")[1]  # hidden from the table
    assert "-h, --help" not in page


def test_cells_hold_one_line_and_escape_pipes():
    assert ref.cell("a |\n b") == "a \\| b"
    assert ref.cell("") == ref.cell(None) == "–"
    assert ref.cell("<home>/x, `<home>/x`") == "&lt;home>/x, `<home>/x`"  # not an HTML tag
    assert ref.table(("x", "y"), [(1, "a|b")]) == "| x | y |\n|---|---|\n| 1 | a\\|b |\n"


def test_defaults_are_shown_as_written_and_without_the_checkout():
    assert ref.shown(ref.REPO / "var") == "`<checkout>/var`"
    assert ref.shown(("a", "b")) == '`["a", "b"]`'
    assert ref.shown(None) == "`null`" and ref.shown("") == '`""`'


def test_a_schema_says_its_type_and_range():
    schema = {"type": ["null", "integer"], "minimum": 0, "maximum": 10}
    assert (ref.param_type(schema), ref.allowed(schema)) == ("integer or null", "≥ 0; ≤ 10")
    assert ref.allowed({"enum": [None, "a"]}) == "null, a"
    assert ref.allowed({"type": "string", "minLength": 1}) == "at least 1 characters"
    assert ref.schema_type({"$ref": "#/$defs/budget"}) == "[budget](#budget)"
    page = ref.policy_page(
        {
            "title": "P",
            "properties": {"budget": {"$ref": "#/$defs/budget"}},
            "$defs": {"budget": {"properties": {"n": {"type": "integer", "minimum": 1}}}},
        },
        "schemas/p.json",
    )
    assert "| `budget` | [budget](#budget) | – | – |" in page
    assert "## budget\n\n| field | type | allowed | description |" in page
    assert "| `n` | integer | ≥ 1 | – |" in page


def test_dag_params_show_required_and_nullable_defaults():
    rows = [
        ref.ParamRow("d", "a", None, {"type": ["null", "string"], "title": "A"}, "empty: all"),
        ref.ParamRow("d", "b", ref._REQUIRED, {"type": "integer"}, None),
    ]
    page = ref.dag_params_page([("d", "the DAG", rows)])
    assert "| `a` | A | string or null | – | `null` | empty: all | – |" in page
    assert "| `b` | – | integer | – | none (required) | – | – |" in page


def test_strategies_list_each_parameter_with_its_meaning():
    from routeplan.planning.catalog import ParameterInfo

    row = ref.StrategyRow(
        "s", "key_routing", ("max_moves",), "S", None, "balance", (("k", "int", 2),)
    )
    page = ref.strategies_page([row], {"k": ParameterInfo(">= 1", "choices")})
    assert "| `s` | S | – | max_moves |" in page
    assert "| `k` | int | >= 1 | `2` | choices |" in page
    with pytest.raises(KeyError):  # a parameter the catalog does not explain fails the build
        ref.strategies_page([row], {})


def test_every_strategy_parameter_is_explained_once():
    from routeplan.planning.catalog import PARAMETERS

    used = {p for s in ref.collect_strategies() for p, _, _ in s.parameters}
    assert used == set(PARAMETERS)


def test_an_openapi_operation_lists_parameters_and_answers():
    document = {
        "info": {"title": "api", "version": "1"},
        "tags": [{"name": "t", "description": "things"}],
        "paths": {
            "/x/{id}": {
                "get": {
                    "tags": ["t"],
                    "summary": "One x",
                    "parameters": [
                        {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                    ],
                    "responses": {
                        "200": {"description": "ok", "content": {"application/json": {}}}
                    },
                }
            }
        },
    }
    page = ref.http_api_page(document)
    assert "## t\n\nThings.\n\n### GET `/x/{id}`\n\nOne x.\n\n" in page
    assert "| `id` | path | yes | string | – |" in page
    assert "| `200` | application/json | ok |" in page


def test_tables_by_layer_with_partitioning_and_migrations():
    page = ref.tables_page(
        ["bronze.a", "gold.b"], {"gold.b": [("c", "int")]}, {"bronze.a": ("date",)}
    )
    assert page.index("## bronze") < page.index("### `bronze.a`") < page.index("## gold")
    assert "### `bronze.a`\n\nPartitioned by `date`.\n\n" in page
    assert "### `gold.b`\n\nNot partitioned.\n\nColumns added by migrations:" in page
    assert "| `c` | `int` |" in page
    every = ref.tables_page(
        ["gold.b"], {"gold.b": [("c", "int")]}, {}, {"gold.b": [("a", "string"), ("c", "int")]}
    )
    assert "| `a` | `string` | first release |\n| `c` | `int` | a migration |" in every


def test_every_table_declares_its_columns_and_they_hold_the_migrations():
    """jobs/columns.py has every table, each column once; a migration's column is there with
    its type, after the first release's columns."""
    from jobs.columns import COLUMNS
    from jobs.common import PARTITION_COLUMNS, TABLE_NAMES
    from jobs.migrations import MIGRATIONS

    assert list(COLUMNS) == list(TABLE_NAMES)
    for name, columns in COLUMNS.items():
        names = [c for c, _ in columns]
        assert len(set(names)) == len(names), name
        assert set(PARTITION_COLUMNS.get(name, ())) <= set(names), name
        added = list(MIGRATIONS.get(name, ()))
        assert [c for c in columns if c in added] == added, name


def test_check_names_each_stale_page(tmp_path):
    (tmp_path / "a.md").write_text("old")
    (tmp_path / "gone.md").write_text("x")
    assert ref.stale({"a.md": "new", "b.md": "b"}, tmp_path) == ["a.md", "b.md", "gone.md"]
    assert ref.stale({"a.md": "old"}, tmp_path) == ["gone.md"]


def test_the_partitioning_the_page_lists_is_the_one_writes_use(tmp_path):
    """``write_delta`` partitions by ``PARTITION_COLUMNS`` and refuses another partitioning
    before it touches Spark (no session needed to see it)."""
    from jobs.common import PARTITION_COLUMNS, TABLE_NAMES, Tables, write_delta

    assert set(PARTITION_COLUMNS) <= set(TABLE_NAMES)
    with pytest.raises(ValueError, match=r"gold\.plans is partitioned by \('interval_start',\)"):
        write_delta(None, Tables(tmp_path), "gold.plans", "true", partition_by=("date",))
    with pytest.raises(ValueError, match=r"gold\.validations is partitioned by \(\)"):
        write_delta(None, Tables(tmp_path), "gold.validations", "true", partition_by=("date",))
