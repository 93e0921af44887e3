"""Bad command-line input: one line on stderr naming the value (and the file, with its line),
exit code 2 for usage errors and 1 for failures, never a traceback, never exit code 0."""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import stream_names
from hypothesis import given, settings

from routeplan.cli.main import build_parser, main
from routeplan.errors import OutputError
from routeplan.files import json_text
from routeplan.model.names import is_valid_name
from routeplan.model.table import PartitionAssignment, RoutingTable
from routeplan.model.workers import Workers
from routeplan.publishing.store import RoutingStore

ZIPF = "zipf:messages=200,keys=20"
SIM = ["simulate", "--events", ZIPF, "--workers", "2", "--strategy", "kg"]
PLAN = ["plan", "--loads", "{tmp}/loads.csv", "--workers", "2", "--strategy", "kg"]
BINPACK = [
    *("binpack", "--rates", "{tmp}/rates.csv"),
    *("--consumer-capacity", "100", "--strategies", "mwf"),
]
GENERATE = ["generate", "--landing", "{tmp}/landing", "--workers-out", "{tmp}/w.json"]
GENERATE += ["--events", "20", "--keys", "5", "--streams", "a", "--files", "1"]
BAD_NAME = "invalid stream name '../../x'"

# name → (argv with {tmp} for the folder of the input files, exit code, fragments of stderr)
CASES: dict[str, tuple[list[str], int, tuple[str, ...]]] = {
    # ---- the examples of the reliability campaign
    "plan unknown strategy": (
        ["plan", "--loads", "{tmp}/loads.csv", "--workers", "2", "--strategy", "nope"],
        2,
        ("unknown key-routing strategy 'nope'", "known: albic", "milp"),
    ),
    "plan a partition strategy": (
        [*PLAN[:-1], "mwf"],
        2,
        ("'mwf' assigns partitions to consumers", "routeplan binpack"),
    ),
    "loads key group too large": (
        [*PLAN[:2], "{tmp}/big.csv", *PLAN[3:]],
        1,
        ("big.csv:3:", "'99999999999'", "0..16777215"),
    ),
    "zipf z=nan": ([*SIM[:2], ZIPF + ",z=nan", *SIM[3:], "--json"], 2, ("z:", "'nan'", ">= 0")),
    "utilisation nan": ([*SIM, "--utilisation", "nan", "--json"], 2, ("--utilisation", "'nan'")),
    "messages -1": ([*SIM, "--messages", "-1"], 2, ("--messages", "'-1'", ">= 1")),
    "plan time limit -5": ([*PLAN, "--time-limit", "-5"], 2, ("--time-limit", "'-5'", "> 0")),
    "empty events csv": (
        [*SIM[:2], "{tmp}/empty.csv", *SIM[3:]],
        1,
        ("empty.csv: empty file",),
    ),
    "loads not utf-8": ([*PLAN[:2], "{tmp}/latin1.csv", *PLAN[3:]], 1, ("latin1.csv:3:", "UTF-8")),
    "rates not utf-8": ([*BINPACK[:2], "{tmp}/latin1.csv", *BINPACK[3:]], 1, ("latin1.csv:3:",)),
    "events not utf-8": (
        [*SIM[:2], "{tmp}/latin1.jsonl", *SIM[3:]],
        1,
        ("latin1.jsonl:2:", "not UTF-8"),
    ),
    "zipf messages=abc": (
        [*SIM[:2], "zipf:messages=abc", *SIM[3:]],
        2,
        ("messages:", "'abc'", "an integer in 1.."),
    ),
    "versions of no such stream": (
        ["versions", "--stream", "nosuch"],
        1,
        ("stream 'nosuch'", "no routing table"),
    ),
    "versions --stream ../../x": (["versions", "--stream", "../../x"], 2, (BAD_NAME,)),
    "show --stream ../../x": (["show", "--stream", "../../x"], 2, (BAD_NAME,)),
    "diff --stream ../../x": (["diff", "--stream", "../../x", "1", "2"], 2, (BAD_NAME,)),
    "rollback --stream ../../x": (
        ["rollback", "--stream", "../../x", "--version", "1", "--reason", "r"],
        2,
        (BAD_NAME,),
    ),
    "simulate --stream ../../x": ([*SIM, "--stream", "../../x"], 2, (BAD_NAME,)),
    "plan --stream ../../x": ([*PLAN, "--stream", "../../x"], 2, (BAD_NAME,)),
    "generate --streams ../../x": ([*GENERATE[:-4], "--streams", "../../x"], 2, (BAD_NAME,)),
    "generate --upstream ../../x": ([*GENERATE, "--upstream", "../../x"], 2, (BAD_NAME,)),
    "generate: stream=../../x": (
        [*SIM[:2], "generate:events=50,stream=../../x", *SIM[3:]],
        2,
        (BAD_NAME,),
    ),
    # ---- numbers on the command line (argparse types shared by every subcommand)
    "no command": ([], 2, ("required: command",)),
    "simulate workers 0": ([*SIM[:4], "0", *SIM[5:]], 2, ("--workers", "'0'", "1..65536")),
    "simulate seed -1": ([*SIM, "--seed", "-1"], 2, ("--seed", "'-1'")),
    "simulate report-every 2.5": ([*SIM, "--report-every", "2.5"], 2, ("'2.5'", "an integer")),
    "simulate unknown strategy": (
        [*SIM[:-1], "milp"],
        2,
        ("unknown strategy 'milp'", "known: kg"),
    ),
    "compare unknown strategy": (
        ["compare", "--events", ZIPF, "--workers", "2", "--strategies", "kg,nope"],
        2,
        ("unknown strategy 'nope'",),
    ),
    "plan workers 0": ([*PLAN[:4], "0", *PLAN[5:]], 2, ("--workers", "'0'", "1..65536")),
    "plan workers too many": ([*PLAN[:4], "100000", *PLAN[5:]], 2, ("'100000'", "1..65536")),
    "plan num key groups 0": ([*PLAN, "--num-key-groups", "0"], 2, ("--num-key-groups", "'0'")),
    "plan load share 2": ([*PLAN, "--max-migrated-load-share", "2"], 2, ("'2'", "[0, 1]")),
    "plan max moves -1": ([*PLAN, "--max-moves", "-1"], 2, ("--max-moves", "'-1'")),
    "show version -3": (["show", "--stream", "s", "--version", "-3"], 2, ("'-3'", "version")),
    "binpack capacity nan": (
        [*BINPACK[:4], "nan", *BINPACK[5:]],
        2,
        ("--consumer-capacity", "'nan'"),
    ),
    "binpack deprecated capacity nan": (  # the old spelling is checked the same way
        [*BINPACK[:3], "--capacity", "nan", "--algorithm", "mwf"],
        2,
        ("--capacity", "'nan'"),
    ),
    "binpack unknown strategy": (
        [*BINPACK[:-1], "mwf,nope"],
        2,
        ("--strategies", "'nope'", "known: nf"),
    ),
    "binpack rebalance >= iteration": (
        [*BINPACK, "--rebalance-s", "40"],
        2,
        ("--rebalance-s 40", "--iteration-s 30"),
    ),
    "generate zipf nan": ([*GENERATE, "--zipf", "nan"], 2, ("--zipf", "'nan'")),
    "generate drift 2": ([*GENERATE, "--drift", "2"], 2, ("--drift", "'2'", "[0, 1]")),
    "generate bad date": ([*GENERATE, "--date", "2026-13-01"], 2, ("'2026-13-01'", "YYYY-MM-DD")),
    # ---- K=V specs: one parser, a type per key
    "zipf messages too many": (
        [*SIM[:2], "zipf:messages=1e12", *SIM[3:]],
        2,
        ("messages:", "'1e12'"),
    ),
    "zipf unknown field": (
        [*SIM[:2], "zipf:n=5", *SIM[3:]],
        2,
        ("unknown zipf fields: ['n']", "known: messages, keys, z, seed"),
    ),
    "generate: events=abc": (
        [*SIM[:2], "generate:events=abc", *SIM[3:]],
        2,
        ("events:", "'abc'"),
    ),
    "generate: landing=x": (
        [*SIM[:2], "generate:landing=x", *SIM[3:]],
        2,
        ("unknown generator fields: ['landing']", "known: events"),
    ),
    "capacities z=nan": ([*SIM, "--capacities", "y=1,z=nan"], 2, ("z:", "'nan'", "> 0")),
    "capacities y > workers": ([*SIM, "--capacities", "y=3,z=2"], 2, ("y=3", "2 workers")),
    "capacities abc": ([*SIM, "--capacities", "1,abc"], 2, ("capacities", "'abc'")),
    "param NaN": ([*SIM[:-1], "cg", "--param", "epsilon=NaN"], 2, ("epsilon", "NaN", "finite")),
    "param 1e999": ([*PLAN[:-1], "cg", "--param", "epsilon=1e999"], 2, ("1e999", "finite")),
    "param of the wrong type": (
        [*SIM[:-1], "cg", "--param", "epsilon=abc"],
        2,
        ('epsilon="abc"', "takes a finite number"),
    ),
    "param the strategy does not take": (
        [*SIM, "--param", "d=2"],
        2,
        ("--param d", "'kg' takes no such parameter"),
    ),
    "param without =": ([*PLAN, "--param", "epsilon"], 2, ("expected K=V", "'epsilon'")),
    "param out of the strategy's range": (
        [*SIM[:-1], "pkg", "--param", "d=0"],
        2,
        ("--param d=0: pkg: d must be >= 1",),
    ),
    # ---- input files: the file (and line) named, exit code 1
    "loads missing": ([*PLAN[:2], "{tmp}/nope.csv", *PLAN[3:]], 1, ("nope.csv: no such file",)),
    "loads bad number": ([*PLAN[:2], "{tmp}/x.csv", *PLAN[3:]], 1, ("x.csv:3:", "load", "'x'")),
    "loads fractional key group": (
        [*PLAN[:2], "{tmp}/half.csv", *PLAN[3:]],
        1,
        ("half.csv:2:", "'1.5'", "not an integer"),
    ),
    "loads negative key group": (
        [*PLAN[:2], "{tmp}/neg.csv", *PLAN[3:]],
        1,
        ("neg.csv:2:", "'-1'"),
    ),
    "loads key group above --num-key-groups": (
        [*PLAN, "--num-key-groups", "1"],
        1,
        ("loads.csv:3:", "'1'", "--num-key-groups 1"),
    ),
    "loads extra field": ([*PLAN[:2], "{tmp}/wide.csv", *PLAN[3:]], 1, ("wide.csv:3:", "3 fields")),
    "loads no load column": (
        [*PLAN[:2], "{tmp}/noload.csv", *PLAN[3:]],
        1,
        ("noload.csv:2:", "no load column"),
    ),
    "loads bad JSON line": (
        [*PLAN[:2], "{tmp}/broken.jsonl", *PLAN[3:]],
        1,
        ("broken.jsonl:2:", "not JSON"),
    ),
    "loads worker name": (
        [*PLAN[:2], "{tmp}/owner.csv", *PLAN[3:]],
        1,
        ("owner.csv:2:", "invalid worker name '../w'"),
    ),
    "flow key group outside the loads": (
        [*PLAN, "--flow", "{tmp}/flow.csv"],
        1,
        ("flow.csv:2:", "key_group '9'", "0..1"),
    ),
    "workers file not JSON": (
        [*PLAN[:4], "{tmp}/loads.csv", *PLAN[5:]],
        1,
        ("loads.csv:1:", "not JSON"),
    ),
    "current missing": ([*PLAN, "--current", "{tmp}/none.json"], 1, ("none.json: no such file",)),
    "current not a table": (
        [*PLAN, "--current", "{tmp}/object.json"],
        1,
        ("object.json:", "routing-table"),
    ),
    "rates partition too large": (
        [*BINPACK[:2], "{tmp}/bigrates.csv", *BINPACK[3:]],
        1,
        ("bigrates.csv:3:", "partition", "'99999999999'"),
    ),
    "events missing": ([*SIM[:2], "{tmp}/gone", *SIM[3:]], 1, ("no such events file", "gone")),
    "show a garbage LATEST": (
        ["show", "--stream", "broken"],
        1,
        ("broken/LATEST", "'garbage'"),
    ),
    "events of no such stream": (
        [*SIM[:2], "{tmp}/events.jsonl", *SIM[3:], "--stream", "nosuch"],
        1,
        ("events.jsonl", "stream 'nosuch'"),
    ),
    # ---- a new user's first tries: every subcommand says what is wrong and where it looked
    "events blank": ([*SIM[:2], "", *SIM[3:]], 2, ("--events", "zipf:", "got ''")),
    "rates without a partition column": (
        [*BINPACK[:2], "{tmp}/loads.csv", *BINPACK[3:]],
        1,
        ("loads.csv:2:", "no partition or rate column", "found: key_group, load"),
    ),
    "diff without versions": (["diff", "--stream", "s"], 2, ("required: --from-version",)),
    "diff with both spellings": (
        ["diff", "--stream", "s", "1", "--from-version", "2"],
        2,
        ("--from-version/--to-version or positional versions, not both",),
    ),
    "diff version 0": (["diff", "--stream", "s", "--from-version", "0"], 2, ("'0'", ">= 1")),
    "diff of no such stream": (
        ["diff", "--stream", "nosuch", "--from-version", "1"],
        1,
        ("no routing table v1 for stream 'nosuch'", "home/routing"),
    ),
    "rollback of no such stream": (
        ["rollback", "--stream", "nosuch", "--version", "1", "--reason", "r"],
        1,
        ("no routing table v1 for stream 'nosuch'", "home/routing"),
    ),
    "doctor of no such stream": (
        ["doctor", "--stream", "nosuch"],
        1,
        ("no folder for stream 'nosuch'", "home/routing", "streams: broken"),
    ),
    "doctor --stream ../../x": (["doctor", "--stream", "../../x"], 2, (BAD_NAME,)),
    "hold of no such stream": (
        ["hold", "--stream", "nosuch"],
        1,
        ("no routing table published for stream 'nosuch'", "home/routing"),
    ),
    "hold --clear without a stream": (["hold", "--clear"], 2, ("--clear needs --stream",)),
    "hold --clear and --list": (
        ["hold", "--stream", "s", "--clear", "--list"],
        2,
        ("--list: not allowed with argument --clear",),
    ),
    "hold with a blank reason": (
        ["hold", "--stream", "noloads", "--reason", " "],
        2,
        ("a hold needs a reason",),
    ),
    "hold --stream ../../x": (["hold", "--stream", "../../x"], 2, (BAD_NAME,)),
    "outcomes --days 0": (["outcomes", "--days", "0"], 2, ("--days", "'0'")),
    "versions of a routing store that is a file": (
        ["versions", "--routing", "{tmp}/loads.csv"],
        1,
        ("loads.csv: not a directory",),
    ),
    "show of a routing store that is a file": (
        ["show", "--stream", "s", "--routing", "{tmp}/loads.csv"],
        1,
        ("loads.csv: not a directory",),
    ),
    "plan --plot into a folder": ([*PLAN, "--plot", "{tmp}"], 1, ("Is a directory",)),
    "show --plot of a table without loads": (
        ["show", "--stream", "noloads", "--plot", "{tmp}/x.png"],
        1,
        ("--plot: noloads v1: the table records no planning load",),
    ),
    "serve port too large": (["serve", "--port", "70000"], 2, ("--port", "'70000'")),
    "generate into a file": (
        [*GENERATE[:2], "{tmp}/loads.csv/landing", *GENERATE[3:]],
        1,
        ("loads.csv/landing",),
    ),
}


