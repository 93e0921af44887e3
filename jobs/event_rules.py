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

# a JSON number, in full: its sign, integer digits, fraction digits and exponent
NUMBER_SYNTAX = r"^(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([-+]?[0-9]+))?$"
MAX_LONG = 2**63 - 1
LONG_DIGITS = 19  # an integer of more digits is beyond a long
SHOWN = 80  # characters of an offending value quoted in a reason
# ts as epoch milliseconds: years 0001 to 9999, the range of a Spark timestamp
MIN_MILLIS, MAX_MILLIS = -62135596800000, 253402300799999


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
    duplicates are marked by ``mark_duplicates``). A reason is a fixed code, optionally ``": "``
    and a detail: fixed text, and a value from the data only as ``shown`` quotes it (one line,
    bounded) — see ``Reason``; ``jobs.accounting.reason_code`` keeps only the code."""
    from pyspark.sql import functions as F

    fields = {f.name: f for f in event_fields()}
    checks = [  # (condition, reason), the first that holds names the row's reason
        (F.col("malformed").isNotNull(), Reason(F.col("malformed"))),  # the reader's, in full
        (F.col("utf8_error").isNotNull(), Reason("invalid UTF-8", F.col("utf8_error"))),
    ]
    # each in its own projection, computed once (the next one reads it many times): a number's
    # text, then an integer's value, then the typed values (the checks read them)
    numeric = [f for f in fields.values() if f.kind in ("integer", "number", "ts")]
    raw = raw.select("*", *[_number_text(f).alias(f"{f.name}__n") for f in numeric])
    raw = raw.select(
        "*",
        *[
            integer_value(F.col(f"{f.name}__n")).alias(f"{f.name}__i")
            for f in numeric
            if f.kind != "number"
        ],
    )
    computed = []
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
            Reason(
                "ts outside the data interval",
                value="ts",
                after=f" (not in [{start:%Y-%m-%d}, {end:%Y-%m-%d}))",
            ),
        )
    )
    first = F.lit(None).cast("int")  # the number of the first check that holds
    for number, (condition, _) in reversed(list(enumerate(checks, 1))):
        first = F.when(F.coalesce(condition, F.lit(False)), F.lit(number)).otherwise(first)
    event_id = F.coalesce(
        values["event_id"],
        F.sha2(  # a stable id from the row's own texts; nulls are skipped
            F.concat_ws("\u0001", *[F.col(n) for n in fields if n != "event_id"]), 256
        ),
    )
    defaults = {n: f.default for n, f in fields.items() if f.default is not None}
    outputs = [n for n in fields if n != "event_id"]
    quoted = sorted({r.value for _, r in checks if r.value})
    typed = raw.select(
        *[
            (F.coalesce(values[n], F.lit(defaults[n])) if n in defaults else values[n]).alias(n)
            for n in outputs
        ],
        event_id.alias("event_id"),
        "raw",
        "raw_bytes",
        "source_file",
        first.alias("__why"),
        "malformed",  # the reader's reasons
        "utf8_error",
        *[F.col(n).alias(f"{n}__q") for n in quoted],  # the texts a reason may quote
    )
    why = F.col("__why")

    def pick(parts):  # the part of the reason of the check numbered ``why``
        picked = F.lit(None).cast("string")
        for number, part in reversed(list(enumerate(parts, 1))):
            if part is not None:
                picked = F.when(why == number, part).otherwise(picked)
        return picked

    reasons = [r for _, r in checks]
    text = F.concat(
        pick([F.lit(r.code) if isinstance(r.code, str) else r.code for r in reasons]),
        F.coalesce(pick([r.before() for r in reasons]), F.lit("")),
        F.coalesce(shown(pick([r.value and F.col(f"{r.value}__q") for r in reasons])), F.lit("")),
        F.coalesce(pick([F.lit(r.after) if r.after else None for r in reasons]), F.lit("")),
    )
    return typed.select(
        *outputs, "event_id", "raw", "raw_bytes", "source_file", text.alias("reason")
    )


@dataclass(frozen=True)
class Reason:
    """Why a row is quarantined: ``code`` (a fixed text; a column only for the reader's own
    reason, which is a code and a fixed detail already), then ``": "`` and the detail —
    ``detail`` (fixed text, or a column of one), the column named ``value`` (a value from the
    data) as ``shown`` quotes it, then ``after`` (fixed text)."""

    code: object  # str | Column
    detail: object = None  # str | Column | None
    value: str | None = None
    after: str = ""

    def before(self):
        """The text between the code and the quoted value (null: none)."""
        from pyspark.sql import functions as F

        if self.detail is None and self.value is None and not self.after:
            return None
        if self.detail is None:
            return F.lit(": ")
        detail = F.lit(self.detail) if isinstance(self.detail, str) else self.detail
        return F.concat(F.lit(": "), F.coalesce(detail, F.lit("null")))


def shown(text):
    """A value from the data as a reason's detail: its first ``SHOWN`` characters (invalid
    UTF-8 replaced by U+FFFD) escaped as inside a JSON string — ``"``, ``\\``, line breaks and
    control characters as ``\\"``, ``\\\\``, ``\\n``, ``\\u0001`` … — so the detail is one line
    of bounded length whatever the value holds."""
    from pyspark.sql import functions as F

    quoted = F.to_json(F.array(F.substring(F.make_valid_utf8(text), 1, SHOWN)))  # ["…"]
    inner = quoted.substr(F.lit(3), F.length(quoted) - 4)
    for separator in ("\u0085", "\u2028", "\u2029"):  # line breaks JSON leaves as they are
        inner = F.regexp_replace(inner, separator, f"\\\\u{ord(separator):04x}")
    return F.when(text.isNotNull(), inner)


def integer_value(text):
    """The integer a number's text denotes (a long), when the text is in JSON number syntax and
    its value is exactly integral and within a long's range; else null.

    Decided on the text alone, never after a float or decimal conversion that rounds: the
    exponent moves the decimal point over the digits, and the value is integral iff no nonzero
    digit is left after it (``3.0``, ``3e0``, ``30e-1``, ``0e999`` are; ``3.00000000001``,
    ``3.0000000000000000001e0``, ``1e-999`` are not). The usual text — canonical digits, a long
    written back as itself — takes a shortcut without a regex. An exponent beyond ±10**9 is
    clamped there (the value is then far out of range, zero, or a fraction: the same verdict)."""
    from pyspark.sql import functions as F

    plain = text.try_cast("long")
    sign, whole, fraction, exponent = (
        F.regexp_extract(text, NUMBER_SYNTAX, i) for i in range(1, 5)
    )
    far = 10**9  # an exponent is clamped to ±far
    beyond = F.when(exponent.startswith("-"), F.lit(-far)).otherwise(F.lit(far))  # not a long
    shift = F.when(exponent == "", F.lit(0)).otherwise(
        F.least(F.greatest(F.coalesce(exponent.try_cast("long"), beyond), F.lit(-far)), F.lit(far))
    )
    digits = F.concat(whole, fraction)
    significant = F.regexp_replace(digits, "^0+", "")  # from the first nonzero digit
    nonzero = F.regexp_replace(significant, "0+$", "")  # up to the last nonzero digit
    # how many of the significant digits stand before the decimal point
    before_point = F.length(whole) + shift - (F.length(digits) - F.length(significant))
    return (
        F.when(plain.cast("string") == text, plain)
        .when(~text.rlike(NUMBER_SYNTAX), F.lit(None).cast("long"))
        .when(nonzero == "", F.lit(0).cast("long"))
        .when(
            (F.length(nonzero) <= before_point) & (before_point <= LONG_DIGITS),
            F.concat(
                sign,
                F.rpad(significant, F.least(before_point, F.lit(LONG_DIGITS)).try_cast("int"), "0"),
            ).try_cast("long"),  # null beyond a long
        )
    )


def _number_text(field: Field):
    """The text a number field's rule reads (null when there is none): a JSON or Parquet
    number's (exact: see ``jobs.landing_read``) or a text in JSON number syntax. For ts (epoch
    milliseconds): a number, or a text of digits alone (in JSON a string, which
    ``"ts": "1795168800000"`` is)."""
    from pyspark.sql import functions as F

    text, kind = F.col(field.name), F.col(f"{field.name}__t")
    # a number's text is in number syntax, or NaN or ±Infinity, which the rules refuse
    number = F.when(kind == "number", text).when((kind == "text") & text.rlike(NUMBER_SYNTAX), text)
    if field.kind != "ts":
        return number
    digits_only = kind.isin("string", "text") & text.rlike("^-?[0-9]+$")
    return F.when(kind == "number", number).when(digits_only, text)


def _field_rule(field: Field):
    """``(typed value, [(condition, reason)…])`` of one field, from its texts and type (and,
    for a number field, ``<field>__n`` and ``<field>__i``: its number text and its integer
    value). The conditions read the value as the column ``<field>__v`` (computed once, by
    ``classify``); a present value that breaks the field's rule is null there. Every input
    value is cast with ``try_cast``, so no value stops the job."""
    from pyspark.sql import functions as F

    text, kind = F.col(field.name), F.col(f"{field.name}__t")
    typed = F.col(f"{field.name}__v")
    absent = kind == "null"
    checks = []
    if field.required:
        checks.append((absent | (text == ""), Reason(f"missing {field.name}")))

    def wrong_type(allowed: tuple[str, ...], wanted: str):
        return (
            ~absent & ~kind.isin(*allowed),
            Reason(f"wrong type for {field.name}", f"expected {wanted}, got ", f"{field.name}__t"),
        )

    if field.kind in ("string", "name"):
        checks.append(wrong_type(("string", "text"), "a string"))
        value = F.when(kind.isin("string", "text"), text)
        if field.kind == "name":
            checks.append(
                (
                    typed.isNotNull() & ~typed.rlike(spark_name_regex()),
                    Reason(f"invalid {field.name} name", value=field.name),
                )
            )
        elif not field.required:
            checks.append((typed == "", Reason(f"invalid {field.name}", "empty string")))
        return value, checks
    if field.kind == "ts":
        checks.append(
            wrong_type(("string", "text", "number", "timestamp"), "a string or an integer")
        )
        millis = F.col("ts__i")  # epoch milliseconds (see _number_text)
        value = (
            F.when(kind == "timestamp", text.try_cast("timestamp"))
            .when(
                (kind == "number") | F.col("ts__n").isNotNull(),
                F.when(millis.between(MIN_MILLIS, MAX_MILLIS), F.timestamp_millis(millis)),
            )
            .when(kind.isin("string", "text"), F.try_to_timestamp(text))
        )
        checks.append((~absent & typed.isNull(), Reason("unparseable ts", value="ts")))
        return value, checks
    # integer | number
    checks.append(
        wrong_type(("number", "text"), "an integer" if field.kind == "integer" else "a number")
    )
    number = F.col(f"{field.name}__n")
    if field.kind == "integer":
        exact = F.col(f"{field.name}__i")  # a long (see integer_value)
        target = "int" if field.maximum < 2**31 else "long"
        in_range = exact <= F.lit(field.maximum)
        value = exact.try_cast(target)
    else:
        value = number.try_cast("double")
        in_range = ~F.isnan(value) & (F.abs(value) != float("inf"))
    if field.minimum is not None:
        in_range = in_range & (value >= F.lit(field.minimum))
    checks.append(
        (
            ~absent & kind.isin("number", "text") & typed.isNull(),
            Reason(f"invalid {field.name}", value=field.name),
        )
    )
    return F.when(in_range, value), checks
