package dev.routeplan.client;

import java.time.Duration;
import java.util.Map;
import java.util.function.Function;

/**
 * What the Kafka plug-ins ({@link RoutingPartitioner}, {@link RouteplanAssignor}, {@link
 * RouteplanRebalancer}) read from a client's properties: the {@code routeplan.*} keys they share.
 */
final class Configs {
  /** The default of {@code routeplan.reload.interval.ms}. */
  static final long DEFAULT_RELOAD_MS = 30000;

  private Configs() {}

  /** The value of {@code key} as text, or null when it is absent. */
  static String string(Map<?, ?> configs, String key) {
    Object value = configs.get(key);
    return value == null ? null : String.valueOf(value);
  }

  /**
   * {@code routeplan.table.location}; when it is absent, the exception {@code missing} makes of
   * the message that says what it must be.
   */
  static String location(Map<?, ?> configs, Function<String, RuntimeException> missing) {
    String location = string(configs, RoutingPartitioner.LOCATION);
    if (location == null) {
      throw missing.apply(RoutingPartitioner.LOCATION + " is required (a table file, a routing "
          + "store directory or the routing-table HTTP API's URL)");
    }
    return location;
  }

  /** {@code routeplan.reload.interval.ms} (default 30000; 0 or less: never reload). */
  static long reloadMs(Map<?, ?> configs) {
    String value = string(configs, RoutingPartitioner.RELOAD_MS);
    return value == null ? DEFAULT_RELOAD_MS : Long.parseLong(value.strip());
  }

  /**
   * The source's options: the bearer token ({@code routeplan.http.token}) when given and not
   * blank (an application may pass an unset environment variable as "").
   */
  static Router.Options options(Map<?, ?> configs) {
    Router.Options opts = Router.options();
    String token = string(configs, RoutingPartitioner.TOKEN);
    if (token != null && !token.isBlank()) {
      opts.token(token);
    }
    return opts;
  }

  /** {@link #options} and, unless it is 0, the reload interval. */
  static Router.Options reloading(Map<?, ?> configs) {
    Router.Options opts = options(configs);
    long ms = reloadMs(configs);
    if (ms > 0) {
      opts.reloadInterval(Duration.ofMillis(ms));
    }
    return opts;
  }
}
