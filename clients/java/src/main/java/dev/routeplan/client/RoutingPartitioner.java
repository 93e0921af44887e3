package dev.routeplan.client;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.clients.producer.Partitioner;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.KafkaException;

/**
 * A Kafka {@link Partitioner} that sends each record to the partition of its worker in a
 * routeplan table (docs/routing-spec.md §4). Configured through the producer's properties:
 *
 * <pre>
 * partitioner.class=dev.routeplan.client.RoutingPartitioner
 * routeplan.table.location=https://routeplan.example   (or a store directory, or a table file)
 * routeplan.stream=clicks
 * routeplan.reload.interval.ms=30000                   (default: 30000; 0: never reload)
 * routeplan.http.token=...                             (optional: a bearer token)
 * routeplan.worker.partitions=a=0,b=1                  (optional: workers not named wN)
 * interceptor.classes=dev.routeplan.client.RoutingVersionInterceptor
 *                               (optional: stamps routing_version, the version each record is
 *                                routed by, on the record)
 * </pre>
 *
 * <p>A record is routed by its key's text: a String key (any key serializer), or a byte[] key
 * holding the UTF-8 bytes of the text (ByteArraySerializer). {@code send} throws a {@link
 * RoutingException} for a record without a key, a key of another type or bytes that are not
 * UTF-8, or when the topic has fewer partitions than the table needs; a bad table published
 * later is logged and the last good one keeps serving.
 */
public class RoutingPartitioner implements Partitioner {
  public static final String LOCATION = "routeplan.table.location";
  public static final String STREAM = "routeplan.stream";
  public static final String RELOAD_MS = "routeplan.reload.interval.ms";
  public static final String TOKEN = "routeplan.http.token";
  public static final String WORKER_PARTITIONS = "routeplan.worker.partitions";

  /** Why a record cannot be routed (thrown from {@code KafkaProducer.send}). */
  public static class RoutingException extends KafkaException {
    private static final long serialVersionUID = 1L;

    public RoutingException(String message) {
      super(message);
    }
  }

  /** The instance a producer configured last (ProduceKeys reloads its table by hand). */
  static volatile RoutingPartitioner lastConfigured;

  private static final System.Logger LOG = System.getLogger(RoutingPartitioner.class.getName());

  private Router router;
  private volatile boolean unstampedLogged;

  @Override
  public void configure(Map<String, ?> configs) {
    String location = Configs.location(configs, RoutingException::new);
    String stream = Configs.string(configs, STREAM);
    Router.Options opts = Configs.reloading(configs).kafka(true);
    if (configs.get(WORKER_PARTITIONS) != null) {
      Map<String, Integer> map = new HashMap<>();
      for (String pair : String.valueOf(configs.get(WORKER_PARTITIONS)).split(",")) {
        String[] kv = pair.trim().split("=", 2);
        if (kv.length != 2) {
          throw new RoutingException(WORKER_PARTITIONS + ": expected worker=partition, got "
              + pair);
        }
        map.put(kv[0].trim(), Integer.parseInt(kv[1].trim()));
      }
      opts.workerPartition(map);
    }
    try {
      router = Router.open(location, stream == null ? "" : stream, opts);
    } catch (IOException e) {
      throw new RoutingException("routeplan: cannot load the table from " + location + ": " + e);
    } catch (IllegalArgumentException | UncheckedIOException e) {
      throw new RoutingException("routeplan: " + e.getMessage());
    }
    lastConfigured = this;
  }

  /** The router this partitioner follows. */
  public Router router() {
    return router;
  }

  /**
   * The partition of the record's worker. The record is routed by its key's text: a String key
   * by the String, whatever bytes the key serializer writes for it; a byte[] key by those bytes,
   * the UTF-8 of its text (docs/routing-spec.md §3). Any other key, bytes that are not UTF-8, a
   * record without a key, or a topic with fewer partitions than the table needs is a {@link
   * RoutingException}, and the record is not counted in the router's local loads.
   */
  @Override
  public int partition(String topic, Object key, byte[] keyBytes, Object value, byte[] valueBytes,
      Cluster cluster) {
    if (key == null) {
      throw new RoutingException("routeplan: a record to topic '" + topic
          + "' has no key (a routed topic has no place for one; the empty key is a key)");
    }
    ProducerRecord<?, ?> sending = RoutingVersionInterceptor.take();
    Integer count = cluster.partitionCountForTopic(topic);
    Router.Placed placed;
    try {
      placed = router.place(topic, count == null ? 0 : count, key);
    } catch (IllegalArgumentException e) {
      throw new RoutingException("routeplan: " + e.getMessage());
    }
    if (sending != null) {
      stamp(sending, topic, key, value, placed.version());
    }
    return placed.partition();
  }

  /**
   * Stamps {@code routing_version} on the record {@link RoutingVersionInterceptor} handed over,
   * when it is the one being routed (the same key and value objects, the same topic).
   */
  private void stamp(ProducerRecord<?, ?> sending, String topic, Object key, Object value,
      long version) {
    if (sending.key() != key || sending.value() != value || !sending.topic().equals(topic)) {
      if (!unstampedLogged) {
        unstampedLogged = true;
        LOG.log(System.Logger.Level.WARNING, "routeplan: a record to topic ''{0}'' is not the "
            + "one RoutingVersionInterceptor saw (an interceptor after it replaced it?): "
            + "routing_version not stamped; list RoutingVersionInterceptor last", topic);
      }
      return;
    }
    try {
      RoutingVersionInterceptor.stamp(sending.headers(), version);
    } catch (IllegalStateException e) {
      throw new RoutingException("routeplan: cannot stamp routing_version on a record to topic '"
          + topic + "': its headers are read-only (a ProducerRecord sent twice?)");
    }
  }

  @Override
  public void close() {
    if (router != null) {
      router.close();
    }
  }
}
