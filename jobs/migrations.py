"""Schema changes of the Delta tables: a table's schema grows only where a migration says so.

Writes never merge schemas (no ``mergeSchema``): a column a frame has and its table lacks is
added only when ``MIGRATIONS`` names it for that table — with ``ALTER TABLE … ADD COLUMNS``,
before the write, so a home written by an older release upgrades on its next write (or on the
weekly ``jobs/maintain.py``). Any other new column stops the write with ``SchemaError`` naming
the table and the column: a stray column never silently widens a table.

A migration is the column's name and its Spark SQL type, appended to its table's tuple in the
order the columns were added; they are never edited or removed once released. ``upgrade`` is
idempotent: it adds only the columns the table lacks.
"""

from __future__ import annotations

from collections.abc import Iterable

# Columns added after the first release (commit 8969d52, "Spark jobs: … on Delta Lake"), per
# table, oldest first — measured by running that release's jobs and comparing the schemas.
MIGRATIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "bronze.stream_events": (
        ("upstream_stream", "string"),  # e20a12b: flows between related streams
        ("upstream_key", "string"),
        ("routing_version", "int"),  # the routing table version a producer routed an event by
    ),
    "bronze.quarantine": (("raw_bytes", "binary"),),  # 678b058: lines that are not UTF-8
    "gold.plans": (
        ("choice", "string"),  # 706eea9: why auto chose a candidate
        ("backtest", "string"),  # the day routed through the selected plan and LATEST
        ("backtest_regression", "double"),
        ("gate", "string"),  # the nightly gate's decision and the prediction with its band
    ),
    "gold.routing_tables": (
        ("reason", "string"),  # 6c4a1cb: rollback
        ("restored_version", "int"),
    ),
    # the share of the day's messages a version routed (event_version attribution)
    "gold.plan_outcomes": (
        ("attributed_share", "double"),
        ("realized_peak_excess", "double"),  # the day's peak excess, beside the headline
        ("previous_peak_excess", "double"),
        ("predicted_peak_excess", "double"),  # the version's predicted peak excess and band
        ("predicted_low", "double"),
        ("predicted_high", "double"),
        ("band", "string"),  # the realized peak excess inside, above or below the band
        ("predicted_cross_rack_fraction", "double"),  # partitions with racks (KIP-881)
        ("realized_cross_rack_fraction", "double"),
    ),
}


class SchemaError(RuntimeError):
    """A write whose frame has a column its table lacks and no migration names."""


def table_columns(spark, location: str) -> list[str]:
    """The columns of the Delta table at ``location``."""
    return spark.read.format("delta").load(location).columns


def upgrade(spark, name: str, location: str, columns: Iterable[str] = ()) -> list[str]:
    """Add to the Delta table ``name`` at ``location`` the columns its migrations name and it
    lacks, then check that it has every one of ``columns`` (the frame about to be written);
    the columns added. ``SchemaError`` naming the table and the column when one of ``columns``
    is neither in the table nor in a migration."""
    present = set(table_columns(spark, location))
    missing = [(c, kind) for c, kind in MIGRATIONS.get(name, ()) if c not in present]
    if missing:
        added = ", ".join(f"`{c}` {kind}" for c, kind in missing)
        spark.sql(f"ALTER TABLE delta.`{location}` ADD COLUMNS ({added})")
        present |= {c for c, _ in missing}
    stray = [c for c in columns if c not in present]
    if stray:
        raise SchemaError(
            f"{name}: column {stray[0]!r} is not in the table at {location} and no migration "
            "adds it (jobs/migrations.py MIGRATIONS)"
        )
    return [c for c, _ in missing]