@pytest.fixture
def inputs(tmp_path, monkeypatch) -> Path:
    """The input files the cases name, in an empty $ROUTEPLAN_HOME."""
    monkeypatch.setenv("ROUTEPLAN_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ROUTEPLAN_ROUTING", raising=False)
    files = {
        "loads.csv": "key_group,load\n0,1\n1,2\n",
        "big.csv": "key_group,load\n0,1\n99999999999,2\n",
        "x.csv": "key_group,load\n0,1\n1,x\n",
        "half.csv": "key_group,load\n1.5,1\n",
        "neg.csv": "key_group,load\n-1,1\n",
        "wide.csv": "key_group,load\n0,1\n1,2,3\n",
        "noload.csv": "key_group,weight\n0,1\n",
        "broken.jsonl": '{"key_group": 0, "load": 1}\n{"key_group": 1,\n',
        "owner.csv": "key_group,load,worker\n0,1,../w\n",
        "flow.csv": "upstream_key_group,key_group,messages\n0,9,3\n",
        "object.json": "{}\n",
        "empty.csv": "",
        "bigrates.csv": "partition,rate\n0,1\n99999999999,2\n",
        "rates.csv": "partition,rate\n0,10\n1,20\n",
        "events.jsonl": '{"key": "a", "stream": "s"}\n',
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "home" / "routing" / "broken").mkdir(parents=True)
    (tmp_path / "home" / "routing" / "broken" / "LATEST").write_text("garbage\n")
    store = RoutingStore(tmp_path / "home" / "routing")
    store.publish(PartitionAssignment("noloads", "ffd", Workers.homogeneous(2), {0: "w1"}))
    (tmp_path / "latin1.csv").write_bytes(b"key_group,load\n0,1\n1,2\xe9\n")
    (tmp_path / "latin1.jsonl").write_bytes(b'{"key": "a"}\n{"key": "caf\xe9"}\n')
    return tmp_path


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_one_line_naming_it_with_its_exit_code(case, inputs, capsys):
    argv, code, fragments = CASES[case]
    assert main([a.replace("{tmp}", str(inputs)) for a in argv]) == code
    out, err = capsys.readouterr()
    assert "Traceback" not in err and out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("routeplan"), err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


