"""docs/performance.md's closed-loop section quotes bench/results, nothing else: its tables are
``bench/closed_loop.py``'s ``markdown_table`` of the results JSON, and every decimal number in
its prose is a value of their summaries (at the precision quoted)."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "performance.md"
RESULTS = {
    "closed-loop": ROOT / "bench" / "results" / "closed_loop.json",
    "closed-loop-milp": ROOT / "bench" / "results" / "closed_loop_milp.json",
    "closed-loop-before": ROOT / "bench" / "results" / "closed_loop_before.json",
}


@pytest.fixture(scope="module")
def closed_loop():
    with pytest.MonkeyPatch.context() as patch:  # bench scripts import their neighbours
        patch.syspath_prepend(str(ROOT / "bench"))
        yield importlib.import_module("closed_loop")


def section() -> str:
    text = DOC.read_text()
    start = text.index("## Plans that pay")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def numbers(value) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in numbers(v)]
    if isinstance(value, list):
        return [x for v in value for x in numbers(v)]
    return []


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_the_tables_are_the_results_rendered(closed_loop, name):
    doc = json.loads(RESULTS[name].read_text())
    assert closed_loop.marker(doc) == name
    assert closed_loop.docs_block(section(), name) == closed_loop.markdown_table(doc)


def test_every_decimal_in_the_prose_is_a_result():
    prose = section()
    for name in RESULTS:  # the tables are checked above
        prose = re.sub(rf"<!-- {name}:begin -->.*?<!-- {name}:end -->", "", prose, flags=re.S)
    # the summaries (medians, min–max per family, volume and policy), not every night's values
    found = [
        x for path in RESULTS.values() for x in numbers(json.loads(path.read_text())["summary"])
    ]
    quoted = [q.replace(",", "") for q in re.findall(r"(?<![\w.,§])(\d[\d,]*\.\d+)", prose)]
    missing = [
        q for q in quoted if not any(round(x, len(q.split(".")[1])) == float(q) for x in found)
    ]
    assert not missing, f"numbers the results do not give: {missing}"


def test_the_gate_holds_a_lower_worst_window_than_the_previous_release_in_every_row():
    """What the section says of the before/after tables: the same families, volumes and seeds,
    and the gate's mean peak excess lower in each."""
    now, before = (
        json.loads(RESULTS[n].read_text()) for n in ("closed-loop", "closed-loop-before")
    )
    assert now["seeds"] == before["seeds"]
    for family, by_volume in before["summary"].items():
        for volume, cell in by_volume.items():
            after = now["summary"][family][volume]["policies"]["gate"]["peak_excess_mean"]
            assert after["median"] < cell["policies"]["gate"]["peak_excess_mean"]["median"], (
                family,
                volume,
            )
