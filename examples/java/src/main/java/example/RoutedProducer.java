package example;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Sends each line of stdin to a Kafka topic, keyed by the line (its value: the line's number
 * from 0), on the partition of the key's worker in the stream's routeplan table, each record
 * stamped with the header routing_version: the version of the table it was routed by.
 *
 * <pre>
 * KAFKA_BOOTSTRAP_SERVERS=kafka:9092 ROUTEPLAN_API_TOKEN=... \
 *     java -cp 'target/routed-producer.jar:target/lib/*' example.RoutedProducer &lt; keys.txt
 * </pre>
 *
 * <p>Environment: KAFKA_BOOTSTRAP_SERVERS (default kafka:9092), KAFKA_TOPIC (default: the
 * stream), ROUTING_LOCATION (the HTTP API, a routing store directory or a table file; default
 * http://localhost:8080/routeplan), ROUTING_STREAM (default clicks), ROUTEPLAN_API_TOKEN (the
 * API's bearer token; the API is closed by default).
 */
public final class RoutedProducer {
  private RoutedProducer() {}

  static String env(String name, String fallback) {
    String value = System.getenv(name);
    return value == null || value.isEmpty() ? fallback : value;
  }

  public static void main(String[] args) throws Exception {
    String stream = env("ROUTING_STREAM", "clicks");
    String topic = env("KAFKA_TOPIC", stream);
    Properties props = new Properties();
    props.put("bootstrap.servers", env("KAFKA_BOOTSTRAP_SERVERS", "kafka:9092"));
    props.put("partitioner.class", "dev.routeplan.client.RoutingPartitioner");
    props.put("interceptor.classes", "dev.routeplan.client.RoutingVersionInterceptor"); // routing_version
    props.put("routeplan.table.location", env("ROUTING_LOCATION", "http://localhost:8080/routeplan"));
    props.put("routeplan.stream", stream); // reloaded every 30 s (routeplan.reload.interval.ms)
    props.put("routeplan.http.token", env("ROUTEPLAN_API_TOKEN", "")); // the API is closed by default
    AtomicReference<Exception> failed = new AtomicReference<>();
    Callback check = (metadata, e) -> {
      if (e != null) {
        failed.compareAndSet(null, e); // the first failure, thrown after the flush
      }
    };
    BufferedReader lines = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    int sent = 0;
    try (KafkaProducer<String, String> producer =
        new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
      for (String key = lines.readLine(); key != null; key = lines.readLine()) {
        // to the partition of the key's worker, with the header routing_version
        producer.send(new ProducerRecord<>(topic, key, Integer.toString(sent++)), check);
      }
      producer.flush();
    }
    if (failed.get() != null) {
      throw failed.get();
    }
    System.err.println("sent " + sent + " records to " + topic);
  }
}
