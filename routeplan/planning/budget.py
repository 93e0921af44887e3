"""The budget of a plan, read one way from wherever it is written.

A budget reaches a plan from a policy file (``budget:``), the plan job's flags (the DAG's Trigger
form renders them), a DAG run's conf, ``routeplan plan``'s flags and, in old spellings, from
strategy parameters. Every one of them goes through ``read_budget``, so the same value means
the same limit, with the same warning or error, everywhere.

Spellings (``Budget``'s fields are the current ones):

=============================  ==========================================================
current                        ``max_moves``, ``max_migrated_load_share``,
                               ``max_migration_cost``, ``migration_cost_unit``,
                               ``time_limit_s``
deprecated strategy parameter  ``max_migrations`` → ``max_moves``; ``migration_cost`` →
                               ``migration_cost_unit``; ``max_migration_cost`` (a parameter)
                               → the budget's ``max_migration_cost``
deprecated unit                ``keys`` → ``distinct_keys``
=============================  ==========================================================

A deprecated spelling is read and reported in ``BudgetReading.notes`` (the caller prints or
logs them as deprecation warnings); a limit given both ways with different values, an unknown
field and a value out of range are ``ValueError`` naming the field. A value may be text (a
command line, a form): ``""``, ``None`` and ``null`` mean "no limit".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from routeplan.model.plan import MIGRATION_COST_UNITS, Budget

# Strategy parameters that were budget limits before the budget held them: old name → field.
OLD_PARAMETERS: Mapping[str, str] = {
    "max_migrations": "max_moves",
    "max_migration_cost": "max_migration_cost",
    "migration_cost": "migration_cost_unit",
}
# Old values of ``migration_cost_unit``.
UNIT_ALIASES: Mapping[str, str] = {"keys": "distinct_keys"}
# Every value ``migration_cost_unit`` accepts, old ones included (for a form's or flag's choices).
UNIT_SPELLINGS = (*MIGRATION_COST_UNITS, *UNIT_ALIASES)
BUDGET_FIELDS = tuple(f.name for f in fields(Budget))
_EMPTY = ("", "None", "null")


@dataclass(frozen=True)
class BudgetReading:
    """What ``read_budget`` read: the budget, the strategy parameters left once the old budget
    spellings were taken out of them, and one deprecation note per old spelling used."""

    budget: Budget
    params: dict[str, Any]
    notes: tuple[str, ...] = ()


def read_budget(
    given: Mapping[str, Any] | None = None,
    params: Mapping[str, Any] | None = None,
    base: Budget | None = None,
) -> BudgetReading:
    """``base`` (default: no limits) with the budget fields in ``given`` and the old budget
    spellings among strategy ``params``.

    ``given`` maps ``Budget`` field names to values (numbers, or text; empty text or None leaves
    the field at ``base``'s value, which for a limit means none). Raises ``ValueError`` naming
    the field for an unknown field, a value that is not a number in range, an unknown unit, or
    a limit given both as a field and as an old parameter with different values."""
    budget = base or Budget()
    notes: list[str] = []
    changes: dict[str, Any] = {}
    for name, value in (given or {}).items():
        if name not in BUDGET_FIELDS:
            raise ValueError(f"{name}: not a budget field (one of {', '.join(BUDGET_FIELDS)})")
        if value is None or (isinstance(value, str) and value.strip() in _EMPTY):
            continue
        changes[name] = _field_value(name, value, notes)
    rest = dict(params or {})
    for old, name in OLD_PARAMETERS.items():
        value = rest.pop(old, None)
        if value is None:
            continue
        value = _field_value(name, value, notes)
        current = changes.get(name, getattr(budget, name))
        default = Budget.__dataclass_fields__[name].default
        if current not in (None, default) and current != value:  # set both ways, differently
            raise ValueError(f"{old}={value!r} contradicts the budget's {name}={current!r}")
        changes[name] = value
        notes.append(f"{old} is deprecated: it is the budget's {name} now")
    try:
        budget = replace(budget, **changes) if changes else budget
    except ValueError as err:  # Budget's own checks name the field
        raise ValueError(str(err)) from None
    return BudgetReading(budget, rest, tuple(dict.fromkeys(notes)))


def migration_cost_unit(text: str) -> str:
    """The unit ``text`` names (``keys`` → ``distinct_keys``); ValueError for another word.
    (The deprecation note is ``read_budget``'s: pass the text there to have it said.)"""
    unit = UNIT_ALIASES.get(text, text)
    if unit not in MIGRATION_COST_UNITS:
        raise ValueError(
            f"migration_cost_unit: {text!r} is not one of {', '.join(MIGRATION_COST_UNITS)}"
        )
    return unit


def _field_value(name: str, value: Any, notes: list[str]) -> Any:
    """``value`` as field ``name``'s type: an int, a finite number or a unit."""
    if name == "migration_cost_unit":
        if not isinstance(value, str):
            raise ValueError(f"migration_cost_unit: {value!r} is not one of the units")
        unit = migration_cost_unit(value.strip())
        if unit != value.strip():
            notes.append(f"migration_cost_unit {value.strip()} is deprecated: it is {unit} now")
        return unit
    number = _number(name, value)
    if name == "max_moves":
        if not float(number).is_integer():
            raise ValueError(f"max_moves must be an integer >= 0, got {value!r}")
        return int(number)
    return float(number)


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return value
