"""ingest's accounting: every read row's outcome — written, quarantined (its reason, or a later
copy of an event: duplicate) or not selected (a valid row of a stream the run was not asked
for) — and the counts by outcome, from one read and parse of the files."""

from __future__ import annotations

from jobs.common import RunArgs, sql_conf
from jobs.event_rules import classify
from jobs.landing import LandingFile
from jobs.landing_read import read_raw

DUPLICATE = "duplicate event_id (the first copy was kept)"
CODE_LENGTH = 80  # at most this many characters of a reason make its code


def reason_code(reason):
    """The code of a quarantine ``reason`` (a column), the key the report counts it under.

    A reason is a fixed code, optionally followed by ``": "`` or ``" ("`` and a detail — a
    value from the data, a file's error, an interval (``invalid stream name: a\\nb``,
    ``duplicate event_id (the first copy was kept)``): the code is the text before the first
    of them. It is cut at a control character or line break and to ``CODE_LENGTH``
    characters, so nothing in a reason can split a key or make it unbounded."""
    from pyspark.sql import functions as F

    code = F.substring_index(F.substring_index(reason, ": ", 1), " (", 1)
    code = F.regexp_extract(code, r"^[^\p{Cc}\u0085\u2028\u2029]*", 0)
    return F.substring(code, 1, CODE_LENGTH)


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


def read_and_count(spark, args: RunArgs, files: list[LandingFile], needs: dict[str, object]):
    """``(rows with reason/selected, the persisted frames they derive from, counts by
    outcome)``: the files are read and parsed once (unpersist the frames when done)."""
    from pyspark.sql import functions as F

    raw = read_raw(spark, files, needs)
    if raw is None:
        return None, (), {}
    # The rules' projection is beyond what one generated method may hold (JVM's 64 KB): fused
    # into a whole stage it failed to compile every time (an ERROR and its stack trace in the
    # log) before Spark fell back to code per expression. The cache's plan, made at persist(),
    # now goes to that code directly.
    with sql_conf(spark, {"spark.sql.codegen.wholeStage": "false"}):
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
