"""Why a published version routes as it does: every move against the version it replaced, the
load it carries, where it went and which overloaded worker it relieved; the budget it used
against the limits it was planned under; the strategy's objective and its terms; for a version
planned on the forecast, the peak excess it was published predicting with its band, and how many
moves that did not pay were given back before publishing
(``routeplan.streams.rebalance.prune``).

``explain_version(table, parent, budget=…)`` answers for one version (``parent``: the version it
replaced, None when it is the first or no longer stored — then there are no moves to explain,
and ``note`` says why). Loads are the version's own planning loads (``planning_load``: the
window it was planned on), the same basis ``routeplan diff`` and the worker-load plot use, so
the numbers agree. A worker is *overloaded* above 1.0: its fair share (key routing) or the bin
capacity C (partitions). A move *relieves* a worker it leaves that was overloaded under the
parent's routing.

The JSON form is ``schemas/routing_explain.schema.json``; ``routeplan explain``, ``GET
/streams/{stream}/versions/{version}/explain`` and the Routing page show it. Where it came from
(``published_by``) is read from the version itself: a first version, a night's plan, a rollback
someone asked for, or the regression guard's rollback (its reason starts ``rollback to vN:
regression:``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from routeplan.model.table import Table
from routeplan.planning.catalog import describe
from routeplan.planning.metrics import relative_worker_loads
from routeplan.publishing.diff import diff_tables

__all__ = ["explain_version", "format_explanation", "published_by"]

OVERLOADED = 1.0 + 1e-9  # relative load above which a worker is overloaded (rounding aside)
BUDGET_UNITS = ("moves", "distinct_keys", "load")


def published_by(table: Table) -> str:
    """``first``, ``plan``, ``rollback`` or ``regression_guard``: what published ``table``."""
    if table.restored_version is not None:
        guard = (table.reason or "").partition(": ")[2].startswith("regression")
        return "regression_guard" if guard else "rollback"
    return "first" if table.parent_version is None else "plan"


def explain_version(
    table: Table,
    parent: Table | None,
    budget: Mapping[str, Any] | None = None,
    publication: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The explanation of ``table`` against ``parent`` (the version it replaced, when stored).

    ``budget`` is the plan's limits as the plan report records them (``max_moves``,
    ``max_migrated_load_share``, ``max_migration_cost``, ``migration_cost_unit``); None when
    unknown (a version older than the reports kept, a rollback). ``publication`` is what the
    reports say of the run that published it (``routeplan.streams.publications``), kept as
    given."""
    note = None
    diff = None
    if table.parent_version is None:
        note = "the first version: nothing to compare with"
    elif parent is None:
        note = f"v{table.parent_version} is no longer stored: its moves cannot be listed"
    else:
        try:
            diff = diff_tables(parent, table)
        except ValueError as err:
            note = f"v{parent.version} cannot be compared: {err}"
        else:
            if diff["rehashed"]:
                note = "the hash spec changed: every key may move"
    workers, reference = _workers(table, parent if diff is not None else None)
    before = {w["worker"]: w["before"] for w in workers}
    total = diff["total_load"] if diff is not None else None
    moves = [_move(m, total, before) for m in diff["moves"]] if diff is not None else []
    moves.sort(key=lambda m: (-(m["load"] or 0.0), m["unit"]))
    return {
        "stream": table.stream,
        "kind": table.kind,
        "version": table.version,
        "parent_version": table.parent_version,
        "compared_with": parent.version if diff is not None and parent is not None else None,
        "created_at": table.created_at,
        "strategy": table.strategy,
        "published_by": published_by(table),
        "publication": dict(publication) if publication is not None else None,
        "restored_version": table.restored_version,
        "reason": table.reason,
        "note": note,
        "load_basis": diff["load_basis"] if diff is not None else _own_basis(table),
        "reference": reference,
        "workers": workers,
        "relieved": sorted({w for m in moves for w in m["relieved"]}),
        "moves": moves,
        "moved_load": diff["moved_load"] if diff is not None else None,
        "total_load": total,
        "moved_load_share": diff["moved_load_share"] if diff is not None else None,
        "budget": _budget(diff, budget),
        "objective": _objective(table),
        "racks": _racks(table),
    }


