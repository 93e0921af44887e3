"""Tests mirror the source: every module under ``routeplan/`` has a test file named for it or for
its package, so its tests are found by its name.

The convention (flat, all in ``tests/``): ``routeplan/<...>/<package>/<module>.py`` is tested in
``tests/test_<module>.py``, or ``tests/test_<package>_<module>.py`` where the module's name alone
is ambiguous (``cli/plan.py`` and ``model/plan.py``: ``test_cli_plan.py``), or in its package's file
``tests/test_<package>.py``. A file may add an aspect after the name: ``test_<module>_<aspect>.py``
(``test_client_router.py``, ``test_generate_follow.py``). Files stay flat because the test files
import each other and ``conftest`` as top-level modules (``from test_binpack import ...``)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# modules with no test file of their own, each with the reason
EXEMPT = {
    "routeplan/__init__.py": "the public names; tests/test_public_api.py checks them",
    "routeplan/errors.py": "the exception types; tests/test_cli.py checks how the CLI reports them",
    "routeplan/parsing.py": "argument parsing helpers, exercised through tests/test_cli.py",
    "routeplan/storage.py": "needs an S3 server: tests/test_store_object.py (MinIO)",
    "routeplan/contracts/schemas.py": "validate_document is asserted in most document tests",
    "routeplan/model/loads.py": "values exercised by every planning test (tests/test_metrics.py)",
    "routeplan/model/names.py": "the name rule, checked where names enter: test_store, test_client",
    "routeplan/model/workers.py": "values exercised by every planning test",
    "routeplan/publishing/store_doctor.py": "doctor's report and orphan rule: tests/test_doctor.py",
    "routeplan/publishing/store_files.py": "the store's file layer: tests/test_store.py",
    "routeplan/streams/inputs.py": "inputs of a stream's plan: tests/test_streams_service.py",
    "routeplan/streams/overrides.py": "run overrides of the plan job: tests/test_plan_policies.py",
    "routeplan/streams/policy_file.py": "the policy file's reader: tests/test_policy.py",
}


MODULES = sorted((REPO / "routeplan").rglob("*.py"))
AMBIGUOUS = {m.stem for m in MODULES if sum(n.stem == m.stem for n in MODULES) > 1}


def naming_stems(module: Path) -> set[str]:
    """The test-file stems (without ``test_``) that name ``module``: an ambiguous name only with
    its package (``cli_plan``, ``simulation_generate``)."""
    name, package = module.stem, module.parent.name
    qualified = {f"{package}_{name}"} if package != "routeplan" else set()
    return qualified if name in AMBIGUOUS else qualified | {name}


def covered(module: Path, stems: set[str]) -> bool:
    package = module.parent.name
    names = naming_stems(module)
    return package in stems or any(s == n or s.startswith(f"{n}_") for s in stems for n in names)


def test_every_module_has_a_test_file_named_for_it_or_its_package():
    stems = {p.stem.removeprefix("test_") for p in (REPO / "tests").glob("test_*.py")}
    missing = [
        str(m.relative_to(REPO))
        for m in MODULES
        if m.name != "__init__.py"
        and str(m.relative_to(REPO)) not in EXEMPT
        and not covered(m, stems)
    ]
    assert not missing, f"no tests/test_<module>.py or test_<package>.py for {missing}"


def test_the_exemptions_name_modules_that_exist_and_need_one():
    stems = {p.stem.removeprefix("test_") for p in (REPO / "tests").glob("test_*.py")}
    for path in EXEMPT:
        module = REPO / path
        assert module.is_file(), f"{path} is exempt but does not exist"
        if module.name != "__init__.py":
            assert not covered(module, stems), f"{path} has a test file now: drop its exemption"
