"""The OpenAPI pieces of the HTTP API: response bodies described by the project's JSON Schemas
(``schemas/``, references inlined) and the error answers every route shares."""

from __future__ import annotations

from typing import Any

from routeplan.contracts.schemas import load_schema


def openapi_schema(name: str) -> dict[str, Any]:
    """``schemas/<name>.schema.json`` for the OpenAPI document, references inlined."""

    def inline(node: Any, base: dict[str, Any]) -> Any:
        if isinstance(node, list):
            return [inline(item, base) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            file, _, pointer = node["$ref"].partition("#")
            doc = load_schema(file.removesuffix(".schema.json")) if file else base
            target: Any = doc
            for part in filter(None, pointer.split("/")):
                target = target[part]
            return inline(target, doc)
        return {k: inline(v, base) for k, v in node.items() if k not in ("$schema", "$id", "$defs")}

    return inline(load_schema(name), load_schema(name))


def schema_response(name: str, description: str) -> dict[str, Any]:
    """An OpenAPI response whose body is ``schemas/<name>.schema.json``."""
    return {
        "description": description,
        "content": {"application/json": {"schema": openapi_schema(name)}},
    }


DETAIL = {
    "application/json": {
        "schema": {
            "type": "object",
            "required": ["detail"],
            "properties": {"detail": {"type": "string"}},
        }
    }
}
ERRORS: dict[int | str, dict[str, Any]] = {
    404: {
        "description": "unknown stream or version (`detail` lists what exists), or a stream "
        "name that breaks the name rule (`detail` says the rule)",
        "content": DETAIL,
    },
    500: {
        "description": "a stored file fails its schema or checksum (`detail` names it)",
        "content": DETAIL,
    },
}
DOCUMENT_ERRORS: dict[int | str, dict[str, Any]] = {
    304: {"description": "`If-None-Match` matches the ETag: the client's copy is current"},
    **ERRORS,
}
