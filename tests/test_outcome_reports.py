"""The nightly outcomes reports read back (``routeplan outcomes``,
``routeplan.streams.outcome_reports``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from api_server import outcome_row

from routeplan.cli.main import main
from routeplan.contracts.schemas import validate_document
from routeplan.streams.outcome_reports import read_outcomes


def outcome(stream: str, day: str, version: int, verdict: str, realized: float) -> dict:
    return outcome_row(
        stream,
        day,
        version,
        verdict,
        realized,
        realized_day=realized,
        attribution="published_before",
        messages=1000.0,
    )


def write_report(reports: Path, day: str, outcomes: list[dict], guard: list[dict]) -> None:
    """The outcomes stage's report and the guard stage's (``guard.json``) of ``day``."""
    folder = reports / day
    folder.mkdir(parents=True, exist_ok=True)
    head = {"run_id": f"scheduled__{day}", "interval_start": day}
    (folder / "outcomes.json").write_text(
        json.dumps({"stage": "outcomes", **head, "outcomes": outcomes})
    )
    (folder / "guard.json").write_text(json.dumps({"stage": "guard", **head, "guard": guard}))


@pytest.fixture
def reports(tmp_path) -> Path:
    """Three days of reports, a folder that is no day, a day without report, a broken one."""
    root = tmp_path / "reports"
    write_report(root, "2026-11-20", [outcome("clicks", "2026-11-20", 3, "as_predicted", 0.1)], [])
    write_report(
        root,
        "2026-11-21",
        [
            outcome("clicks", "2026-11-21", 3, "regressed", 0.5),
            outcome("views", "2026-11-21", 1, "improved", 0.05),
        ],
        [
            {
                "stream": "clicks",
                "version": 3,
                "action": "rollback",
                "restore_version": 2,
                "reason": "regression: v3's realized imbalance 0.5000 is worse",
                "published_version": 4,
            },
            {
                "stream": "views",
                "version": 1,
                "action": None,
                "restore_version": None,
                "reason": "v1: improved",
                "published_version": None,
            },
        ],
    )
    write_report(root, "2026-11-22", [outcome("clicks", "2026-11-22", 4, "no_traffic", 0.0)], [])
    (root / "2026-11-23").mkdir()  # the publish report only
    (root / "2026-11-23" / "publish.json").write_text("{}")
    (root / "2026-11-24").mkdir()
    (root / "2026-11-24" / "outcomes.json").write_text("{truncated")
    (root / "latest").mkdir()  # not a day: skipped
    (root / "latest" / "outcomes.json").write_text("{truncated")
    (root / "2026-13-01").mkdir()  # not a date either
    (root / "2026-13-01" / "outcomes.json").write_text("{truncated")
    return root


def test_outcomes_reads_the_reports_newest_day_last(reports, capsys):
    assert main(["outcomes", "--reports", str(reports)]) == 0
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "2026-11-24/outcomes.json: not JSON" in err  # one warning
    assert "latest" not in err and "2026-13-01" not in err
    lines = out.splitlines()
    assert lines[0] == "clicks" and "views" in lines
    clicks = [line for line in lines[: lines.index("views")] if line.startswith("  2026")]
    assert [line.split()[0] for line in clicks] == ["2026-11-20", "2026-11-21", "2026-11-22"]
    assert "v3" in clicks[1] and "regressed" in clicks[1] and "realized 0.5000" in clicks[1]
    assert "previous 0.2000" in clicks[1] and "error +0.4000" in clicks[1]
    assert "(published_before)" in clicks[1]
    assert "      guard: rollback to v2, published v4: regression: v3's" in out
    assert "guard: None" not in out and "v1: improved" not in out  # no action: no guard line

    assert main(["outcomes", "--reports", str(reports), "--stream", "clicks", "--days", "1"]) == 0
    out = capsys.readouterr().out  # the newest day with a readable report
    assert "2026-11-22" in out and "2026-11-21" not in out and "views" not in out

    assert main(["outcomes", "--reports", str(reports), "--stream", "views", "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    validate_document("plan_outcomes", records)
    assert [(r["interval_start"], r["verdict"]) for r in records] == [("2026-11-21", "improved")]
    assert records[0]["guard"]["action"] is None and records[0]["run_id"] == "scheduled__2026-11-21"


def test_outcomes_without_reports_says_so(tmp_path, capsys):
    assert main(["outcomes", "--reports", str(tmp_path / "none")]) == 0
    assert capsys.readouterr().out.startswith("no outcomes yet in ")
    assert main(["outcomes", "--reports", str(tmp_path), "--stream", "x", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_records_that_break_the_schema_are_skipped_with_a_warning(tmp_path):
    bad = {**outcome("clicks", "2026-11-20", 3, "regressed", 0.5), "version": "three"}
    write_report(
        tmp_path,
        "2026-11-20",
        [bad, "junk", outcome("x", "2026-11-20", 1, "improved", 0.1)],
        "no list",
    )
    write_report(tmp_path, "2026-11-21", [], [])
    (tmp_path / "2026-11-22").mkdir()
    (tmp_path / "2026-11-22" / "outcomes.json").write_text('{"stage": "outcomes"}')
    found = read_outcomes(str(tmp_path))
    assert [(r["stream"], r["guard"]) for r in found.records] == [("x", None)]
    assert len(found.warnings) == 2
    assert "skipped 2 outcome records" in found.warnings[1]
    assert "not an outcomes report" in found.warnings[0]