@pytest.mark.parametrize("case", ["plan unknown strategy", "loads key group too large"])
def test_the_console_script_prints_no_traceback(case, inputs):
    argv, code, fragments = CASES[case]  # both were tracebacks (KeyError, MemoryError)
    script = "import sys; from routeplan.cli.main import main; sys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-c", script, *(a.replace("{tmp}", str(inputs)) for a in argv)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == code
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert done.stderr.count("\n") == 1 and all(f in done.stderr for f in fragments)


def test_version_is_the_package_version(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit:
        main(["--version"])
    assert exit.value.code == 0
    assert capsys.readouterr().out.strip() == f"routeplan {version('routeplan')}"


def test_json_output_never_holds_nan():
    assert json.loads(json_text({"a": [1.0, None]})) == {"a": [1.0, None]}
    with pytest.raises(OutputError, match=r"results\.1\.imbalance"):
        json_text({"results": [{}, {"imbalance": float("nan")}]})


def test_a_too_deep_current_document_is_one_line_naming_the_file(tmp_path, capsys):
    loads = tmp_path / "loads.csv"
    loads.write_text("key_group,load\n0,1\n1,2\n")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    code = main(
        [
            "plan",
            "--loads",
            str(loads),
            "--strategy",
            "kg",
            "--workers",
            "2",
            "--current",
            str(deep),
        ]
    )
    err = capsys.readouterr().err
    assert code == 1 and "deep.json: JSON nested deeper than 64 levels" in err
    assert err.count("\n") == 1


@settings(max_examples=150, deadline=None)
@given(name=stream_names())
def test_any_stream_name_on_the_command_line_is_refused_or_not_found(name, tmp_path_factory):
    """The CLI boundary of the name rule: exit 2 naming the rule, or 1 (no such stream) —
    never a traceback, never a path outside the routing root."""
    import contextlib
    import io

    root = tmp_path_factory.mktemp("routing")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["show", "--routing", str(root), f"--stream={name}"])
    text = err.getvalue()
    assert "Traceback" not in text and text.count("\n") == 1
    if is_valid_name(name):
        assert code == 1 and "no routing table" in text
    else:
        assert code == 2 and "characters of A-Z a-z 0-9" in text
    assert list(root.iterdir()) == []  # nothing created, inside or beside the root


