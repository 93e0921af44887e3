"""ingest's readers: the landing files of each format (JSON Lines, CSV with a header row, Parquet)
as one raw frame — per stream-event field its text and its type, the raw row, the file, and why
a row is not a record or not UTF-8. ``jobs.event_rules.classify`` judges the rows.

Each file is read once by its exact path (``jobs.landing.spark_batches``). Lines end at LF only,
a CR right before it is part of the line end (CRLF): a CR anywhere else is the record's own. A
JSON Lines record is at most ``MAX_RECORD_BYTES`` (16 MiB, as UTF-8): a longer line is
quarantined as "record larger than 16777216 bytes" (unparsed: Spark's JSON parser refuses
strings over 20,000,000 characters).

A number's text is exact, so ``jobs.event_rules`` can tell an integer on it: a JSON number's as
written in the line, a Parquet float's integral value as digits (``3.0`` → ``3``)."""

from __future__ import annotations

import json

from jobs.event_rules import SHOWN, Field, event_fields
from jobs.landing import LandingFile, spark_batches, spark_name_differs

# what ``schema_of_variant`` calls a JSON number (its name up to the first "(")
NUMBER_KINDS = ("BIGINT", "INT", "SMALLINT", "TINYINT", "DOUBLE", "FLOAT", "DECIMAL")
MAX_RECORD_BYTES = 16 * 1024 * 1024  # the longest JSON Lines record read
TOO_LARGE = f"record larger than {MAX_RECORD_BYTES} bytes"


def read_raw(spark, files: list[LandingFile], needs: dict[str, object]):
    """One DataFrame, whatever the format: per field ``<f>`` (its text) and ``<f>__t`` (its
    type: string | number | text | timestamp | null | object | array | boolean | …), plus
    ``raw``, ``raw_bytes``, ``source_file`` (the file's ``uri``), ``malformed`` (why the row is
    not a record) and ``utf8_error`` (null, or — the row is not UTF-8 — what ``raw_bytes``
    holds). ``needs`` holds what ``probe`` found (CSV headers, Parquet schemas)."""
    source = _source_file(files)
    by_format: dict[str, list[LandingFile]] = {}
    for file in files:
        by_format.setdefault(file.fmt, []).append(file)
    parts = []
    for batch in spark_batches(by_format.get("jsonl", [])):
        parts.append(_read_jsonl(spark, batch, source))
    by_header: dict[tuple[str, ...], list[LandingFile]] = {}
    for file in by_format.get("csv", []):
        if needs[file.uri]:  # an empty file has no header and no rows
            by_header.setdefault(needs[file.uri], []).append(file)
    for header, group in by_header.items():
        for batch in spark_batches(group):
            parts.append(_read_csv(spark, header, batch, source))
    by_schema: dict[object, list[LandingFile]] = {}
    for file in by_format.get("parquet", []):
        by_schema.setdefault(needs[file.uri], []).append(file)
    for group in by_schema.values():
        for batch in spark_batches(group):
            parts.append(_read_parquet(spark, batch, source))
    if not parts:
        return None
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result


def _source_file(files: list[LandingFile]):
    """The row's file as ingest names it (``LandingFile.uri``): Spark's ``_metadata.file_path``,
    percent-decoded when a name needs it (``+`` is kept: ``url_decode`` would read it as a
    space)."""
    from pyspark.sql import functions as F

    path = F.col("_metadata.file_path")
    if not spark_name_differs(files):
        return path
    return F.url_decode(F.replace(path, F.lit("+"), F.lit("%2B")))


def _without_line_end(column):
    """``column`` without one trailing CR (the CR of a CRLF line end)."""
    from pyspark.sql import functions as F

    return F.when(column.endswith("\r"), column.substr(F.lit(1), F.length(column) - 1)).otherwise(
        column
    )


def _typed(columns: dict[str, tuple], fields: tuple[Field, ...]):
    """Select list ``<f>, <f>__t`` for every field (absent fields: null, type "null")."""
    from pyspark.sql import functions as F

    out = []
    for field in fields:
        text, kind = columns.get(field.name, (F.lit(None), F.lit("null")))
        out += [text.cast("string").alias(field.name), kind.alias(f"{field.name}__t")]
    return out