def _racks(table: Table) -> dict[str, Any] | None:
    """The cross-rack share the version was published predicting (KIP-881), the consumers per
    rack and whether its strategy planned by racks; None when no racks are known."""
    predicted = dict(table.predicted)
    if "cross_rack_fraction" not in predicted:
        return None
    by_rack: dict[str, int] = {}
    for worker in table.workers_of().items:
        key = worker.rack if worker.rack is not None else "unknown"
        by_rack[key] = by_rack.get(key, 0) + 1
    weight = table.params.get("rack_weight")
    return {
        "cross_rack_fraction": float(predicted["cross_rack_fraction"]),
        "cross_rack_load": float(predicted.get("cross_rack_load", 0.0)),
        "rack_known_share": float(predicted.get("rack_known_share", 0.0)),
        "planned_by_racks": isinstance(weight, int | float) and weight > 0,
        "consumers_by_rack": dict(sorted(by_rack.items())),
    }


def _own_basis(table: Table) -> str | None:
    return f"planning_load of v{table.version}" if table.planning_snapshot() is not None else None


def _workers(table: Table, parent: Table | None) -> tuple[list[dict[str, Any]], str | None]:
    """Each worker's relative load before (under ``parent``) and after, on ``table``'s
    planning loads; ``[]`` when the table records none."""
    loads = table.planning_snapshot()
    if loads is None:
        return [], None
    after, workers, reference = relative_worker_loads(table, loads)
    before: dict[str, float] | None = None
    by_name = {w.name: w for w in workers.items}
    if parent is not None:
        try:
            before, old, _ = relative_worker_loads(parent, loads)
        except ValueError:
            before = None
        else:
            by_name = {w.name: w for w in old.items} | by_name
    names = list(after) + [n for n in (before or {}) if n not in after]
    if not names:
        names = list(by_name)
    rows = []
    for name in names:
        was = None if before is None else before.get(name, 0.0)
        now = after.get(name, 0.0)
        worker = by_name.get(name)
        rows.append(
            {
                "worker": name,
                "capacity": worker.capacity if worker is not None else None,
                "state": worker.state if worker is not None else None,
                "before": was,
                "after": now,
                "overloaded_before": was is not None and was > OVERLOADED,
                "overloaded_after": now > OVERLOADED,
            }
        )
    return rows, reference


def _move(move: Mapping[str, Any], total: float | None, before: Mapping[str, Any]) -> dict:
    what, _, ident = move["unit"].partition(":")
    load = move["load"]
    return {
        "unit": move["unit"],
        "what": what,
        "id": ident,
        "from_workers": list(move["from_workers"]),
        "to_workers": list(move["to_workers"]),
        "load": load,
        "load_share": load / total if load is not None and total else None,
        "relieved": _relieved(move, before),
        "why": _why(move, before),
    }


def _relieved(move: Mapping[str, Any], before: Mapping[str, Any]) -> list[str]:
    """The workers overloaded before that carry less of the unit after: those it leaves, and
    those of a key split over more workers (an equal share each, as the diff lists no weights)."""
    was, now = move["from_workers"], move["to_workers"]
    share_after = 1 / len(now) if now else 0.0
    return [
        w
        for w in was
        if (before.get(w) or 0.0) > OVERLOADED
        and (share_after if w in now else 0.0) < 1 / len(was) - 1e-12
    ]


def _why(move: Mapping[str, Any], before: Mapping[str, Any]) -> str:
    def at(worker: str) -> str:
        value = before.get(worker)
        return worker if value is None else f"{worker} ({value:.2f}×)"

    relieved = _relieved(move, before)
    was, now = move["from_workers"], move["to_workers"]
    spread = f"split over {len(now)} workers; " if len(now) > max(1, len(was)) else ""
    if relieved:
        return spread + "relieves " + ", ".join(at(w) for w in relieved)
    if not was:
        return "newly placed on " + ", ".join(now)
    return spread + "no overloaded worker relieved (a rebalance or a pairing)"


def _budget(diff: Mapping[str, Any] | None, limits: Mapping[str, Any] | None) -> dict[str, Any]:
    """What the moves spent against the limits the plan ran under."""
    unit = (limits or {}).get("migration_cost_unit")
    unit = unit if unit in BUDGET_UNITS else "moves"
    used: dict[str, Any] = {"moves": None, "migrated_load_share": None, "migration_cost": None}
    if diff is not None and not diff["rehashed"]:
        count = len(diff["moves"])
        used["moves"] = count
        used["migrated_load_share"] = diff["moved_load_share"]
        if unit == "moves":
            used["migration_cost"] = float(count)
        elif unit == "load":
            used["migration_cost"] = diff["moved_load"]
        # distinct_keys: a table does not record its key groups' distinct keys
    given = {
        k: limits.get(k)
        for k in ("max_moves", "max_migrated_load_share", "max_migration_cost")
        if limits is not None and _is_number(limits.get(k))
    }
    spent = {
        "max_moves": used["moves"],
        "max_migrated_load_share": used["migrated_load_share"],
        "max_migration_cost": used["migration_cost"],
    }
    within = {
        k: None if spent[k] is None else spent[k] <= float(v) + 1e-12 for k, v in given.items()
    }
    return {
        "known": limits is not None,
        "limits": given,
        "migration_cost_unit": unit,
        "used": used,
        "within": within,
    }


