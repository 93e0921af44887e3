"""``routeplan`` command line: sample logs, planning, and the published routing tables."""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from routeplan.cli import (
    binpack,
    config,
    docs,
    doctor,
    generate,
    hold,
    outcomes,
    plan,
    route,
    show,
    simulate,
    vectors,
    versions,
)
from routeplan.errors import InputError, OutputError, UsageError
from routeplan.publishing.store import BrokenLatestError, HeldError, StaleLatestError


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose errors are ``UsageError``\\ s: ``main`` prints them on one line
    (subparsers are of the same class, so they name the subcommand)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # descriptions and "Examples:" epilogs keep their lines
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, prog=self.prog)

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        # Python 3.11 drops the value of "--flag=--" (it takes "--" for the end of options) and
        # hands the flag an empty list, unchecked by its type; 3.12 reads "--" as the value.
        if action.option_strings and action.nargs is None and arg_strings == ["--"]:
            return self._get_value(action, "--")
        return super()._get_values(action, arg_strings)


def package_version() -> str:
    """routeplan's installed version (``unknown`` when it runs from a bare checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("routeplan")
    except PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="routeplan",
        description="Plan where the messages of keyed streams go, publish the routing tables and\n"
        "inspect them; simulate and compare the strategies.",
        epilog="""\
Examples:
  routeplan generate --date 2026-01-05
  routeplan plan --loads loads.csv --workers 8 --strategy milp --max-moves 20 --plot plan.png
  routeplan show --stream clicks --plot clicks.png
  routeplan SUBCOMMAND --help""",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    # One module per subcommand, each adding its own parser (and its ``func``).
    generate.add_parser(sub)  # routeplan generate: sample logs and a workers file
    show.add_parser(sub)  # routeplan show: one published table
    plan.add_parser(sub)  # routeplan plan: any batch strategy on a loads file
    binpack.add_parser(sub)  # routeplan binpack: partitions onto consumers over time (paper 002)
    versions.add_parsers(sub)  # routeplan diff / explain / rollback / versions / serve
    doctor.add_parser(sub)  # routeplan doctor: a store's state after faults, --fix
    hold.add_parser(sub)  # routeplan hold: publish nothing new for a stream; --clear, --list
    outcomes.add_parser(sub)  # routeplan outcomes: what published versions did, the guard
    simulate.add_parsers(sub)  # routeplan simulate / compare: online strategies replayed
    config.add_parser(sub)  # routeplan config: every setting, its variable and value
    docs.add_parser(sub)  # routeplan docs: serve the validate job's Data Docs
    route.add_parser(sub)  # routeplan route: keys on stdin routed by a table file
    vectors.add_parser(sub)  # routeplan vectors: the clients' shared test vectors
    return parser


def check_settings() -> None:
    """An invalid ``ROUTEPLAN_*`` variable: a ``UsageError`` before the command runs (after its
    arguments are parsed, so ``--help`` never imports the settings' pydantic)."""
    from routeplan import settings

    settings.current()


def main(argv: list[str] | None = None) -> int:
    """Run one command; a bad input is one line on stderr and exit code 2 (the command line is
    wrong: ``UsageError``, any other ``ValueError``) or 1 (an input file, the store or the
    output: ``InputError``, missing or undecodable files, ``OSError``), never a traceback."""
    prog = "routeplan"
    try:
        args = build_parser().parse_args(argv)
        check_settings()
        prog = f"routeplan {args.command}"
        return args.func(args)
    except UsageError as err:
        return _fail(err.prog or prog, err, 2)
    except (
        InputError,
        UnicodeDecodeError,
        OutputError,
        OSError,
        StaleLatestError,
        BrokenLatestError,
        HeldError,
    ) as err:
        return _fail(prog, err, 1)
    except MemoryError as err:  # a size no limit caught: numpy names what it could not allocate
        return _fail(prog, str(err) or "out of memory", 1)
    except ValueError as err:
        return _fail(prog, err, 2)


def _fail(prog: str, err: object, code: int) -> int:
    """Print ``prog: error: message`` as one line on stderr; return ``code``."""
    if isinstance(err, OSError) and err.filename and err.strerror:  # not "[Errno 2] …"
        err = f"{err.filename}: {err.strerror}"
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    message = lines[0] if lines else type(err).__name__
    for line in lines[1:]:  # e.g. a schema's violations, one a line
        message += (" " if message.endswith(":") else "; ") + line
    print(f"{prog}: error: {message}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
