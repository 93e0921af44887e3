"""The one budget reader (``routeplan.planning.budget``): current and old spellings, text from a
command line or a form, and the errors — the same for the job, the CLI, the DAG and the file."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeplan.model.plan import Budget
from routeplan.planning.budget import BUDGET_FIELDS, migration_cost_unit, read_budget


def test_current_fields_set_the_budget_and_empty_text_means_no_limit():
    reading = read_budget(
        {"max_moves": "7", "max_migrated_load_share": 0.2, "max_migration_cost": "",
         "migration_cost_unit": "load", "time_limit_s": "5"}
    )  # fmt: skip
    assert reading.budget == Budget(
        max_moves=7, max_migrated_load_share=0.2, migration_cost_unit="load", time_limit_s=5.0
    )
    assert reading.notes == () and reading.params == {}
    for empty in ("", "None", "null", None):
        assert read_budget({"max_moves": empty}).budget.limits() == {}


def test_old_parameters_become_limits_with_one_note_each_and_leave_the_others():
    reading = read_budget(
        params={
            "max_migrations": 5,
            "migration_cost": "keys",
            "epsilon": 0.1,
            "max_migration_cost": 9,
        }
    )
    assert reading.budget.max_moves == 5
    assert reading.budget.max_migration_cost == 9.0
    assert reading.budget.migration_cost_unit == "distinct_keys"
    assert reading.params == {"epsilon": 0.1}
    assert len(reading.notes) == 4  # three parameters and the old unit keys
    assert any("max_migrations is deprecated" in n for n in reading.notes)
    assert any("migration_cost_unit keys is deprecated" in n for n in reading.notes)


def test_the_old_unit_is_read_the_same_from_a_flag_a_form_and_a_parameter():
    from_flag = read_budget({"migration_cost_unit": "keys"})
    from_param = read_budget(params={"migration_cost": "keys"})
    assert from_flag.budget.migration_cost_unit == from_param.budget.migration_cost_unit
    assert from_flag.notes and from_param.notes
    assert migration_cost_unit("keys") == "distinct_keys"
    with pytest.raises(ValueError, match="migration_cost_unit: 'bytes'"):
        migration_cost_unit("bytes")


def test_a_limit_given_both_ways_differently_is_refused_but_the_default_unit_is_not_a_choice():
    with pytest.raises(ValueError, match="max_migrations=5 contradicts the budget's max_moves=3"):
        read_budget({"max_moves": 3}, {"max_migrations": 5})
    assert read_budget({"max_moves": 5}, {"max_migrations": 5}).budget.max_moves == 5
    # a flag left at its default unit does not contradict an old parameter's unit
    reading = read_budget({"migration_cost_unit": "moves"}, {"migration_cost": "load"})
    assert reading.budget.migration_cost_unit == "load"
    with pytest.raises(ValueError, match="contradicts"):
        read_budget({"migration_cost_unit": "distinct_keys"}, {"migration_cost": "load"})


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"max_moves": "many"}, "max_moves must be a number"),
        ({"max_moves": 2.5}, "max_moves must be an integer"),
        ({"max_moves": -1}, "max_moves must be an integer >= 0"),
        ({"max_migrated_load_share": 1.5}, "max_migrated_load_share must be in"),
        ({"max_migration_cost": "inf"}, "max_migration_cost must be a finite number"),
        ({"max_moves": True}, "max_moves must be a number"),
        ({"max_keys": 3}, "max_keys: not a budget field"),
        ({"migration_cost_unit": "bytes"}, "migration_cost_unit: 'bytes'"),
        ({"time_limit_s": 0}, "time_limit_s must be > 0"),
    ],
)
def test_a_bad_value_is_an_error_naming_its_field(given, message):
    with pytest.raises(ValueError, match=message):
        read_budget(given)


@given(
    moves=st.one_of(st.none(), st.integers(0, 10**6)),
    share=st.one_of(st.none(), st.floats(0, 1)),
    as_text=st.booleans(),
)
def test_text_and_numbers_read_alike(moves, share, as_text):
    def shown(v):
        return ("" if v is None else repr(v)) if as_text else v

    budget = read_budget(
        {"max_moves": shown(moves), "max_migrated_load_share": shown(share)}
    ).budget
    assert (budget.max_moves, budget.max_migrated_load_share) == (moves, share)
    assert set(budget.limits()) <= set(BUDGET_FIELDS)
