"""ingest's readers: the landing files of each format (JSON Lines, CSV with a header row, Parquet)
as one raw frame — per stream-event field its text and its type, the raw row, the file, and why
a row is not a record or not UTF-8. ``jobs.event_rules.classify`` judges the rows.

Each file is read once by its exact path (``jobs.landing.spark_batches``). Lines end at LF only,
a CR right before it is part of the line end (CRLF): a CR anywhere else is the record's own. A
JSON Lines record is at most ``MAX_RECORD_BYTES`` (16 MiB, as UTF-8): a longer line is
quarantined as "record larger than 16777216 bytes" (unparsed: Spark's JSON parser refuses
strings over 20,000,000 characters)."""

from __future__ import annotations

from jobs.event_rules import Field, event_fields
from jobs.landing import LandingFile, spark_batches, spark_name_differs

# what ``schema_of_variant`` calls a JSON number (its name up to the first "(")
NUMBER_KINDS = ("BIGINT", "INT", "SMALLINT", "TINYINT", "DOUBLE", "FLOAT", "DECIMAL")
MAX_RECORD_BYTES = 16 * 1024 * 1024  # the longest JSON Lines record read
TOO_LARGE = f"record larger than {MAX_RECORD_BYTES} bytes"


def read_raw(spark, files: list[LandingFile], needs: dict[str, object]):
    """One DataFrame, whatever the format: per field ``<f>`` (its text) and ``<f>__t`` (its
    type: string | number | text | timestamp | null | object | array | boolean | …), plus
    ``raw``, ``raw_bytes``, ``source_file`` (the file's ``uri``), ``malformed`` (why the row is
    not a record) and ``bad_utf8``. ``needs`` holds what ``probe`` found (CSV headers, Parquet
    schemas)."""
    from pyspark.sql import functions as F

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
    not_utf8 = []
    for options, paths in spark_batches([f for group in by_header.values() for f in group]):
        not_utf8 += [
            r.f
            for r in spark.read.options(**options)
            .text(paths)
            .where(~F.expr("is_valid_utf8(value)"))
            .select(F.col("_metadata.file_path").alias("f"))
            .distinct()
            .collect()
        ]
    for header, group in by_header.items():
        for batch in spark_batches(group):
            parts.append(_read_csv(spark, header, batch, not_utf8, source))
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


def _read_csv(spark, header: tuple[str, ...], batch, not_utf8: list[str], source):
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    fields = event_fields()
    schema = StructType(
        [StructField(f"c{i}", StringType()) for i in range(len(header))]
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
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", "_corrupt")
        .schema(schema)
        .csv(paths)
    )
    # the CR of a CRLF line end stays on the last field (unless it was quoted: the parser skips
    # it after the closing quote, so a quoted last field that ends in CR loses that CR)
    cells = [F.col(f"c{i}") for i in range(len(header))]
    cells[-1] = _without_line_end(cells[-1])
    by_name = dict(zip(header, cells, strict=True))
    columns = {}
    for field in fields:
        if field.name in by_name:
            text = F.nullif(by_name[field.name], F.lit(""))  # an empty field is absent
            columns[field.name] = (text, F.when(text.isNull(), "null").otherwise("text"))
    values = [F.coalesce(cell, F.lit("")) for cell in cells]
    joined = F.concat_ws(",", *values)
    return frame.select(
        *_typed(columns, fields),
        F.coalesce("_corrupt", joined).alias("raw"),
        F.lit(None).cast("binary").alias("raw_bytes"),
        source.alias("source_file"),
        F.when(
            F.col("_corrupt").isNotNull(),
            F.lit("malformed line: not a CSV record with the header's columns"),
        ).alias("malformed"),
        # the CSV reader decodes invalid bytes to U+FFFD; the text pass found the files
        (F.col("_metadata.file_path").isin(not_utf8) & joined.contains("\ufffd")).alias("bad_utf8"),
    )


def _read_parquet(spark, batch: tuple[dict[str, str], list[str]], source):
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
        source.alias("source_file"),
        F.lit(None).cast("string").alias("malformed"),
        bad.alias("bad_utf8"),
    )