def _objective(table: Table) -> dict[str, Any]:
    info = describe(table.strategy)
    predicted = dict(table.predicted)
    params = dict(table.params)
    return {
        "strategy": table.strategy,
        "title": info.title,
        "paper": info.paper,
        "description": info.objective,
        "terms": {t: float(predicted[t]) for t in info.terms if t in predicted},
        "weights": {w: params[w] for w in info.weights if w in params},
        "predicted": {k: float(v) for k, v in predicted.items()},
    }


def format_explanation(explained: Mapping[str, Any], limit: int = 20) -> str:
    """A few lines for a terminal: where the version came from, its workers, its heaviest
    moves and why, the budget and the objective."""
    e = explained
    objective = e["objective"]
    paper = f", paper {objective['paper']}" if objective["paper"] else ""
    head = (
        f"{e['stream']} v{e['version']} ({e['kind']}, {e['strategy']}: {objective['title']}{paper})"
    )
    lines = [
        head,
        f"  published by: {e['published_by']}" + (f" — {e['reason']}" if e["reason"] else ""),
    ]
    if e["note"]:
        lines.append(f"  note: {e['note']}")
    if e["workers"]:
        lines.append(f"  load / {e['reference']} per worker (before → after, {e['load_basis']}):")
        for w in e["workers"]:
            was = "-" if w["before"] is None else f"{w['before']:.3f}"
            flag = "  overloaded before" if w["overloaded_before"] else ""
            lines.append(f"    {w['worker']:<12} {was:>7} → {w['after']:.3f}{flag}")
    if e["compared_with"] is not None:
        share = e["moved_load_share"]
        moved = f", {share:.1%} of the load" if share is not None else ""
        lines.append(f"  moves against v{e['compared_with']}: {len(e['moves'])}{moved}")
        if e["relieved"]:
            lines.append(f"  relieved: {', '.join(e['relieved'])}")
    for move in e["moves"][:limit]:
        frm = ",".join(move["from_workers"]) or "-"
        to = ",".join(move["to_workers"]) or "-"
        share = "" if move["load_share"] is None else f" {move['load_share']:.2%}"
        lines.append(f"    {move['unit']:<24} {frm} → {to}{share}  {move['why']}")
    if len(e["moves"]) > limit:
        lines.append(f"    … {len(e['moves']) - limit} more (--json lists all)")
    budget = e["budget"]
    if budget["known"]:
        limits = budget["limits"]
        parts = [
            f"{name} {_shown(budget['used'][used])} of {limits[name]}"
            for name, used in (
                ("max_moves", "moves"),
                ("max_migrated_load_share", "migrated_load_share"),
                ("max_migration_cost", "migration_cost"),
            )
            if name in limits
        ]
        lines.append("  budget: " + ("; ".join(parts) if parts else "no limits"))
    else:
        lines.append("  budget: not recorded for this version")
    predicted = objective["predicted"]
    if "peak_excess" in predicted:  # planned on the forecast: the gate's prediction
        low, high = predicted.get("peak_excess_low", 0.0), predicted.get("peak_excess_high", 0.0)
        lines.append(
            f"  predicted peak excess: {predicted['peak_excess']:.4f} (band {low:.4f}–{high:.4f})"
            + (
                f"; {predicted['pruned_moves']:.0f} moves that did not pay were given back, "
                "every move listed buys part of the gain"
                if predicted.get("pruned_moves")
                else ""
            )
        )
    racks = e.get("racks")
    if racks is not None:
        planned = (
            "planned by racks"
            if racks["planned_by_racks"]
            else f"{e['strategy']} did not plan by racks"
        )
        lines.append(
            f"  racks: {racks['cross_rack_fraction']:.1%} of the load read across racks "
            f"({racks['cross_rack_load']:.6g}/s; racks known for "
            f"{racks['rack_known_share']:.0%} of the load); {planned}"
        )
    lines.append(f"  objective: {objective['description']}")
    if objective["terms"]:
        terms = ", ".join(f"{k} {v:.6g}" for k, v in objective["terms"].items())
        lines.append(f"    terms: {terms}")
    if objective["weights"]:
        weights = ", ".join(f"{k}={v}" for k, v in objective["weights"].items())
        lines.append(f"    weights: {weights}")
    return "\n".join(lines)


def _shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
