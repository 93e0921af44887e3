package dev.routeplan.client;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.util.Map;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.common.config.ConfigException;

/**
 * Asks a consumer group to rebalance when a new version of its routeplan {@code
 * partition_assignment} table is published, so that {@link RouteplanAssignor} assigns by it.
 * Configured by the consumer's own properties ({@code routeplan.table.location}, {@code
 * routeplan.stream}, {@code routeplan.http.token}, {@code routeplan.reload.interval.ms}: default
 * 30000, 0: never), and driven from the consumer's poll loop:
 *
 * <pre>{@code
 * RouteplanRebalancer rebalancer = new RouteplanRebalancer(props); // before subscribe
 * try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
 *   consumer.subscribe(List.of("orders"));
 *   while (running) {
 *     for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
 *       ...
 *     }
 *     rebalancer.maybeRebalance(consumer); // the thread that polls: a consumer has one
 *   }
 * }
 * }</pre>
 *
 * <p>{@code maybeRebalance} reads the stream's LATEST at most once per interval (in the calling
 * thread: a file read or one HTTP request, bounded by 10 s) and, when it names a valid {@code
 * partition_assignment} table other than the last one seen (another version or checksum),
 * calls {@code consumer.enforceRebalance("routeplan <stream> v<N>")}. A KafkaConsumer is not
 * thread-safe: {@code enforceRebalance}, like {@code poll}, must be called from the thread that
 * polls (from another thread it throws ConcurrentModificationException); only {@code wakeup}
 * may be called from elsewhere. Hence no thread of its own. The rebalance happens in a later
 * {@code poll}.
 *
 * <p>The first table seen is the one LATEST names when the rebalancer is created: create it
 * before the consumer subscribes, so that the group's first assignment reads that version or a
 * newer one (a newer one costs one rebalance more, never one less). A LATEST that is missing or
 * refused, or names a key_routing table, asks for nothing (logged once): the assignor would fall
 * back, and the next valid version asks again. Every member may run one; requests that arrive
 * while the group is rebalancing join that rebalance.
 */
public final class RouteplanRebalancer {
  private static final System.Logger LOG = System.getLogger(RouteplanRebalancer.class.getName());

  private final Latest latest;
  private final long intervalNanos;
  private long next;
  private Table seen;
  private String problem;

  /** Follows the table the properties name and reads it once now; a ConfigException when they
   * name none. */
  public RouteplanRebalancer(Map<?, ?> configs) {
    String location = Configs.location(configs, ConfigException::new);
    try {
      latest = new Latest(location, Configs.string(configs, RoutingPartitioner.STREAM),
          Configs.options(configs));
    } catch (IllegalArgumentException e) {
      throw new ConfigException("routeplan: " + e.getMessage());
    }
    intervalNanos = Math.max(0, Configs.reloadMs(configs)) * 1_000_000L;
    next = System.nanoTime() + intervalNanos;
    changed(); // the baseline: what the group's first assignment reads (or newer)
  }

  /**
   * Once per interval: reads LATEST and, when it names a new partition_assignment table, calls
   * {@code consumer.enforceRebalance}; true when it did. Call it from the thread that polls
   * {@code consumer}.
   */
  public boolean maybeRebalance(Consumer<?, ?> consumer) {
    long now = System.nanoTime();
    if (intervalNanos == 0 || now - next < 0) {
      return false;
    }
    next = now + intervalNanos;
    String reason = changed();
    if (reason == null) {
      return false;
    }
    LOG.log(Level.INFO, "routeplan: a new table is LATEST, the group rebalances: {0}", reason);
    consumer.enforceRebalance(reason);
    return true;
  }

  /** The last partition_assignment table seen, or null. */
  public Table table() {
    return seen;
  }

  /**
   * Reads LATEST now: the reason to rebalance when it names a partition_assignment table other
   * than the last one seen (which it becomes), null otherwise.
   */
  String changed() {
    Table table;
    try {
      table = latest.read();
    } catch (IOException | RuntimeException e) {
      report("cannot read " + latest.where() + ": " + e.getMessage());
      return null;
    }
    if (!Table.PARTITION_ASSIGNMENT.equals(table.kind)) {
      report(table + " is not a partition_assignment table");
      return null;
    }
    problem = null;
    Table before = seen;
    if (before != null && before.version == table.version
        && before.checksum.equals(table.checksum)) {
      return null;
    }
    seen = table;
    return "routeplan " + table.stream + " v" + table.version + (before == null ? ""
        : " (was v" + before.version + ")");
  }

  private void report(String what) {
    if (!what.equals(problem)) {
      LOG.log(Level.WARNING, "routeplan: {0}; no rebalance asked for", what);
      problem = what;
    }
  }
}