# ---- help: what each subcommand does, and examples that parse


def subcommands() -> dict[str, argparse.ArgumentParser]:
    return build_parser()._subparsers._group_actions[0].choices


def examples(parser: argparse.ArgumentParser) -> list[str]:
    """The ``routeplan …`` commands of a parser's ``Examples:`` epilog (continuations joined)."""
    text = (parser.epilog or "").partition("Examples:\n")[2].replace("\\\n", " ")
    return [line.strip() for line in text.splitlines() if line.strip().startswith("routeplan ")]


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_subcommand_has_a_description_and_examples_that_parse(name, capsys):
    with pytest.raises(SystemExit) as done:
        main([name, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    parser = subcommands()[name]
    assert parser.description and len(parser.description) > 60, name
    assert parser.description.splitlines()[0] in text  # the lines as written
    assert "Examples:" in text
    found = examples(parser)
    assert found and found[0].split()[:2] == ["routeplan", name], found
    for example in found:
        args = build_parser().parse_args(shlex.split(example)[1:])  # flags and values valid
        assert args.command == example.split()[1]
    assert all(len(line) <= 100 for line in parser.epilog.splitlines())


def test_diff_positional_versions_are_deprecated_with_one_warning(tmp_path, capsys):
    store = RoutingStore(tmp_path)
    for owners in (("w0", "w1"), ("w1", "w1")):
        loads = {"key_group_load": [1.0, 2.0], "hot_key_load": {}}
        store.publish(RoutingTable("s", "kg", Workers.homogeneous(2), owners, planning_load=loads))
    common = ["diff", "--routing", str(tmp_path), "--stream", "s"]
    assert main([*common, "--from-version", "1", "--to-version", "2"]) == 0
    new = capsys.readouterr()
    assert new.err == ""
    assert main([*common, "1", "2"]) == 0
    old = capsys.readouterr()
    assert old.out == new.out and "key_group" in new.out
    assert old.err == (
        "routeplan diff: warning: positional versions are deprecated, use --from-version 1 "
        "--to-version 2\n"
    )
    assert main([*common, "v1"]) == 0  # the newer one defaults to LATEST, as before
    assert capsys.readouterr().out == new.out


def test_deprecated_binpack_flags_warn_once_each(inputs, capsys):
    rates = str(inputs / "rates.csv")
    argv = ["binpack", "--rates", rates, "--capacity", "100", "--algorithm", "mwf,bfd"]
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "routeplan binpack: warning: --algorithm is deprecated, use --strategies",
        "routeplan binpack: warning: --capacity is deprecated, use --consumer-capacity",
    ]


def test_versions_of_an_empty_store_says_so(tmp_path, capsys):
    assert main(["versions", "--routing", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"no routing table published in {tmp_path}\n"
    assert main(["versions", "--routing", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
