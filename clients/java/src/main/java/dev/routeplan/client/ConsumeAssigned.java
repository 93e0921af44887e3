package dev.routeplan.client;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A consumer of a group assigned by {@link RouteplanAssignor}, with a {@link RouteplanRebalancer}
 * in its poll loop: it prints its assignment as one JSON line each time it changes (after every
 * rebalance it takes part in: {@code {"instance": "c0", "generation": 3, "partitions": [0, 3]}})
 * and stops at a line on stdin or its end. The broker test runs several to check the group's
 * assignment. Run with the jar and target/lib/* on the class path:
 *
 * <pre>
 * java -cp 'routeplan-client.jar:lib/*' dev.routeplan.client.ConsumeAssigned \
 *     --bootstrap 127.0.0.1:9092 --topic orders --group g --instance c0 \
 *     --location var/routing --stream orders [--reload-ms 1000]
 * </pre>
 */
public final class ConsumeAssigned {
  private ConsumeAssigned() {}

  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
    props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
        RouteplanAssignor.class.getName());
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
        ByteArrayDeserializer.class.getName());
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "300"); // sees a rebalance soon
    props.put(RoutingPartitioner.RELOAD_MS, "0");
    String topic = null;
    String instance = null;
    for (int i = 0; i + 1 < args.length; i += 2) {
      String value = args[i + 1];
      switch (args[i]) {
        case "--bootstrap": props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, value); break;
        case "--topic": topic = value; props.put(RouteplanAssignor.TOPIC, value); break;
        case "--group": props.put(ConsumerConfig.GROUP_ID_CONFIG, value); break;
        case "--instance": instance = value;
          props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, value); break;
        case "--location": props.put(RouteplanAssignor.LOCATION, value); break;
        case "--stream": props.put(RouteplanAssignor.STREAM, value); break;
        case "--reload-ms": props.put(RoutingPartitioner.RELOAD_MS, value); break;
        default: throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    AtomicBoolean stop = new AtomicBoolean();
    Thread stdin = new Thread(() -> waitForLine(System.in, stop), "stdin");
    stdin.setDaemon(true);
    stdin.start();
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    RouteplanRebalancer rebalancer = new RouteplanRebalancer(props);
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
      consumer.subscribe(List.of(topic));
      String printed = null;
      while (!stop.get()) {
        consumer.poll(Duration.ofMillis(100));
        rebalancer.maybeRebalance(consumer);
        String now = json(instance, consumer.groupMetadata().generationId(),
            consumer.assignment());
        if (consumer.groupMetadata().generationId() > 0 && !now.equals(printed)) {
          out.println(now);
          printed = now;
        }
      }
    }
  }

  private static void waitForLine(InputStream in, AtomicBoolean stop) {
    try {
      int c;
      do {
        c = in.read();
      } while (c != -1 && c != '\n');
    } catch (IOException e) {
      // stdin gone: stop as at its end
    }
    stop.set(true);
  }

  /** {"instance": ..., "generation": N, "partitions": [...]} (partition numbers ascending). */
  static String json(String instance, int generation, Iterable<TopicPartition> assigned) {
    TreeSet<Integer> partitions = new TreeSet<>();
    assigned.forEach(tp -> partitions.add(tp.partition()));
    StringBuilder s = new StringBuilder("{\"instance\": ");
    s.append(instance == null ? "null" : "\"" + instance.replace("\\", "\\\\")
        .replace("\"", "\\\"") + "\"");
    s.append(", \"generation\": ").append(generation).append(", \"partitions\": [");
    String sep = "";
    for (int p : partitions) {
      s.append(sep).append(p);
      sep = ", ";
    }
    return s.append("]}").toString();
  }
}
