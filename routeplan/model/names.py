"""The one rule for stream and worker names (``schemas/name.schema.json``).

The rule is ``routeplan_client.names``' (the client every producer installs checks it too);
tests/test_client_package.py keeps its pattern and length equal to the schema's.

Names taken from data become paths (``routing/<stream>/``, Delta's ``stream=<stream>``
partitions) and URL segments, so every boundary checks them with this module: ingest
(quarantine), the routing store (refuse), the HTTP API (4xx), the CLI and the client.

A valid name matches ``^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`` in full: 1–128 characters of
Kafka's topic alphabet, never starting with ``.`` or ``-`` — so ``.``, ``..``, ``a/b``, ``a\\b``,
hidden files, empty strings, spaces, newlines and non-ASCII letters are all refused.
"""

from __future__ import annotations

from routeplan_client.names import (
    NAME_PATTERN,
    InvalidNameError,
    check_name,
    is_valid_name,
    name_rule,
)

__all__ = ["InvalidNameError", "check_name", "is_valid_name", "name_rule", "spark_name_regex"]


def spark_name_regex() -> str:
    """The pattern for Spark's ``rlike`` (Java regex; ``rlike`` searches, the pattern anchors)."""
    return NAME_PATTERN
