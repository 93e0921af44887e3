"""The policy file as text: YAML read with the line of every key, and schema errors reported at
their line (``file:line: stream 'x': field: message``), so that a mistake in
``config/streams.yaml`` points at the line to change. ``routeplan.streams.policy`` checks the
rest."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any

import yaml

from routeplan.contracts.schemas import schema_errors
from routeplan.model.names import name_rule


class _SafeLoader(yaml.SafeLoader):
    """PyYAML's safe loader refusing a key given twice (PyYAML keeps the last one silently, so
    a stream listed twice would lose its first entry)."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, typing.Hashable) and key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"{key!r} given twice in one mapping", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_SafeLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_yaml(
    text: str, where: str, error: type[Exception]
) -> tuple[Any, dict[tuple[Any, ...], int]]:
    """The document and the line (1-based) of each mapping key by its path, for messages."""
    try:
        doc = yaml.load(text, Loader=_SafeLoader)  # noqa: S506 (a SafeLoader subclass)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        position = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        problem = ": ".join(str(x) for x in (err.context, err.problem) if x)
        raise error(f"{where}{position}: not valid YAML: {problem}") from None
    except yaml.YAMLError as err:
        raise error(f"{where}: not valid YAML: {err}") from None
    if doc is not None and not isinstance(doc, dict):
        raise error(f"{where}: expected a mapping with defaults and streams at the top")
    lines: dict[tuple[Any, ...], int] = {}
    _collect_lines(node, (), lines)
    return doc, lines


def _collect_lines(node: Any, path: tuple[Any, ...], lines: dict[tuple[Any, ...], int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            lines[(*path, key)] = key_node.start_mark.line + 1
            _collect_lines(value_node, (*path, key), lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[(*path, i)] = item.start_mark.line + 1
            _collect_lines(item, (*path, i), lines)


def check_schema(
    doc: Any, where: str, lines: Mapping[tuple[Any, ...], int], error: type[Exception]
) -> None:
    """The schema's violations, each as ``file:line: stream 'x': field: message``."""
    errors = schema_errors("streams", doc)
    if not errors:
        return
    messages = []
    for err in errors[:10]:
        path = list(err.absolute_path)
        if err.validator == "oneOf" and err.context:  # say what was expected, not "not valid"
            err = min(err.context, key=lambda e: len(list(e.absolute_path)))
            path = list(err.absolute_path) or path
        line = None
        for n in range(len(path), -1, -1):
            line = lines.get(tuple(path[:n]))
            if line is not None:
                break
        at = f"{where}:{line}" if line else where
        if len(path) >= 2 and path[0] == "streams":
            who, rest = f"stream {path[1]!r}", path[2:]
        elif path and path[0] == "defaults":
            who, rest = "defaults", path[1:]
        else:
            who, rest = "", path
        field_name = ".".join(map(str, rest))
        message = err.message
        if "propertyNames" in err.relative_schema_path:
            line = lines.get((*path, err.instance), line)
            at = f"{where}:{line}" if line else where
            message = f"invalid stream name {err.instance!r}: {name_rule()}"
        elif err.validator == "additionalProperties":
            message = (
                f"{err.message}; allowed: {', '.join(sorted(err.schema.get('properties', {})))}"
            )
        parts = [at] + [p for p in (who, field_name) if p] + [message]
        messages.append(": ".join(parts))
    raise error("\n".join(messages))
