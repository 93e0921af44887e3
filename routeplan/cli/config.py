"""``routeplan config``: every setting (``ROUTEPLAN_*``), its value now and where it came from."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

from routeplan import storage
from routeplan.files import json_text

if TYPE_CHECKING:
    from routeplan.settings import Settings

DESCRIPTION = """\
Print every routeplan setting: its name, its environment variable, its value in this environment,
where that value came from (the environment, or the default), the default and what it means.
The CLI, the Spark jobs, the Airflow plugins and the scripts all read them the same way
(routeplan/settings.py); an empty variable counts as unset."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "config",
        help="every ROUTEPLAN_* setting: value, source, default, meaning",
        description=DESCRIPTION,
        epilog="""\
Examples:
  routeplan config
  ROUTEPLAN_HOME=s3://bucket/prefix routeplan config --json""",
    )
    s.add_argument(
        "--json",
        action="store_true",
        help="a JSON list, one object per setting: name, variable, value, source, default, "
        "description",
    )
    s.set_defaults(func=run)


def setting_rows(current: Settings) -> list[dict[str, Any]]:
    """One row per setting of ``current``, in declaration order; a value or default that is no
    location nor text (an unset ``py_files``) is ``None``."""
    from routeplan import settings

    rows = []
    for name, field in settings.Settings.model_fields.items():
        value, default = getattr(current, name), field.default
        if name == "routing":  # unset, the routing store follows the home
            default = storage.join(current.home, "routing")
            value = value or default
        rows.append(
            {
                "name": name,
                "variable": settings.Settings.variable(name),
                "value": _text(value),
                "source": "environment" if name in current.model_fields_set else "default",
                "default": _text(default),
                "description": field.description,
            }
        )
    return rows


def unknown_variables(rows: list[dict[str, Any]]) -> list[str]:
    """``ROUTEPLAN_*`` variables of the environment that name no setting (a typo?)."""
    from routeplan import settings

    known = {row["variable"] for row in rows}
    return sorted(
        name
        for name in os.environ
        if name.upper().startswith(settings.ENV_PREFIX) and name.upper() not in known
    )


def run(args: argparse.Namespace) -> int:
    from routeplan import settings

    rows = setting_rows(settings.current())
    for name in unknown_variables(rows):
        print(f"routeplan config: note: {name} is set but names no setting", file=sys.stderr)
    if args.json:
        print(json_text(rows, indent=1))
        return 0
    width = max(60, shutil.get_terminal_size().columns)
    name_width = max(len(row["name"]) for row in rows) + 2
    variable_width = max(len(row["variable"]) for row in rows) + 2
    print(f"{'SETTING':<{name_width}}{'VARIABLE':<{variable_width}}{'SOURCE':<13}VALUE")
    indent = " " * name_width
    for row in rows:
        value = "(none)" if row["value"] is None else row["value"]
        print(
            f"{row['name']:<{name_width}}{row['variable']:<{variable_width}}{row['source']:<13}{value}"
        )
        lines = [row["description"]]
        if row["source"] == "environment":
            lines.append(f"default: {'(none)' if row['default'] is None else row['default']}")
        for line in lines:
            print(textwrap.fill(line, width, initial_indent=indent, subsequent_indent=indent))
    return 0


def _text(value: str | Path | None) -> str | None:
    return None if value is None else str(value)
