"""The API's dry run (``POST /streams/{stream}/plan``): a stream's planning inputs planned by its
policy, as the nightly run would (``routeplan.streams.service.plan_stream``); nothing is
published. Each error is an ``HTTPException`` with the status the route documents."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from fastapi import HTTPException, Request

from routeplan import storage
from routeplan.contracts.documents import parse_document
from routeplan.errors import InputError, one_line
from routeplan.model.table import Table
from routeplan.streams.inputs import inputs_from_document
from routeplan.streams.overrides import RunOverrides, policy_for
from routeplan.streams.policy import PolicyError, load_policies
from routeplan.streams.service import plan_stream

log = logging.getLogger("routeplan.api")


def plan_request(
    stream: str,
    raw: bytes,
    max_bytes: int,
    policies_path: str,
    current: Callable[[], Table | None],
) -> dict[str, Any]:
    """The decision's summary for the inputs in ``raw`` (``current`` reads the store's
    LATEST); 400 for a body that is not JSON, 422 for inputs that cannot be planned, 500 for a
    broken policies file."""
    try:
        doc = parse_document(raw, "request body", max_bytes)
    except ValueError as err:
        raise HTTPException(400, one_line(err, 500)) from None
    try:
        inputs = inputs_from_document(doc, "request body")
    except InputError as err:
        raise HTTPException(422, one_line(err, 500)) from None
    if inputs.stream != stream:
        raise HTTPException(422, f"the body holds the inputs of stream {inputs.stream!r}")
    notes = []
    try:
        if storage.is_file(policies_path):
            policies = load_policies(policies_path)
            if not policies.is_listed(stream):
                notes.append(
                    f"stream {stream!r} is not listed in the policies file: planned with its "
                    "defaults, as the nightly run does"
                )
        else:
            policies = None
            notes.append("no policies file: planned with the default strategy")
        policy = policy_for(RunOverrides(), policies, stream)
    except (PolicyError, ValueError, OSError) as err:
        name = os.path.basename(policies_path.rstrip("/"))
        problem = one_line(str(err).replace(policies_path, name), 500)
        log.error("policies file %s: %s", policies_path, err)
        raise HTTPException(500, f"the deployment's policies are broken: {problem}") from None
    if inputs.kind != policy.kind:
        raise HTTPException(
            422,
            f"{inputs.kind} inputs, but stream {stream!r} is planned as {policy.kind} by "
            "its policy",
        )
    try:
        decided = plan_stream(policy, inputs.loads, current(), inputs.workers, inputs.logged)
    except ValueError as err:  # PlanRefusedError, a policy that cannot plan these inputs
        raise HTTPException(422, f"{stream}: {one_line(err, 500)}") from None
    summary = decided.summary()
    summary["notes"] = [*summary["notes"], *notes]
    summary["published"] = False
    return summary


async def bounded_body(request: Request, max_bytes: int) -> bytes:
    """The request's body, 413 once it is larger than ``max_bytes`` (never read whole)."""
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > max_bytes:
        raise HTTPException(413, f"the body is larger than {max_bytes} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise HTTPException(413, f"the body is larger than {max_bytes} bytes")
    return bytes(body)


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinity as None (JSON has neither)."""
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value
