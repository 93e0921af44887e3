"""``routeplan … --help`` answers at once: building the CLI's parser and printing the help of
every command imports none of the heavy libraries a command may need when it runs."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import routeplan
import routeplan_client
from routeplan.cli.main import build_parser

HEAVY = ("pandas", "pyspark", "pulp", "matplotlib")

# each --help in turn, in one fresh interpreter: the heavy packages imported after each
SCRIPT = """\
import argparse, contextlib, io, json, sys
from routeplan.cli.main import build_parser, main

heavy = set(sys.argv[1:])
parser = build_parser()
commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
imported = {}
for argv in [["--help"], *([name, "--help"] for name in commands)]:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        main(argv)
    imported[" ".join(argv)] = sorted(heavy & {name.split(".")[0] for name in sys.modules})
print(json.dumps(imported))
"""


def subcommands() -> list[str]:
    parser = build_parser()
    return list(
        next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    )


def test_no_help_imports_a_heavy_library():
    # the routeplan and routeplan_client this test imports, not another installed copy
    here = [str(Path(package.__file__).parents[1]) for package in (routeplan, routeplan_client)]
    path = os.pathsep.join([*here, os.environ.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *HEAVY],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    imported = json.loads(done.stdout)
    assert list(imported) == ["--help", *(f"{name} --help" for name in subcommands())]
    assert len(imported) > 10
    assert not any(imported.values()), {argv: mods for argv, mods in imported.items() if mods}