def _read_jsonl(spark, batch: tuple[dict[str, str], list[str]], source):
    from pyspark.sql import functions as F

    fields = event_fields()
    options, paths = batch
    text = (
        spark.read.options(**options)
        .option("lineSep", "\n")  # Spark's default also ends a line at a lone CR
        .text(paths)
        .select(_without_line_end(F.col("value")).alias("value"), source.alias("source_file"))
    )
    # blank lines (JSON whitespace only) are not rows
    text = text.where(F.expr("trim(BOTH ' \t\r\n' FROM value)") != "")
    too_large = F.octet_length("value") > MAX_RECORD_BYTES
    text = text.withColumn("v", F.when(~too_large, F.expr("try_parse_json(value)")))
    # a JSON text that parses and starts with { is an object (cheaper than its variant schema)
    starts_an_object = F.expr("trim(LEADING ' \t\r\n' FROM value)").startswith("{")
    malformed = (
        F.when(too_large, F.lit(TOO_LARGE))
        .when(F.col("v").isNull(), F.lit("malformed line: not valid JSON"))
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
        value = F.col(field.name)
        if field.kind in ("integer", "number", "ts"):  # a double may round: its text as written
            exact = _json_number_text(F.col("value"), field.name)
            value = F.when(kind == "DOUBLE", exact).otherwise(value)
        columns[field.name] = (
            value,
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
        F.when(~valid, F.lit("raw_bytes holds the line's bytes")).alias("utf8_error"),
    )


def _json_number_text(line, name: str):
    """The text of the number the JSON object ``line`` holds under its top-level key ``name``,
    exactly as written (``parse_json`` keeps a number in exponent form or of more than 38
    digits only as a double: ``3.0000000000000000001e0`` would read as ``3.0``).

    The key is found in every spelling (each character as itself or its ``\\u`` escape), only
    where a key can stand (after ``{`` or ``,``: inside a string every ``"`` is escaped), and at
    depth 1: strings are blanked, then the brackets before each occurrence are counted (a line
    that parses has no duplicate key, so one occurrence is at depth 1). Null when not found."""
    from pyspark.sql import functions as F

    spelled = "".join(f"(?:{c}|\\\\u00(?i:{ord(c):02x}))" for c in name)
    marked = F.regexp_replace(line, '([{,]\\s*)"' + spelled + '"(\\s*:)', "$1\u0001$2")
    bare = F.regexp_replace(marked, r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', '""')
    parts = F.split(bare, "\u0001")  # the key's occurrences stand between the parts

    def depth(part):  # brackets opened minus brackets closed
        return F.length(F.regexp_replace(part, r"[^\[{]", "")) - F.length(
            F.regexp_replace(part, r"[^\]}]", "")
        )

    def at_depth_one(found, i):  # the number after occurrence i - 1, if it is the top-level one
        before = F.aggregate(F.slice(parts, F.lit(1), i - 1), F.lit(0), lambda d, p: d + depth(p))
        number = F.regexp_extract(F.element_at(parts, i), r"^\s*:\s*(-?[0-9][-+.0-9eE]*)", 1)
        return F.when(before == 1, number).otherwise(found)

    occurrences = F.sequence(F.lit(2), F.size(parts))
    found = F.aggregate(occurrences, F.lit(None).cast("string"), at_depth_one)
    return F.when(F.size(parts) > 1, F.nullif(found, F.lit("")))


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


def _read_csv(spark, header: tuple[str, ...], batch, source):
    """CSV files with this ``header``, read as ISO-8859-1 — one character per byte, so
    ``_bytes`` gives back every field's and record's exact bytes: a record is UTF-8 or not by
    its own bytes (a valid U+FFFD is text like any other), and a record that is not keeps
    them in ``raw_bytes``.

    The schema has one column more than the header: the reader then takes every record of the
    header's width for malformed and hands over its exact text (``_corrupt``, without its line
    end, the CR of a CRLF too) while still splitting it. A record is malformed when its own
    count of fields — the commas outside quoted fields, plus one — is not the header's (a
    record one field too wide is the only one the reader takes as well-formed: ``_corrupt`` is
    null)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    fields = event_fields()
    width = len(header)
    schema = StructType(
        [StructField(f"c{i}", StringType()) for i in range(width + 1)]
        + [StructField("_corrupt", StringType())]
    )
    options, paths = batch
    frame = (
        spark.read.options(**options)
        .option("header", True)
        .option("multiLine", True)  # quoted fields may hold line breaks
        # records end at LF (a CR before it: see below); without lineSep Spark's parser detects
        # CRLF and stores a quoted field's CRLF as LF
        .option("lineSep", "\n")
        .option("escape", '"')  # RFC 4180: "" inside a quoted field is one "
        .option("encoding", "ISO-8859-1")  # each byte one character: see _bytes
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", "_corrupt")
        .schema(schema)
        .csv(paths)
    )
    # the record's text (a record too wide: its fields, joined), computed once; when it is
    # ASCII, each of its characters is its byte already: no field needs decoding again
    too_wide = F.concat_ws(",", *[F.coalesce(F.col(f"c{i}"), F.lit("")) for i in range(width + 1)])
    frame = frame.select("*", F.coalesce("_corrupt", too_wide).alias("_record"))
    frame = frame.select("*", (F.length("_record") == F.octet_length("_record")).alias("_ascii"))

    def text_of(column):  # the text of the bytes a field or record was read from
        return F.when(F.col("_ascii"), column).otherwise(_bytes(column).cast("string"))

    # the CR of a CRLF line end stays on the last field (unless it was quoted: the parser skips
    # it after the closing quote, so a quoted last field that ends in CR loses that CR)
    cells = [F.col(f"c{i}") for i in range(width)]
    cells[-1] = _without_line_end(cells[-1])
    by_name = dict(zip(header, cells, strict=True))
    columns = {}
    for field in fields:
        if field.name in by_name:
            text = F.nullif(text_of(by_name[field.name]), F.lit(""))  # empty: absent
            columns[field.name] = (text, F.when(text.isNull(), "null").otherwise("text"))
    record = F.col("_corrupt")
    unquoted = F.when(record.contains('"'), F.regexp_replace(record, r'(^|,)"(?:[^"]|"")*+"', "$1"))
    unquoted = unquoted.otherwise(record)
    width_of_record = F.length(unquoted) - F.length(F.replace(unquoted, F.lit(","), F.lit(""))) + 1
    raw = text_of(F.col("_record"))
    valid = F.col("_ascii") | F.is_valid_utf8(raw)
    return frame.select(
        *_typed(columns, fields),
        F.when(valid, raw).otherwise(F.make_valid_utf8(raw)).alias("raw"),
        F.when(~valid, _bytes(F.col("_record"))).alias("raw_bytes"),
        source.alias("source_file"),
        F.when(
            record.isNull() | F.col(f"c{width}").isNotNull() | (width_of_record != width),
            F.lit("malformed line: not a CSV record with the header's columns"),
        ).alias("malformed"),
        F.when(~valid, F.lit("raw_bytes holds the record's bytes")).alias("utf8_error"),
    )


def _bytes(text):
    """The bytes a text read as ISO-8859-1 was read from."""
    from pyspark.sql import functions as F

    return F.encode(text, "ISO-8859-1")


def _read_parquet(spark, batch: tuple[dict[str, str], list[str]], source):
    """Parquet files of one schema: string columns are text, numeric and timestamp columns
    typed values. A float's text is exact for an integral value (its digits: ``3.0`` → ``3``,
    ``2**60`` → all 19 digits), else its shortest form (``3.5``, ``NaN``, ``1.0E19``). A row
    whose string column is not UTF-8 keeps that value's bytes in ``raw_bytes`` (the row has no
    bytes of its own in Parquet), and its reason names the column."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    fields = event_fields()
    options, paths = batch
    frame = spark.read.options(**options).parquet(*paths)
    types = {f.name: f.dataType for f in frame.schema.fields}
    columns = {}
    for field in fields:
        if field.name not in types:
            continue
        col, dtype = frame[field.name], types[field.name]
        if isinstance(dtype, T.StringType):
            text = F.nullif(col, F.lit(""))
            kind = "text"
        elif isinstance(dtype, T.FloatType | T.DoubleType):
            text, kind = _float_text(col), "number"
        elif isinstance(dtype, T.NumericType):
            text, kind = col, "number"
        elif isinstance(dtype, T.TimestampType | T.TimestampNTZType):
            text, kind = col, "timestamp"
        else:
            text, kind = F.lit(None), f"parquet {dtype.simpleString()}"
        columns[field.name] = (text, F.when(text.isNull(), F.lit("null")).otherwise(F.lit(kind)))
    not_utf8 = [  # (the column's value is not UTF-8, what the reason says of it)
        (
            F.coalesce(~F.is_valid_utf8(frame[name]), F.lit(False)),
            frame[name],
            f"column {json.dumps(name[:SHOWN])} is not UTF-8; raw_bytes holds that value's bytes",
        )
        for name, dtype in types.items()
        if isinstance(dtype, T.StringType)
    ]
    error = F.lit(None).cast("string")
    raw_bytes = F.lit(None).cast("binary")
    for bad, col, detail in reversed(not_utf8):  # the first such column
        error = F.when(bad, F.lit(detail)).otherwise(error)
        raw_bytes = F.when(bad, col.cast("binary")).otherwise(raw_bytes)
    return frame.select(
        *_typed(columns, fields),
        F.expr("make_valid_utf8(to_json(struct(*)))").alias("raw"),
        raw_bytes.alias("raw_bytes"),
        source.alias("source_file"),
        F.lit(None).cast("string").alias("malformed"),
        error.alias("utf8_error"),
    )


def _float_text(value):
    """A float's text (see ``_read_parquet``): an integral value below 2**63 through a long,
    exact; any other through its shortest form (whose value is integral iff the float's is)."""
    from pyspark.sql import functions as F

    whole = value.try_cast("long")  # null for NaN and ±Infinity; 2**63 → 2**63 - 1, hence:
    below = F.abs(value.cast("double")) < F.lit(2.0**63)
    integral = below & whole.isNotNull() & (whole.cast("double") == value.cast("double"))
    return F.when(integral, whole.cast("string")).otherwise(value.cast("string"))
