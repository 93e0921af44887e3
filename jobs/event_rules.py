"""ingest's per-row rules: the stream-event fields as ``schemas/stream_event.schema.json``
gives them (kind, required, bounds, default) and ``classify`` — every raw row's typed values and
the reason it is quarantined (null for a valid row). JSON values must have the schema's type;
text (CSV fields, Parquet string columns) is read as the field's type."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache

from jobs.common import RunArgs
from routeplan.contracts.schemas import load_schema
from routeplan.model.names import spark_name_regex

NUMBER_SYNTAX = r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$"  # a JSON number, in full
MAX_LONG = 2**63 - 1
SHOWN = 80  # characters of an offending value quoted in a reason


@dataclass(frozen=True)
class Field:
    """One stream-event field and the rule its values obey (read from the schema)."""

    name: str
    kind: str  # "string" | "name" | "integer" | "number" | "ts"
    required: bool
    minimum: float | None = None
    maximum: float | None = None
    default: object = None


@cache
def event_fields() -> tuple[Field, ...]:
    """The stream-event fields, in schema order, with their kinds and bounds."""
    schema = load_schema("stream_event")
    fields = []
    for name, spec in schema["properties"].items():
        refs = [spec.get("$ref")] + [s.get("$ref") for s in spec.get("anyOf", [])]
        types = spec.get("type", [])
        types = {types} if isinstance(types, str) else set(types)
        if name == "ts":
            kind = "ts"
        elif "name.schema.json" in refs:
            kind = "name"
        elif "integer" in types:
            kind = "integer"
        elif "number" in types:
            kind = "number"
        else:
            kind = "string"
        fields.append(
            Field(
                name,
                kind,
                name in schema["required"],
                spec.get("minimum"),
                spec.get("maximum", MAX_LONG if kind == "integer" else None),
                spec.get("default"),
            )
        )
    return tuple(fields)


def classify(raw, args: RunArgs):
    """Typed events with ``reason`` (null for valid rows, else why the row is quarantined;
    duplicates are marked by ``mark_duplicates``)."""
    from pyspark.sql import functions as F

    fields = {f.name: f for f in event_fields()}
    checks = [  # (condition, reason), the first that holds names the row's reason
        (F.col("malformed").isNotNull(), F.col("malformed")),
        (F.col("bad_utf8"), F.lit("invalid UTF-8 (the raw bytes are in raw_bytes)")),
    ]
    computed = []  # typed values, computed once in a first projection (the checks read them)
    for field in fields.values():
        value, field_checks = _field_rule(field)
        computed.append(value.alias(f"{field.name}__v"))
        checks += field_checks
    raw = raw.select("*", *computed)
    values = {name: F.col(f"{name}__v") for name in fields}
    start = datetime.combine(args.interval_start, datetime.min.time(), UTC)
    end = datetime.combine(args.interval_end, datetime.min.time(), UTC)
    checks.append(
        (
            (values["ts"] < F.lit(start)) | (values["ts"] >= F.lit(end)),
            F.concat(
                F.lit(f"ts outside the data interval [{start:%Y-%m-%d}, {end:%Y-%m-%d}): "),
                F.col("ts"),
            ),
        )
    )
    reason = F.lit(None).cast("string")
    for condition, text in reversed(checks):
        reason = F.when(F.coalesce(condition, F.lit(False)), text).otherwise(reason)
    event_id = F.coalesce(
        values["event_id"],
        F.sha2(  # a stable id from the row's own texts; nulls are skipped
            F.concat_ws("\u0001", *[F.col(n) for n in fields if n != "event_id"]), 256
        ),
    )
    defaults = {n: f.default for n, f in fields.items() if f.default is not None}
    typed = raw.select(
        *[
            (F.coalesce(values[n], F.lit(defaults[n])) if n in defaults else values[n]).alias(n)
            for n in fields
            if n != "event_id"
        ],
        event_id.alias("event_id"),
        "raw",
        "raw_bytes",
        "source_file",
        reason.alias("reason"),
    )
    return typed


def _field_rule(field: Field):
    """``(typed value, [(condition, reason)…])`` of one field, from its texts and type. The
    conditions read the value as the column ``<field>__v`` (computed once, by ``classify``); a
    present value that breaks the field's rule is null there."""
    from pyspark.sql import functions as F

    text, kind = F.col(field.name), F.col(f"{field.name}__t")
    typed = F.col(f"{field.name}__v")
    shown = F.substring(F.expr(f"make_valid_utf8(`{field.name}`)"), 1, SHOWN)
    absent = kind == "null"
    checks = []
    if field.required:
        checks.append((absent | (text == ""), F.lit(f"missing {field.name}")))

    def wrong_type(allowed: tuple[str, ...], wanted: str):
        return (
            ~absent & ~kind.isin(*allowed),
            F.concat(F.lit(f"wrong type for {field.name}: expected {wanted}, got "), kind),
        )

    if field.kind in ("string", "name"):
        checks.append(wrong_type(("string", "text"), "a string"))
        value = F.when(kind.isin("string", "text"), text)
        if field.kind == "name":
            checks.append(
                (
                    typed.isNotNull() & ~typed.rlike(spark_name_regex()),
                    F.concat(F.lit(f"invalid {field.name} name: "), shown),
                )
            )
        elif not field.required:
            checks.append((typed == "", F.lit(f"invalid {field.name}: empty string")))
        return value, checks
    if field.kind == "ts":
        checks.append(
            wrong_type(("string", "text", "number", "timestamp"), "a string or an integer")
        )
        millis = F.when(kind == "number", text).when(text.rlike("^-?[0-9]+$"), text)
        millis_value = millis.try_cast("decimal(38,10)")
        value = (
            F.when(kind == "timestamp", text.try_cast("timestamp"))
            .when(
                millis.isNotNull(),
                F.when(
                    millis_value == F.floor(millis_value),
                    F.timestamp_millis(millis_value.try_cast("long")),
                ),
            )
            .when(kind.isin("string", "text"), F.try_to_timestamp(text))
        )
        checks.append((~absent & typed.isNull(), F.concat(F.lit("unparseable ts: "), shown)))
        return value, checks
    # integer | number: a JSON number, or text in JSON number syntax
    checks.append(
        wrong_type(("number", "text"), "an integer" if field.kind == "integer" else "a number")
    )
    # a JSON or Parquet number's text is in number syntax already: only text is checked
    number = F.when(kind == "number", text).when((kind == "text") & text.rlike(NUMBER_SYNTAX), text)
    if field.kind == "integer":
        # digits alone, at most 18 characters: a long, read without decimal arithmetic
        plain = (F.length(number) <= 18) & ~(
            number.contains(".") | number.contains("e") | number.contains("E")
        )
        exact = number.try_cast("decimal(38,10)")
        target = "int" if field.maximum < 2**31 else "long"
        whole = number.cast("long")
        in_range = F.when(plain, whole <= F.lit(field.maximum)).otherwise(
            (exact == F.floor(exact)) & (exact <= F.lit(field.maximum))
        )
        value = F.when(plain, whole.try_cast(target)).otherwise(exact.try_cast(target))
    else:
        value = number.try_cast("double")
        in_range = ~F.isnan(value) & (value != float("inf"))
    if field.minimum is not None:
        in_range = in_range & (value >= F.lit(field.minimum))
    checks.append(
        (
            ~absent & kind.isin("number", "text") & typed.isNull(),
            F.concat(F.lit(f"invalid {field.name}: "), shown),
        )
    )
    return F.when(in_range, value), checks
