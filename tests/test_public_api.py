"""The repository's own description holds: the README's library example runs as printed, every
name of ``routeplan.__all__`` exists, the README's budget-limits table is the registry's, and the
README and docs/architecture.md link only to files that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
ARCHITECTURE = REPO / "docs" / "architecture.md"


def code_block(text: str, heading: str, language: str = "python") -> str:
    """The first ``language`` code block after the Markdown ``heading``."""
    after = text[text.index(heading) :]
    found = re.search(rf"```{language}\n(.*?)```", after, re.S)
    assert found, f"no {language} block after {heading!r}"
    return found.group(1)


def test_readme_library_example_runs(tmp_path, monkeypatch, capsys):
    import routeplan

    example = code_block(README.read_text(), "## Using the library")
    imported = re.search(r"from routeplan import ([\w, ]+)\n", example)
    assert imported, example
    names = [n.strip() for n in imported.group(1).split(",")]
    assert set(names) <= set(routeplan.__all__)  # the example uses the public face only
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "README.md", "exec"), {})
    imbalance, moves, worker = capsys.readouterr().out.split()
    assert float(imbalance) >= 0 and int(moves) >= 0
    published = routeplan.RoutingStore(tmp_path / "var" / "routing").load("clicks")
    assert published.version == 1
    assert worker in published.workers.names
    key_group = routeplan.key_group("user-42", published.num_key_groups, published.hash_seed)
    assert worker == published.key_group_worker[key_group]


def test_every_public_name_exists_and_is_listed():
    import routeplan

    assert routeplan.__all__ == sorted(routeplan.__all__)
    for name in routeplan.__all__:
        assert getattr(routeplan, name) is not None, name
    assert set(routeplan.__all__) <= set(dir(routeplan))
    with pytest.raises(AttributeError):
        routeplan.no_such_name  # noqa: B018
    # the names the architecture page promises
    listed = re.findall(r"`(\w+)`", ARCHITECTURE.read_text().split("## The public API")[1])
    assert set(routeplan.__all__) <= set(listed)


def test_readme_budget_limits_table_is_the_registrys():
    """Each limit's row names exactly the strategies whose ``honours`` holds it."""
    from routeplan.model.plan import BUDGET_LIMITS
    from routeplan.planning.registry import get_strategy, strategy_names

    text = README.read_text()
    for limit in BUDGET_LIMITS:
        row = re.search(rf"^\| `{limit}` \| (.*) \|$", text, re.M)
        assert row, f"README has no Budget limits row for {limit}"
        named = re.findall(r"`(\w+)`", row.group(1))
        honouring = [n for n in strategy_names() if limit in type(get_strategy(n)).honours]
        assert named == honouring, limit


def test_readme_simulator_list_is_the_online_schemes():
    from routeplan.simulation import online

    schemes = online.ONLINE_SCHEMES
    sentence = re.search(r"online form — (.*?) \(`routeplan", README.read_text(), re.S)
    assert sentence
    assert sorted(re.findall(r"`(\w+)`", sentence.group(1))) == sorted(schemes)


@pytest.mark.parametrize("page", [README, ARCHITECTURE], ids=lambda p: p.name)
def test_relative_links_point_into_the_repository(page):
    text = page.read_text()
    targets = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text)
    assert targets
    for target in targets:
        path = (page.parent / target).resolve()
        assert path.exists(), f"{page.name} links to {target}, which does not exist"
        assert REPO in path.parents or path == REPO, f"{page.name} links outside: {target}"


def test_readme_commands_use_flags_the_cli_has():
    """Every ``routeplan <command> --flag`` in the README's shell examples exists (so a rename
    cannot leave the README behind)."""
    import argparse

    from routeplan.cli.main import build_parser

    commands = next(
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    ).choices
    text = README.read_text()
    shell = "\n".join(re.findall(r"```bash\n(.*?)```", text, re.S)).replace("\\\n", " ")
    inline = re.findall(r"`(routeplan [^`]+)`", text)
    used = [line.strip() for line in shell.splitlines() if line.strip().startswith("routeplan ")]
    checked = 0
    for line in used + inline:
        words = line.split()
        if len(words) < 2 or words[1] not in commands:
            continue
        known = set(commands[words[1]]._option_string_actions)
        for flag in re.findall(r"(?<!\S)(--[a-z][a-z-]*)", line):
            assert flag in known, f"README: `{line}` uses {flag}, which {words[1]} does not have"
            checked += 1
    assert checked > 10
