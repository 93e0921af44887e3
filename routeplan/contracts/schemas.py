"""JSON Schemas of routeplan's records and artifacts (the contract with users, ``schemas/``)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jsonschema
    from referencing import Registry


@cache
def schema_dir() -> Path:
    """The folder of the schemas, ``$ROUTEPLAN_SCHEMAS`` (``routeplan.settings``); read once, as
    the schemas it holds are cached."""
    from routeplan import settings

    return settings.current().schemas


@cache
def load_schema(name: str) -> dict[str, Any]:
    """``schemas/<name>.schema.json`` as a dict."""
    path = schema_dir() / f"{name}.schema.json"
    if not path.is_file():
        raise FileNotFoundError(f"schema {name!r} not found at {path}")
    return json.loads(path.read_text())


@cache
def _registry() -> Registry:
    """Every schema by its ``$id``, so ``$ref`` between them resolves offline."""
    from referencing import Registry, Resource

    resources = []
    for path in sorted(schema_dir().glob("*.schema.json")):
        schema = json.loads(path.read_text())
        resources.append((schema["$id"], Resource.from_contents(schema)))
    return Registry().with_resources(resources)


@cache
def _validator(name: str) -> jsonschema.Validator:
    import jsonschema

    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, registry=_registry(), format_checker=cls.FORMAT_CHECKER)


def schema_errors(name: str, document: Any) -> list[jsonschema.ValidationError]:
    """Every violation of schema ``name`` by ``document``, in document order (by path)."""
    return sorted(_validator(name).iter_errors(document), key=lambda e: list(e.path))


def validate_document(name: str, document: Any, where: str = "") -> None:
    """Raise ``ValueError`` naming every violation of schema ``name``."""
    errors = schema_errors(name, document)
    if errors:
        lines = [f"{'/'.join(map(str, e.path)) or '<root>'}: {e.message}" for e in errors[:10]]
        raise ValueError(f"{where or name} is not a valid {name}:\n  " + "\n  ".join(lines))
