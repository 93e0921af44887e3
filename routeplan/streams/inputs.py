"""A stream's planning inputs as a document (``schemas/stream_inputs.schema.json``).

The plan job writes, per stream and night, what it planned from — the loads of the planning
window, the workers (capacities resolved) and the load each logged worker carried — to
``<home>/reports/<day>/plan-inputs/<stream>.json``. ``routeplan plan --policies`` and the HTTP
API's dry run read the same document, so "what would tonight's run choose for these loads?" is
answered by the same ``plan_stream`` on the same values, without Spark.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from routeplan.contracts.schemas import schema_errors
from routeplan.errors import InputError
from routeplan.model.hashing import DEFAULT_SEED
from routeplan.model.loads import Loads, LoadSnapshot, PartitionLoad
from routeplan.model.workers import Workers


@dataclass(frozen=True)
class StreamInputs:
    """What planning one stream starts from (``logged`` None: the logged loads are unknown)."""

    stream: str
    loads: Loads
    workers: Workers
    logged: Mapping[str, float] | None = None
    interval_start: str | None = None  # YYYY-MM-DD
    window: tuple[str, str] | None = None  # ISO-8601 [start, end)

    @property
    def kind(self) -> str:
        return "partition_assignment" if isinstance(self.loads, PartitionLoad) else "key_routing"


def inputs_document(inputs: StreamInputs) -> dict[str, Any]:
    """``inputs`` as a JSON-ready document."""
    return {
        "stream": inputs.stream,
        "interval_start": inputs.interval_start,
        "window": list(inputs.window) if inputs.window else None,
        "loads": loads_document(inputs.loads),
        "workers": inputs.workers.to_records(),
        "logged": None
        if inputs.logged is None
        else {k: float(v) for k, v in inputs.logged.items()},
    }


def loads_document(loads: Loads) -> dict[str, Any]:
    """Every field of a ``LoadSnapshot`` or ``PartitionLoad`` as JSON values."""
    if isinstance(loads, PartitionLoad):
        doc = {"kind": "partition_assignment", "partition_load": loads.partition_load.tolist()}
        if loads.partition_windows is not None:
            doc["partition_windows"] = loads.partition_windows.tolist()
        if loads.partition_racks is not None:
            doc["partition_racks"] = [list(r) for r in loads.partition_racks]
        return doc
    doc: dict[str, Any] = {
        "kind": "key_routing",
        "key_group_load": loads.key_group_load.tolist(),
        "hot_key_load": {k: float(v) for k, v in sorted(loads.hot_key_load.items())},
        "distinct_keys": None if loads.distinct_keys is None else loads.distinct_keys.tolist(),
        "hash_seed": loads.hash_seed,
        "key_group_resources": {k: v.tolist() for k, v in loads.key_group_resources.items()},
    }
    if loads.key_group_flow is not None:
        doc["key_group_flow"] = loads.key_group_flow.tolist()
        doc["flow_anchors"] = list(loads.flow_anchors)
    if loads.key_group_windows is not None:
        doc["key_group_windows"] = loads.key_group_windows.tolist()
    if loads.hot_key_windows:
        doc["hot_key_windows"] = {k: v.tolist() for k, v in sorted(loads.hot_key_windows.items())}
    return doc


def inputs_from_document(doc: Any, where: str = "stream inputs") -> StreamInputs:
    """The ``StreamInputs`` of a document; ``InputError`` naming ``where`` and what is wrong."""
    problems = [_problem(err) for err in schema_errors("stream_inputs", doc)[:5]]
    if problems:
        raise InputError(f"{where}: not a stream's planning inputs: " + "; ".join(problems))
    try:
        return StreamInputs(
            stream=doc["stream"],
            loads=_loads(doc["stream"], doc["loads"]),
            workers=Workers.from_records(doc["workers"]),
            logged=doc.get("logged"),
            interval_start=doc.get("interval_start"),
            window=tuple(doc["window"]) if doc.get("window") else None,  # type: ignore[arg-type]
        )
    except ValueError as err:  # the values' own checks (e.g. a flow edge out of range)
        raise InputError(f"{where}: {err}") from None


def _problem(err: Any) -> str:
    """One schema violation, short: its path and message (the deepest alternative of a
    ``oneOf``), with the offending value cut to a few characters."""
    if err.validator == "oneOf" and err.context:
        err = max(err.context, key=lambda e: len(list(e.absolute_path)))
    path = "/".join(map(str, err.absolute_path)) or "<root>"
    message = err.message if len(err.message) <= 120 else err.message[:117] + "..."
    return f"{path}: {message}"


def _loads(stream: str, doc: Mapping[str, Any]) -> Loads:
    if doc["kind"] == "partition_assignment":
        return PartitionLoad(
            stream,
            np.asarray(doc["partition_load"], dtype=float),
            _windows(doc.get("partition_windows")),
            doc.get("partition_racks"),
        )
    flow = doc.get("key_group_flow")
    return LoadSnapshot(
        stream=stream,
        key_group_load=np.asarray(doc["key_group_load"], dtype=float),
        hot_key_load=dict(doc.get("hot_key_load") or {}),
        distinct_keys=None if doc.get("distinct_keys") is None else doc["distinct_keys"],
        hash_seed=int(doc.get("hash_seed", DEFAULT_SEED)),
        key_group_resources=dict(doc.get("key_group_resources") or {}),
        key_group_flow=None if flow is None else np.asarray(flow, dtype=float).reshape(-1, 3),
        flow_anchors=tuple(doc.get("flow_anchors") or ()),
        key_group_windows=_windows(doc.get("key_group_windows")),
        hot_key_windows={
            k: np.asarray(v, dtype=float) for k, v in (doc.get("hot_key_windows") or {}).items()
        },
    )


def _windows(rows: Any) -> np.ndarray | None:
    """Windows × units from a document's rows (each window's loads); ValueError when they are
    ragged."""
    if rows is None:
        return None
    if len({len(r) for r in rows}) > 1:
        raise ValueError("every window needs a load per unit")
    return np.asarray(rows, dtype=float)
