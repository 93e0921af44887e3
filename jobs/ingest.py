"""ingest: landing files of a data interval → Delta ``bronze.stream_events`` (+ quarantine).

Reads ``<landing>/<YYYY-MM-DD>/**`` for each day of the interval: JSON Lines, CSV (with a header
row, RFC 4180 quoting, fields may span lines) or Parquet, optionally gzip. Every row ends up in
exactly one place:

* ``bronze.stream_events`` (partitioned by stream and date) — a row exactly as
  ``schemas/stream_event.schema.json`` allows it, first of its event_id; strings stored as given
  (never trimmed, never re-encoded);
* ``bronze.quarantine`` — the raw row and the reason: not a record, invalid UTF-8, a field of the
  wrong type or out of range, an invalid stream/worker name, duplicate event_id, event time outside
  the interval. Raw text that is not UTF-8 is kept as bytes in ``raw_bytes`` (``raw`` then holds
  it with U+FFFD in place of the bad bytes, so every reader can load the table);
* not selected — a valid row of a stream the run was not asked for (counted, left for its run).

A landing file that cannot be read at all (unknown type, corrupt gzip or Parquet, a CSV header
that is not UTF-8 or names a column twice) goes to quarantine whole — one row naming the file and
the reason — and the rest of the day proceeds, unless more than ``--max-bad-files`` files are bad
or more than ``--max-quarantined-share`` of the rows are quarantined: then the tables are still
written (so the quarantine can be inspected) and the job fails naming every offending file.

Types follow JSON Schema: a JSON value must have the schema's type (``"12"`` is not an integer,
``3.0`` is); CSV fields and Parquet string columns are text, read as the field's type (JSON
number syntax for numbers; empty = absent); Parquet numeric and timestamp columns are typed
values. ``null`` means absent. Rerunning an interval replaces its rows in both tables.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import PurePosixPath

from jobs.common import (
    RunArgs,
    location_arg,
    log,
    read_delta,
    run_args,
    run_parser,
    spark_session,
    table_exists,
    write_deltas,
)
from routeplan import storage
from routeplan.contracts.schemas import load_schema
from routeplan.errors import one_line
from routeplan.model.names import spark_name_regex

SUFFIXES = {
    ".jsonl": "jsonl",
    ".json": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
}
NUMBER_SYNTAX = r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$"  # a JSON number, in full
MAX_LONG = 2**63 - 1
SHOWN = 80  # characters of an offending value quoted in a reason
# what ``schema_of_variant`` calls a JSON number (its name up to the first "(")
NUMBER_KINDS = ("BIGINT", "INT", "SMALLINT", "TINYINT", "DOUBLE", "FLOAT", "DECIMAL")


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


# ---------------------------------------------------------------------------- landing files


@dataclass(frozen=True)
class LandingFile:
    path: str  # what Spark and ``routeplan.storage`` read: an absolute local path or s3a://…
    uri: str  # as Spark names it in ``_metadata.file_path`` (``file:/…`` or ``s3a://…``)
    fmt: str | None  # None: unknown type
    gzip: bool


def landing_files(landing: str, args: RunArgs) -> list[LandingFile]:
    """Every file under the interval's day folders of the ``landing`` location (a local folder
    or a URI; files whose names start with ``.`` or ``_`` are skipped)."""
    found = []
    for day in args.days():
        for location in storage.list_files(storage.join(landing, day.isoformat())):
            name = PurePosixPath(location)
            if name.name.startswith((".", "_")):
                continue
            gz = name.suffix == ".gz"
            suffixes = name.suffixes[-2:] if gz else name.suffixes[-1:]
            fmt = SUFFIXES.get(suffixes[0] if suffixes else "")
            path = storage.spark_uri(location)
            uri = path if storage.is_remote(path) else f"file:{path}"
            found.append(LandingFile(path, uri, fmt, gz))
    return found


def probe(file: LandingFile) -> tuple[str | None, object]:
    """``(reason the file cannot be read, None)`` or ``(None, what reading it needs)``.

    The driver reads only what it must: a CSV's header line, a Parquet file's footer (through
    ``routeplan.storage``, wherever the file is). Damage further in is found by Spark while
    reading (see ``unreadable_file``).
    """
    if file.fmt is None:
        return f"unknown file type (expected {', '.join(sorted(SUFFIXES))}, optionally .gz)", None
    if file.fmt == "parquet" and file.gzip:
        return "gzip-compressed Parquet is not supported (Parquet compresses itself)", None
    if file.gzip and not storage.read_bytes(file.path, limit=0):
        return "empty .gz file (0 bytes is not a gzip stream)", None
    if file.fmt == "csv":
        return _csv_header(file)
    if file.fmt == "parquet":
        import pyarrow.parquet as pq

        fs, path = storage.filesystem(file.path)
        try:
            with fs.open(path, "rb") as handle:
                schema = pq.read_schema(handle)
        except Exception as error:  # noqa: BLE001 - any failure means "not readable Parquet"
            return f"not a readable Parquet file: {one_line(error)}", None
        return None, tuple((f.name, str(f.type)) for f in schema)
    return None, None


def _csv_header(file: LandingFile) -> tuple[str | None, object]:
    fs, path = storage.filesystem(file.path)
    try:
        with fs.open(path, "rb") as raw:
            handle = gzip.GzipFile(fileobj=raw) if file.gzip else raw
            first = handle.readline()
    except (OSError, EOFError) as error:
        return f"unreadable gzip file: {one_line(error)}", None
    try:
        text = first.decode("utf-8-sig")  # a byte-order mark is not part of the first name
    except UnicodeDecodeError as error:
        return f"CSV header is not UTF-8 (byte {error.start}: {first[error.start :][:4]!r})", None
    if not text.strip():
        return None, ()  # an empty file: no rows
    header = next(csv.reader(io.StringIO(text)))
    twice = sorted({h for h in header if header.count(h) > 1})
    if twice:
        return f"CSV header names a column twice: {', '.join(map(repr, twice))}", None
    return None, tuple(header)


_FAILED_FILE = re.compile(r"Encountered error while reading file (\S+?)\.?(?:\s|$)")
_CAUSE = re.compile(r"Caused by: ([\w.$]+(?:Exception|Error)[^\n]*)")


def unreadable_file(error: Exception, files: dict[str, LandingFile]) -> tuple[str, str] | None:
    """``(uri, reason)`` when Spark failed on reading one of ``files`` (FAILED_READ_FILE)."""
    text = str(error)
    match = _FAILED_FILE.search(text)
    if not match:
        return None
    uri = re.sub(r"^file:/+", "file:/", match.group(1))  # the form of _metadata.file_path
    if uri not in files:
        return None
    causes = _CAUSE.findall(text)
    cause = causes[-1] if causes else text.splitlines()[0]
    return uri, f"unreadable file: {one_line(cause)}"


# ---------------------------------------------------------------------------- reading


def read_raw(spark, files: list[LandingFile], needs: dict[str, object]):
    """One DataFrame, whatever the format: per field ``<f>`` (its text) and ``<f>__t`` (its
    type: string | number | text | timestamp | null | object | array | boolean | …), plus
    ``raw``, ``raw_bytes``, ``source_file``, ``malformed`` (why the row is not a record) and
    ``bad_utf8``. ``needs`` holds what ``probe`` found (CSV headers, Parquet schemas)."""
    from pyspark.sql import functions as F

    by_format: dict[str, list[LandingFile]] = {}
    for file in files:
        by_format.setdefault(file.fmt, []).append(file)
    parts = []
    if "jsonl" in by_format:
        parts.append(_read_jsonl(spark, [f.path for f in by_format["jsonl"]]))
    by_header: dict[tuple[str, ...], list[str]] = {}
    for file in by_format.get("csv", []):
        if needs[file.uri]:  # an empty file has no header and no rows
            by_header.setdefault(needs[file.uri], []).append(file.path)
    if by_header:
        csv_paths = [p for paths in by_header.values() for p in paths]
        not_utf8 = [
            r.f
            for r in spark.read.text(csv_paths)
            .where(~F.expr("is_valid_utf8(value)"))
            .select(F.col("_metadata.file_path").alias("f"))
            .distinct()
            .collect()
        ]
        for header, paths in by_header.items():
            parts.append(_read_csv(spark, header, paths, not_utf8))
    by_schema: dict[object, list[str]] = {}
    for file in by_format.get("parquet", []):
        by_schema.setdefault(needs[file.uri], []).append(file.path)
    for paths in by_schema.values():
        parts.append(_read_parquet(spark, paths))
    if not parts:
        return None
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result


def _typed(columns: dict[str, tuple], fields: tuple[Field, ...]):
    """Select list ``<f>, <f>__t`` for every field (absent fields: null, type "null")."""
    from pyspark.sql import functions as F

    out = []
    for field in fields:
        text, kind = columns.get(field.name, (F.lit(None), F.lit("null")))
        out += [text.cast("string").alias(field.name), kind.alias(f"{field.name}__t")]
    return out


def _read_jsonl(spark, paths: list[str]):
    from pyspark.sql import functions as F

    fields = event_fields()
    text = spark.read.text(paths).select(
        F.col("value"), F.col("_metadata.file_path").alias("source_file")
    )
    text = text.where(F.trim("value") != "")  # blank lines are not rows
    text = text.withColumn("v", F.expr("try_parse_json(value)"))
    # a JSON text that parses and starts with { is an object (cheaper than its variant schema)
    starts_an_object = F.expr("trim(LEADING ' \t\r\n' FROM value)").startswith("{")
    malformed = (
        F.when(F.col("v").isNull(), F.lit("malformed line: not valid JSON"))
        .when(~starts_an_object, F.lit("malformed line: not a JSON object"))
        .when(_text_after_the_object(), F.lit("malformed line: text after the JSON object"))
    )
    # every field in one walk over the object (a path lookup per field cost 1.4× as much in a
    # no-op write of 1M lines);
    # its text and its type's name computed once, in their own projection (the type is read
    # by every branch below)
    struct = ", ".join(f"`{f.name}`: variant" for f in fields)
    text = text.withColumn("s", F.expr(f"try_variant_get(v, '$', 'struct<{struct}>')"))
    text = text.select(
        "value",
        "source_file",
        "v",
        *[F.try_variant_get(f"s.`{f.name}`", "$", "string").alias(f.name) for f in fields],
        *[
            F.regexp_extract(F.schema_of_variant(f"s.`{f.name}`"), "^([A-Z]+)", 1).alias(
                f"{f.name}__k"
            )
            for f in fields
        ],
    )
    columns = {}
    for field in fields:
        kind = F.col(f"{field.name}__k")
        columns[field.name] = (
            F.col(field.name),
            F.when(kind.isNull() | (kind == "VOID"), F.lit("null"))
            .when(kind == "STRING", F.lit("string"))
            .when(kind.isin(*NUMBER_KINDS), F.lit("number"))
            .otherwise(F.lower(kind)),
        )
    valid = F.expr("is_valid_utf8(value)")
    return text.select(
        *_typed(columns, fields),
        F.expr("make_valid_utf8(value)").alias("raw"),
        F.when(~valid, F.col("value").cast("binary")).alias("raw_bytes"),
        "source_file",
        malformed.alias("malformed"),
        (~valid).alias("bad_utf8"),
    )


def _text_after_the_object():
    """True when the line ``value``, parsed as the JSON object ``v``, goes on after it
    (``try_parse_json`` ignores what follows the first value). A line that does not end in ``}``
    goes on; one whose only ``}`` is its last character does not (the usual flat event: decided
    without writing ``v`` back); otherwise it goes on iff it holds more ``}`` than the parsed
    object written back (``to_json``) — unless it escapes ``}`` as ``\\u007d``, which the exact
    skeleton comparison settles."""
    from pyspark.sql import functions as F

    def closing(text):
        return F.length(text) - F.length(F.replace(text, F.lit("}"), F.lit("")))

    value, written_back = F.col("value"), F.expr("to_json(v)")
    trimmed = F.expr("trim(TRAILING ' \t\r\n' FROM value)")
    return (
        F.when(~trimmed.endswith("}"), F.lit(True))
        .when(F.instr(value, "}") == F.length(trimmed), F.lit(False))
        .when(
            F.lower(value).contains("\\u007d"),
            _skeleton_length(value) != _skeleton_length(written_back),
        )
        .otherwise(closing(value) != closing(written_back))
    )


def _skeleton_length(column):
    """Length of a JSON text with every string → ``"``, number → ``0``, literal → ``t`` and
    whitespace removed: equal for a line and its parsed value's ``to_json`` iff nothing follows
    the first value (key order does not change it; the string pattern is possessive, so long
    strings cannot overflow Java's regex stack)."""
    from pyspark.sql import functions as F

    s = F.regexp_replace(column, r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', '"')
    s = F.regexp_replace(s, r"-?(?:[0-9]++\.?[0-9]*+|\.[0-9]++)(?:[eE][-+]?[0-9]++)?", "0")
    s = F.regexp_replace(s, r"true|false|null|NaN|-?Infinity", "t")
    return F.length(F.regexp_replace(s, r"[ \t\r\n]++", ""))


def _read_csv(spark, header: tuple[str, ...], paths: list[str], not_utf8: list[str]):
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    fields = event_fields()
    schema = StructType(
        [StructField(f"c{i}", StringType()) for i in range(len(header))]
        + [StructField("_corrupt", StringType())]
    )
    frame = (
        spark.read.option("header", True)
        .option("multiLine", True)  # quoted fields may hold line breaks
        .option("escape", '"')  # RFC 4180: "" inside a quoted field is one "
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", "_corrupt")
        .schema(schema)
        .csv(paths)
    )
    by_name = {name: F.col(f"c{i}") for i, name in enumerate(header)}
    columns = {}
    for field in fields:
        if field.name in by_name:
            text = F.nullif(by_name[field.name], F.lit(""))  # an empty field is absent
            columns[field.name] = (text, F.when(text.isNull(), "null").otherwise("text"))
    values = [F.coalesce(F.col(f"c{i}"), F.lit("")) for i in range(len(header))]
    joined = F.concat_ws(",", *values)
    return frame.select(
        *_typed(columns, fields),
        F.coalesce("_corrupt", joined).alias("raw"),
        F.lit(None).cast("binary").alias("raw_bytes"),
        F.col("_metadata.file_path").alias("source_file"),
        F.when(
            F.col("_corrupt").isNotNull(),
            F.lit("malformed line: not a CSV record with the header's columns"),
        ).alias("malformed"),
        # the CSV reader decodes invalid bytes to U+FFFD; the text pass found the files
        (F.col("_metadata.file_path").isin(not_utf8) & joined.contains("\ufffd")).alias("bad_utf8"),
    )


def _read_parquet(spark, paths: list[str]):
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    fields = event_fields()
    frame = spark.read.parquet(*paths)
    types = {f.name: f.dataType for f in frame.schema.fields}
    columns = {}
    for field in fields:
        if field.name not in types:
            continue
        col, dtype = F.col(field.name), types[field.name]
        if isinstance(dtype, T.StringType):
            text = F.nullif(col, F.lit(""))
            kind = "text"
        elif isinstance(dtype, T.NumericType):
            text, kind = col, "number"
        elif isinstance(dtype, T.TimestampType | T.TimestampNTZType):
            text, kind = col, "timestamp"
        else:
            text, kind = F.lit(None), f"parquet {dtype.simpleString()}"
        columns[field.name] = (text, F.when(text.isNull(), F.lit("null")).otherwise(F.lit(kind)))
    bad = F.lit(False)
    for name, dtype in types.items():
        if isinstance(dtype, T.StringType):
            bad = bad | F.coalesce(~F.expr(f"is_valid_utf8(`{name}`)"), F.lit(False))
    return frame.select(
        *_typed(columns, fields),
        F.expr("make_valid_utf8(to_json(struct(*)))").alias("raw"),
        F.lit(None).cast("binary").alias("raw_bytes"),  # the row's bytes are Parquet's
        F.col("_metadata.file_path").alias("source_file"),
        F.lit(None).cast("string").alias("malformed"),
        bad.alias("bad_utf8"),
    )


# ---------------------------------------------------------------------------- validating


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


DUPLICATE = "duplicate event_id (the first copy was kept)"


def mark_duplicates(typed):
    """``typed`` with every later valid copy of an event quarantined as a duplicate.

    The first valid copy of a (stream, event_id) is kept — by source file, then raw text; a
    broken copy never pushes its valid twin out. Only the rows whose id hash (``xxhash64`` of
    stream and event_id) occurs more than once among the valid rows are ranked, by their exact
    ids (a hash collision only ranks a few more rows): the ids' hashes are found by a narrow
    aggregation on a long, persisted and counted first, so the planner knows their size and
    broadcasts them when small, and the wide rows are not shuffled for the rare duplicate.
    ``typed`` is read several times: persist it. Returns ``(rows, the rows now quarantined as
    duplicates, the persisted hashes)``."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    ids = ["stream", "event_id"]
    hashed = typed.withColumn("id_hash", F.xxhash64(*ids))
    twice = (
        hashed.where(F.col("reason").isNull())
        .groupBy("id_hash")
        .agg(F.count("*").alias("copies"))
        .where("copies > 1")
        .select("id_hash")
        .persist()
    )
    twice.count()
    first = Window.partitionBy(*ids).orderBy(F.col("reason").isNotNull(), "source_file", "raw")
    rank = F.when(F.col("reason").isNull(), F.row_number().over(first))
    ranked = (
        hashed.join(twice, "id_hash", "left_semi")
        .withColumn("reason", F.coalesce("reason", F.when(rank > 1, F.lit(DUPLICATE))))
        .drop("id_hash")
    )
    rows = hashed.join(twice, "id_hash", "left_anti").drop("id_hash").unionByName(ranked)
    return rows, ranked.where(F.col("reason") == DUPLICATE), twice


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


# ---------------------------------------------------------------------------- the job


class TooMuchBadInput(SystemExit):
    """The day has more bad input than the thresholds allow (the tables are written)."""


def ingest(spark, args: RunArgs, landing: str) -> dict:
    from pyspark.sql import functions as F

    tables = args.tables
    files = {f.uri: f for f in landing_files(landing, args)}
    report = {
        "stage": "ingest",
        "run_id": args.run_id,
        "interval_start": args.interval_start,
        "interval_end": args.interval_end,
        "landing": str(landing),
        "files": len(files),
    }
    if not files:
        raise SystemExit(
            f"no landing files for {args.interval_start}..{args.interval_end} under {landing} "
            f"(expected <landing>/<YYYY-MM-DD>/*.jsonl|csv|parquet[.gz])"
        )
    bad: dict[str, str] = {}  # uri → why the file cannot be read
    needs: dict[str, object] = {}
    for uri, file in files.items():
        reason, needs[uri] = probe(file)
        if reason:
            bad[uri] = reason
    while True:  # Spark finds damage deep inside a file: set the file aside and read again
        readable = [f for uri, f in files.items() if uri not in bad]
        try:
            rows, cached, counts = _read_and_count(spark, args, readable, needs)
            break
        except Exception as error:  # noqa: BLE001 - re-raised unless a landing file caused it
            found = unreadable_file(error, files)
            if found is None or found[0] in bad:
                raise
            bad[found[0]] = found[1]
            log("ingest", f"set aside {found[0]}: {found[1]}")
    now = F.lit(datetime.now(UTC))
    if rows is not None:
        events = rows.where(F.col("selected") & F.col("reason").isNull()).select(
            "event_id",
            "ts",
            "date",
            "stream",
            "key",
            "partition",
            "worker",
            "size_bytes",
            "cost_ms",
            "upstream_stream",
            "upstream_key",
            "source_file",
            now.alias("ingested_at"),
        )
        quarantined = rows.where(F.col("reason").isNotNull()).select(
            F.when(F.col("stream").rlike(spark_name_regex()), F.col("stream")).alias("stream"),
            "source_file",
            "raw",
            "raw_bytes",
            "reason",
        )
    else:
        events = quarantined = None
    files_out = spark.createDataFrame(
        [(None, uri, None, None, reason) for uri, reason in sorted(bad.items())],
        "stream string, source_file string, raw string, raw_bytes binary, reason string",
    )
    quarantine = files_out if quarantined is None else quarantined.unionByName(files_out)
    if events is None and table_exists(spark, tables, "bronze.stream_events"):
        events = read_delta(spark, tables, "bronze.stream_events").limit(0)
    writes = {
        "bronze.quarantine": (
            quarantine.select(
                F.lit(args.interval_start).alias("interval_start"),
                "*",
                F.lit(args.run_id).alias("run_id"),
                now.alias("ingested_at"),
            ),
            f"interval_start = '{args.interval_start}'",
            ("interval_start",),
        )
    }
    if events is not None:
        writes["bronze.stream_events"] = (events, args.interval_predicate(), ("stream", "date"))
    write_deltas(tables, writes)
    for frame in cached:
        frame.unpersist()
    by_reason: dict[str, int] = {}
    by_file: dict[str, int] = {}
    for r in (  # one pass over the interval's quarantine for both breakdowns
        read_delta(spark, tables, "bronze.quarantine")
        .where(F.col("interval_start") == F.lit(args.interval_start))
        .groupBy("source_file", F.regexp_replace("reason", ":.*", "").alias("reason"))
        .agg(F.count("*").alias("n"))
        .collect()
    ):
        by_reason[r["reason"]] = by_reason.get(r["reason"], 0) + r["n"]
        by_file[r["source_file"]] = by_file.get(r["source_file"], 0) + r["n"]
    report.update(
        rows_read=sum(counts.values()) + len(bad),
        rows_written=counts.get("written", 0),
        rows_quarantined=counts.get("quarantined", 0) + len(bad),
        rows_not_selected=counts.get("not_selected", 0),
        files_quarantined=[{"file": uri, "reason": r} for uri, r in sorted(bad.items())],
        quarantined_by_reason=by_reason,
        quarantined_by_file=by_file,
    )
    return report


def _read_and_count(spark, args: RunArgs, files: list[LandingFile], needs: dict[str, object]):
    """``(rows with reason/selected, the persisted frames they derive from, counts by
    outcome)``: the files are read and parsed once (unpersist the frames when done)."""
    from pyspark.sql import functions as F

    raw = read_raw(spark, files, needs)
    if raw is None:
        return None, (), {}
    typed = classify(raw, args).persist()
    twice = None
    try:
        rows, duplicates, twice = mark_duplicates(typed)
        rows = rows.withColumn("date", F.to_date("ts"))
        in_run = F.col("stream").isin(list(args.streams)) if args.streams else F.lit(True)
        rows = rows.withColumn("selected", in_run | F.col("reason").isNotNull())
        # counted on the persisted rows and the few duplicates: no pass over the joined rows
        counts = {"written": 0, "quarantined": 0, "not_selected": 0}
        by_outcome = typed.groupBy(in_run.alias("in_run"), F.col("reason").isNull().alias("valid"))
        for r in by_outcome.agg(F.count("*").alias("n")).collect():
            outcome = (
                "quarantined" if not r["valid"] else "written" if r["in_run"] else "not_selected"
            )
            counts[outcome] += r["n"]
        for r in duplicates.groupBy(in_run.alias("in_run")).agg(F.count("*").alias("n")).collect():
            counts["written" if r["in_run"] else "not_selected"] -= r["n"]
            counts["quarantined"] += r["n"]
    except Exception:
        typed.unpersist()
        if twice is not None:
            twice.unpersist()
        raise
    return rows, (typed, twice), counts


def check_thresholds(report: dict, max_bad_files: int, max_share: float) -> None:
    """Fail the day, naming every offending file, when bad input passes the thresholds."""
    bad_files = report["files_quarantined"]
    if len(bad_files) > max_bad_files:
        listed = "\n  ".join(f"{f['file']}: {f['reason']}" for f in bad_files)
        raise TooMuchBadInput(
            f"ingest: {len(bad_files)} landing files cannot be read (max_bad_files = "
            f"{max_bad_files}); they are in bronze.quarantine:\n  {listed}"
        )
    read = report["rows_read"]
    share = report["rows_quarantined"] / read if read else 0.0
    if share > max_share:
        by_file = sorted(report["quarantined_by_file"].items(), key=lambda p: (-p[1], p[0]))
        listed = "\n  ".join(f"{file}: {n} rows" for file, n in by_file)
        raise TooMuchBadInput(
            f"ingest: {report['rows_quarantined']} of {read} rows quarantined ({share:.1%} > "
            f"max_quarantined_share = {max_share:.1%}); see bronze.quarantine, by file:\n"
            f"  {listed}"
        )


def main(argv: list[str] | None = None) -> dict:
    parser = run_parser(__doc__.splitlines()[0])
    parser.add_argument("--landing", help="landing folder or URI (default <home>/landing)")
    parser.add_argument(
        "--max-bad-files",
        type=int,
        default=5,
        help="fail the day when more landing files than this cannot be read (default 5)",
    )
    parser.add_argument(
        "--max-quarantined-share",
        type=float,
        default=0.1,
        help="fail the day when a larger share of the rows is quarantined (default 0.1)",
    )
    ns = parser.parse_args(argv)
    if ns.max_bad_files < 0 or not 0 <= ns.max_quarantined_share <= 1:
        parser.error("--max-bad-files must be >= 0 and --max-quarantined-share in [0, 1]")
    args = run_args(ns)
    landing = location_arg(ns.landing) if ns.landing else args.tables.landing
    spark = spark_session("ingest")
    report = ingest(spark, args, landing)
    args.tables.write_report(args.interval_start, "ingest", report)
    log("ingest", json.dumps(report, default=str))
    check_thresholds(report, ns.max_bad_files, ns.max_quarantined_share)
    return report


if __name__ == "__main__":
    main()
