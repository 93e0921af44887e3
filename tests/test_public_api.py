"""The repository's own description holds: the library example of docs/routing-tables.md runs
as printed, every name of ``routeplan.__all__`` exists, the budget-limits table and the
simulator's list in docs/strategies.md are the registry's, the README and every docs page link
only to files that exist and name only flags the CLI has, and the documentation site builds
(``mkdocs build --strict``: a broken link, anchor or missing page fails)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
ARCHITECTURE = DOCS / "architecture.md"
ROUTING_TABLES = DOCS / "routing-tables.md"  # the library, producers, versions
STRATEGIES = DOCS / "strategies.md"  # the strategies, the simulator, budget limits
PAGES = [README, *sorted(DOCS.glob("*.md"))]


def code_block(text: str, heading: str, language: str = "python") -> str:
    """The first ``language`` code block after the Markdown ``heading``."""
    after = text[text.index(heading) :]
    found = re.search(rf"```{language}\n(.*?)```", after, re.S)
    assert found, f"no {language} block after {heading!r}"
    return found.group(1)


def test_the_docs_library_example_runs(tmp_path, monkeypatch, capsys):
    import routeplan

    example = code_block(ROUTING_TABLES.read_text(), "## Using the library")
    imported = re.search(r"from routeplan import ([\w, ]+)\n", example)
    assert imported, example
    names = [n.strip() for n in imported.group(1).split(",")]
    assert set(names) <= set(routeplan.__all__)  # the example uses the public face only
    monkeypatch.chdir(tmp_path)
    exec(compile(example, ROUTING_TABLES.name, "exec"), {})
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


def test_the_docs_budget_limits_table_is_the_registrys():
    """Each limit's row names exactly the strategies whose ``honours`` holds it."""
    from routeplan.model.plan import BUDGET_LIMITS
    from routeplan.planning.registry import get_strategy, strategy_names

    text = STRATEGIES.read_text()
    for limit in BUDGET_LIMITS:
        row = re.search(rf"^\| `{limit}` \| (.*) \|$", text, re.M)
        assert row, f"{STRATEGIES.name} has no Budget limits row for {limit}"
        named = re.findall(r"`(\w+)`", row.group(1))
        honouring = [n for n in strategy_names() if limit in type(get_strategy(n)).honours]
        assert named == honouring, limit


def test_the_docs_simulator_list_is_the_online_schemes():
    from routeplan.simulation import online

    schemes = online.ONLINE_SCHEMES
    sentence = re.search(r"online form — (.*?) \(`routeplan", STRATEGIES.read_text(), re.S)
    assert sentence
    assert sorted(re.findall(r"`(\w+)`", sentence.group(1))) == sorted(schemes)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_point_into_the_repository(page):
    text = page.read_text()
    targets = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text)
    assert targets
    for target in targets:
        path = (page.parent / target).resolve()
        assert path.exists(), f"{page.name} links to {target}, which does not exist"
        assert REPO in path.parents or path == REPO, f"{page.name} links outside: {target}"


def documented_pages() -> list[Path]:
    """The README and every page under docs/ written by hand (the generated reference aside)."""
    return [README, *sorted(p for p in DOCS.rglob("*.md") if "reference" not in p.parts)]


def shell_commands(text: str) -> list[str]:
    """The ``routeplan …`` commands of a page's shell blocks, one per line, without a leading
    ``$``, environment assignments, or what follows a comment, pipe, redirection or ``&&``."""
    blocks = re.findall(r"```(?:bash|sh|shell|console)\n(.*?)```", text, re.S)
    commands = []
    for line in "\n".join(blocks).replace("\\\n", " ").splitlines():
        line = re.sub(r"^(?:\$ )?(?:[A-Z_]+=\S+\s+)*", "", line.strip())
        if line.startswith("routeplan "):
            commands.append(re.split(r"\s+(?:#|\||>|<|&&|;)\s*", line)[0])
    return commands


def test_the_docs_commands_use_flags_the_cli_has():
    """Every ``routeplan <command> --flag`` in the shell examples and inline code of the README
    and the docs (runbooks too) names a command and flags the CLI has (so a rename cannot leave
    the documentation behind)."""
    import argparse

    from routeplan.cli.main import build_parser

    commands = next(
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    ).choices
    checked = 0
    for page in documented_pages():
        text = page.read_text()
        inline = re.findall(r"`(routeplan [^`]+)`", text)
        for line in shell_commands(text) + inline:
            words = line.split()
            if len(words) < 2 or not re.fullmatch(r"[a-z][a-z-]*", words[1]):
                continue  # `routeplan --help`, `routeplan <command>`, a log line's `routeplan …:`
            assert words[1] in commands, f"{page.name}: `{line}`: no command {words[1]!r}"
            known = set(commands[words[1]]._option_string_actions)
            for flag in re.findall(r"(?<!\S)(--[a-z][a-z-]*)", line):
                assert flag in known, f"{page.name}: `{line}` uses {flag}, not in {words[1]}"
                checked += 1
    assert checked > 10


def test_the_docs_shell_commands_parse_as_the_cli_parses_them():
    """Each ``routeplan …`` line of the docs' shell blocks, given to the CLI's own parser (a dry
    run: nothing runs), is accepted: its command, flags, values and required arguments."""
    import contextlib
    import io
    import shlex

    from routeplan.cli.main import build_parser

    parsed = 0
    for page in documented_pages():
        for line in shell_commands(page.read_text()):
            said = io.StringIO()
            with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
                try:
                    build_parser().parse_args(shlex.split(line)[1:])
                except SystemExit as stop:
                    assert not stop.code, f"{page.name}: `{line}`: {said.getvalue().strip()}"
            parsed += 1
    assert parsed >= 10


def build_site(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of ``config`` into ``site``, offline (no page, theme or plugin
    of the site fetches anything)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's end-of-life notice
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config)]
    command += ["--site-dir", str(site)]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120, env=env)


def test_the_documentation_site_builds_strict(tmp_path):
    """``make docs``'s build: every page in the nav, every link and anchor found."""
    site = tmp_path / "site"
    done = build_site(REPO / "mkdocs.yml", site)
    assert done.returncode == 0, done.stderr[-3000:]
    home = (site / "index.html").read_text()  # the README is the site's home
    assert "make demo" in home and "../README.md" not in home
    assert "fonts.googleapis.com" not in home and "fonts.gstatic.com" not in home  # offline
    # the running page links the name rule's schema: the site serves a copy of it
    assert (site / "repo" / "schemas" / "name.schema.json").is_file()
    running = (site / "running" / "index.html").read_text()
    assert 'href="../repo/schemas/name.schema.json"' in running


def test_a_broken_link_fails_the_documentation_build(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    with (docs / "concepts.md").open("a") as page:
        page.write("\nSee [a page](no-such-page.md) and [a file](../no/such/file.json).\n")
    config = (REPO / "mkdocs.yml").read_text()
    config = config.replace("docs_dir: docs", f"docs_dir: {docs}")
    hooks = REPO / "scripts" / "mkdocs_hooks.py"
    config = config.replace("- scripts/mkdocs_hooks.py", f"- {hooks}")
    (tmp_path / "mkdocs.yml").write_text(config)
    done = build_site(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-page.md" in done.stderr and "no/such/file.json" in done.stderr
