package example;

import static example.RoutedProducer.env;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;

import dev.routeplan.client.RouteplanRebalancer;

/**
 * One consumer of a group that reads the partitions a routeplan partition_assignment table names
 * for it (RouteplanAssignor), and follows each new version (RouteplanRebalancer). It prints
 * "assigned [p, ...]" whenever its assignment changes and "record PARTITION ROUTING_VERSION"
 * for each record, and stops at a line on stdin or its end.
 *
 * <pre>
 * CONSUMER_NAME=c3 KAFKA_BOOTSTRAP_SERVERS=kafka:9092 ROUTEPLAN_API_TOKEN=... \
 *     java -cp 'target/routed-producer.jar:target/lib/*' example.AssignedConsumer
 * </pre>
 *
 * <p>Environment: CONSUMER_NAME (its name in the plan, required), KAFKA_BOOTSTRAP_SERVERS
 * (default kafka:9092), KAFKA_GROUP (default: the stream, "-readers"), KAFKA_TOPIC (default: the
 * stream), ROUTING_LOCATION (default http://localhost:8080/routeplan), ROUTING_STREAM
 * (default orders), ROUTEPLAN_API_TOKEN (the API's bearer token).
 */
public final class AssignedConsumer {
  private AssignedConsumer() {}

  public static void main(String[] args) throws Exception {
    String name = System.getenv("CONSUMER_NAME");
    if (name == null || name.isEmpty()) {
      throw new IllegalArgumentException("CONSUMER_NAME: this consumer's name in the plan");
    }
    String stream = env("ROUTING_STREAM", "orders");
    String topic = env("KAFKA_TOPIC", stream);
    AtomicBoolean running = new AtomicBoolean(true);
    Thread stdin = new Thread(() -> {
      try {
        for (int c = System.in.read(); c != -1 && c != '\n'; c = System.in.read()) {
          // until a line or the end
        }
      } catch (IOException e) {
        // stdin gone: stop as at its end
      }
      running.set(false);
    });
    stdin.setDaemon(true);
    stdin.start();
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    Properties props = new Properties();
    props.put("bootstrap.servers", env("KAFKA_BOOTSTRAP_SERVERS", "kafka:9092"));
    props.put("group.id", env("KAFKA_GROUP", stream + "-readers"));
    props.put("group.protocol", "classic");        // the default of kafka-clients 4.x; see KIP-848 below
    props.put("partition.assignment.strategy", "dev.routeplan.client.RouteplanAssignor");
    props.put("group.instance.id", name);          // per consumer: its name in the plan
    props.put("routeplan.table.location", env("ROUTING_LOCATION", "http://localhost:8080/routeplan"));
    props.put("routeplan.stream", stream);
    props.put("routeplan.topic", topic);           // optional: the topic the table assigns (default: the stream)
    props.put("routeplan.http.token", env("ROUTEPLAN_API_TOKEN", "")); // the API's bearer token
    props.put("routeplan.reload.interval.ms", env("ROUTING_RELOAD_MS", "30000")); // how often RouteplanRebalancer reads LATEST
    props.put("auto.offset.reset", "earliest");
    RouteplanRebalancer rebalancer = new RouteplanRebalancer(props); // before subscribe
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
      consumer.subscribe(List.of(topic));
      String assigned = null;
      while (running.get()) {
        for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
          Header version = record.headers().lastHeader("routing_version");
          out.println("record " + record.partition() + " "
              + (version == null ? "-" : new String(version.value(), StandardCharsets.UTF_8)));
        }
        rebalancer.maybeRebalance(consumer);        // in the polling thread
        String now = "assigned " + partitions(consumer.assignment());
        if (!now.equals(assigned)) {
          out.println(now);
          assigned = now;
        }
      }
    }
  }

  static TreeSet<Integer> partitions(Iterable<TopicPartition> assignment) {
    TreeSet<Integer> partitions = new TreeSet<>();
    assignment.forEach(tp -> partitions.add(tp.partition()));
    return partitions;
  }
}
