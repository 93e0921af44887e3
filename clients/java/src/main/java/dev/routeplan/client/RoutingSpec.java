package dev.routeplan.client;

/**
 * The version of the routing specification (docs/routing-spec.md) this client follows, and the
 * record header that names the version of the table a record was routed by.
 */
public final class RoutingSpec {
  /** "Routing specification version 1" (docs/routing-spec.md). */
  public static final int VERSION = 1;

  /** The header each routed record carries: the version of its table (decimal, UTF-8). */
  public static final String VERSION_HEADER = "routing_version";

  private RoutingSpec() {}
}
