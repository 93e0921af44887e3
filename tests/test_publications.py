"""``routeplan.streams.publications``: which run published each version, from the reports."""

from __future__ import annotations

import json
from pathlib import Path

from test_explain import keys

from routeplan.contracts.schemas import validate_document
from routeplan.streams.publications import (
    explain_published,
    find_publication,
    publications,
    reports_of_run,
)

BUDGET = {"max_moves": 1}


def write(path: Path, report: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report if isinstance(report, str) else json.dumps(report))


def nightly_reports(reports: Path) -> None:
    """v1 and v2 by night plans (v2's plan with a budget and two candidates), v3 by the
    regression guard, v4 by the rollback DAG; one broken report."""
    for day, version in (("2026-11-19", 1), ("2026-11-20", 2)):
        write(
            reports / day / "publish.json",
            {
                "run_id": f"run-{day}",
                "streams": [
                    {"stream": "clicks", "action": "published", "version": version, "reason": "r"},
                    {"stream": "views", "action": "published", "version": 7},
                    {"stream": "orders", "action": "unchanged", "version": 1},
                ],
            },
        )
    write(
        reports / "2026-11-20" / "plan.json",
        {
            "streams": {
                "clicks": {
                    "strategy": "milp",
                    "choice": "auto: milp: fewest moves",
                    "budget": BUDGET,
                    "migration_cost_unit": "moves",
                    "observed_imbalance": 0.5,
                    "candidates": [
                        {"strategy": "milp", "selected": True, "moves": 1},
                        {"strategy": "cg", "selected": False, "moves": 9},
                    ],
                }
            }
        },
    )
    write(
        reports / "2026-11-21" / "outcomes.json",
        {
            "run_id": "run-2026-11-21",
            "outcomes": [],
            "guard": [{"stream": "clicks", "version": 2, "published_version": 3, "reason": "g"}],
        },
    )
    write(reports / "2026-11-21" / "publish.json", "{not json")
    write(
        reports / "rollbacks" / "manual__2026-11-22T10-00-00.json",
        {
            "run_id": "manual__x",
            "streams": [{"stream": "clicks", "action": "rolled_back", "version": 4}],
        },
    )
    write(reports / "not-a-day" / "publish.json", {"streams": [{"stream": "clicks", "version": 9}]})


def test_each_version_is_found_with_the_run_that_published_it(tmp_path):
    nightly_reports(tmp_path)
    found = publications(str(tmp_path), "clicks")
    assert [(p.version, p.by, p.day, p.run_id) for p in found.found] == [
        (4, "rollback", None, "manual__x"),
        (3, "regression_guard", "2026-11-21", "run-2026-11-21"),
        (2, "plan", "2026-11-20", "run-2026-11-20"),
        (1, "plan", "2026-11-19", "run-2026-11-19"),
    ]
    assert found.of(2).plan["candidates"][1] == {"strategy": "cg", "selected": False, "moves": 9}
    assert found.of(1).plan is None  # that night's plan report is gone
    (warning,) = found.warnings  # the broken report is skipped, said once
    assert "2026-11-21/publish.json" in warning
    assert find_publication(str(tmp_path), "clicks", 9) is None  # not-a-day is no day
    assert publications(str(tmp_path), "clicks", days=1).of(2) is None  # newest day only
    assert publications(str(tmp_path / "none"), "clicks").found == []


def test_an_explanation_carries_its_nights_budget_and_run(tmp_path):
    nightly_reports(tmp_path)
    v1 = keys(["w0", "w0", "w1", "w0"], 1, None)
    v2 = keys(["w0", "w1", "w1", "w1"], 2, 1)
    explained, warnings = explain_published(v2, v1, str(tmp_path))
    validate_document("routing_explain", explained)
    assert explained["publication"]["run_id"] == "run-2026-11-20"
    budget = explained["budget"]
    assert budget["known"] and budget["limits"] == BUDGET
    assert budget["within"] == {"max_moves": False}  # two moves against a limit of one
    assert len(warnings) == 1
    first, _ = explain_published(v1, None, str(tmp_path))
    assert first["publication"]["day"] == "2026-11-19" and not first["budget"]["known"]


def test_a_runs_reports_are_found_by_its_id(tmp_path):
    nightly_reports(tmp_path)
    night = reports_of_run(str(tmp_path), "run-2026-11-20")
    assert night["day"] == "2026-11-20" and night["publish"]["run_id"] == "run-2026-11-20"
    assert night["outcomes"] is None  # that night wrote none
    guard = reports_of_run(str(tmp_path), "run-2026-11-21")
    assert guard["day"] == "2026-11-21" and guard["publish"] is None  # its publish.json is broken
    assert reports_of_run(str(tmp_path), "manual__x")["rollback"]["streams"][0]["version"] == 4
    assert reports_of_run(str(tmp_path), "../../etc") is None
