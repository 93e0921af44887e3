package dev.routeplan.client;

import java.io.IOException;

/**
 * A stream's LATEST table, read when asked (no thread of its own): a table file, a routing store
 * directory or the HTTP API, as {@link Router#open} reads them. The source is asked again each
 * time; a version it has delivered before (same file name, file stamp or ETag) is not read or
 * verified again, and a refused one stays refused until LATEST moves on. Used by {@link
 * RouteplanAssignor} and {@link RouteplanRebalancer}, which act on whatever LATEST is now rather
 * than on a last good table.
 */
final class Latest {
  private final String location;
  private final String stream;
  private final Router.Options opts;
  private Source source;
  private String tag;
  private Table table;
  private InvalidTableException refused;

  /**
   * Follows {@code stream} at {@code location}; an IllegalArgumentException for a location or
   * stream name no source can have. A location that does not exist yet is looked for again at
   * each {@link #read}.
   */
  Latest(String location, String stream, Router.Options opts) {
    this.location = location;
    this.stream = stream == null ? "" : stream;
    this.opts = opts;
    try {
      source = Source.of(location, this.stream, opts);
    } catch (IOException e) {
      source = null; // not there yet: read() tries again
    }
  }

  /** Where the table is read from. */
  String where() {
    return location + (stream.isEmpty() ? "" : " (stream " + stream + ")");
  }

  /**
   * The table LATEST names now; an IOException when the source cannot be read (no file, no
   * LATEST, an HTTP error), an InvalidTableException when the document is refused.
   */
  synchronized Table read() throws IOException {
    if (source == null) {
      source = Source.of(location, stream, opts);
    }
    Source.Fetched fetched = source.fetch(tag);
    if (fetched != null) {
      tag = fetched.tag;
      try {
        table = fetched.table();
        refused = null;
      } catch (InvalidTableException e) {
        table = null;
        refused = e;
      }
    }
    if (refused != null) {
      throw refused;
    }
    return table;
  }
}
