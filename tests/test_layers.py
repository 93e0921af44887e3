"""Every import inside ``routeplan/`` points down the layers (docs/architecture.md, "Layers").

``LAYERS`` lists routeplan's top-level packages and modules from the top (the CLI) to the bottom
(errors, storage). A module may import its own top-level package and the layers below it, never
a layer above nor another entry of its own layer (those are independent). Every import counts:
at module level, inside a function (a lazy import hides a dependency, it does not remove it),
under ``TYPE_CHECKING``; ``import x``, ``from x import y`` and relative imports alike. A name
imported from ``routeplan`` itself counts as the module that defines it (``routeplan._PUBLIC``).
``routeplan/__init__.py``, the lazy public API, is exempt: it names the whole library.
"""

from __future__ import annotations

import ast
from pathlib import Path

import routeplan

PACKAGE_DIR = Path(routeplan.__file__).resolve().parent
ROOT = "routeplan"

# top to bottom; the entries of one layer are independent of each other
LAYERS: list[tuple[str, ...]] = [
    ("cli",),
    ("api",),
    ("plots",),
    ("streams",),
    ("publishing", "simulation"),
    ("planning",),
    ("files", "parsing"),
    ("model",),
    ("contracts",),  # the JSON schemas and the bounded document reader
    ("settings",),
    ("storage", "errors"),
]
LEVEL = {name: depth for depth, layer in enumerate(LAYERS) for name in layer}
ROOT_CONSTANTS = {"__version__"}  # plain values of routeplan/__init__.py, importing nothing


def top_level_entries(package_dir: Path = PACKAGE_DIR) -> set[str]:
    """The modules and packages directly under ``routeplan/`` (``__init__.py`` aside)."""
    entries = {p.stem for p in package_dir.glob("*.py") if p.name != "__init__.py"}
    entries |= {p.name for p in package_dir.iterdir() if (p / "__init__.py").is_file()}
    return entries


def module_name(path: Path, package_dir: Path = PACKAGE_DIR) -> str:
    parts = path.relative_to(package_dir.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, package_dir: Path = PACKAGE_DIR) -> list[tuple[int, str]]:
    """``(line, module)`` for every import of a routeplan module in the file at ``path``, in
    line order; a relative import is made absolute, and ``from routeplan import x`` names the
    module behind ``x``."""
    name = module_name(path, package_dir)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            if module == ROOT:
                entries = top_level_entries(package_dir)
                found += [(node.lineno, _from_root(a.name, entries)) for a in node.names]
            else:  # ``from routeplan.cli import plan``: routeplan.cli.plan is in routeplan.cli
                found.append((node.lineno, module))
    return sorted((line, m) for line, m in found if m.partition(".")[0] == ROOT)


def _from_root(name: str, entries: set[str]) -> str:
    """The module ``from routeplan import name`` reaches: a top-level package or module, the
    module defining a public name, or ``routeplan`` itself for a constant."""
    if name in entries:
        return f"{ROOT}.{name}"
    if name in routeplan._PUBLIC:
        return routeplan._PUBLIC[name]
    return ROOT if name in ROOT_CONSTANTS else f"{ROOT}.{name}"


def entry_of(module: str) -> str | None:
    """The layer-table entry of a routeplan module (``routeplan.cli.plan`` → ``cli``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def upward_imports(package_dir: Path = PACKAGE_DIR) -> list[str]:
    """Every import against the layers: ``path:line: module imports target (why)``."""
    problems = []
    for path in sorted(package_dir.rglob("*.py")):
        if path == package_dir / "__init__.py":
            continue
        module = module_name(path, package_dir)
        source = entry_of(module)
        for line, target in imported_modules(path, package_dir):
            entry = entry_of(target)
            if target == ROOT or entry == source:
                continue
            where = f"{path.relative_to(package_dir.parent)}:{line}: {module} imports {target}"
            if entry not in LEVEL or source not in LEVEL:
                unknown = entry if entry not in LEVEL else source
                problems.append(f"{where} ({unknown!r} is not in LAYERS)")
            elif LEVEL[entry] < LEVEL[source]:
                problems.append(f"{where} ({entry} is above {source})")
            elif LEVEL[entry] == LEVEL[source]:
                problems.append(f"{where} ({entry} and {source} share a layer: independent)")
    return problems


def test_every_import_points_down_the_layers():
    problems = upward_imports()
    assert not problems, "imports against the layers:\n  " + "\n  ".join(problems)


def test_the_layer_table_names_every_top_level_package_and_module():
    listed = [name for layer in LAYERS for name in layer]
    assert len(listed) == len(set(listed)), "an entry is in LAYERS twice"
    entries = top_level_entries()
    missing, stale = sorted(entries - set(listed)), sorted(set(listed) - entries)
    assert not missing, f"place these in tests/test_layers.py's LAYERS: {missing}"
    assert not stale, f"LAYERS names what routeplan/ no longer holds: {stale}"


def test_the_check_finds_every_kind_of_upward_import(tmp_path):
    """Module level, in a function, relative, ``import x``, a name of the public API; imports
    of the own package and of lower layers pass."""
    package_dir = tmp_path / "routeplan"
    for name in ("model", "cli", "planning", "publishing", "simulation"):
        (package_dir / name).mkdir(parents=True)
        (package_dir / name / "__init__.py").write_text("")
    for name in ("__init__", "files", "storage", "errors", "settings"):
        (package_dir / f"{name}.py").write_text("")
    (package_dir / "model" / "bad.py").write_text(
        "import routeplan.cli.main\n"
        "from routeplan.planning import registry\n"
        "from ..publishing.store import RoutingStore\n"
        "from routeplan import RoutingStore, storage, __version__\n"
        "from . import table\n"
        "from routeplan.errors import UsageError\n"
        "def f():\n"
        "    from routeplan.simulation.online import ONLINE_SCHEMES\n"
        "    from routeplan import files\n"
    )
    found = imported_modules(package_dir / "model" / "bad.py", package_dir)
    assert found == [
        (1, "routeplan.cli.main"),
        (2, "routeplan.planning"),
        (3, "routeplan.publishing.store"),
        (4, "routeplan"),
        (4, "routeplan.publishing.store"),
        (4, "routeplan.storage"),
        (5, "routeplan.model"),
        (6, "routeplan.errors"),
        (8, "routeplan.simulation.online"),
        (9, "routeplan.files"),
    ]
    problems = upward_imports(package_dir)
    assert [p.split(" (")[0] for p in problems] == [
        f"routeplan/model/bad.py:{line}: routeplan.model.bad imports {target}"
        for line, target in [
            (1, "routeplan.cli.main"),
            (2, "routeplan.planning"),
            (3, "routeplan.publishing.store"),
            (4, "routeplan.publishing.store"),
            (8, "routeplan.simulation.online"),
            (9, "routeplan.files"),
        ]
    ]
    assert problems[0].endswith("(cli is above model)")
