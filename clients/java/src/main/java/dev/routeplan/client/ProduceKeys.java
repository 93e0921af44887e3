package dev.routeplan.client;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A producer following a routeplan table through {@link RoutingPartitioner}: sends the keys of
 * a file (one per line) to a topic, record i with the value "i". With {@code --phases P} it
 * sends them in P parts; after each it flushes, prints "sent PART", waits for a line on stdin
 * and reloads the table, printing "reloaded true|false vN" (the broker test publishes bad tables
 * between parts). Run with the jar and target/lib/* on the class path:
 *
 * <pre>
 * java -cp 'routeplan-client.jar:lib/*' dev.routeplan.client.ProduceKeys \
 *     --bootstrap 127.0.0.1:9092 --topic clicks --location var/routing --stream clicks \
 *     --keys keys.txt [--phases 4]
 * </pre>
 */
public final class ProduceKeys {
  private ProduceKeys() {}

  public static void main(String[] args) throws Exception {
    String bootstrap = null;
    String topic = null;
    String location = null;
    String stream = null;
    String keysFile = null;
    int phases = 1;
    for (int i = 0; i + 1 < args.length; i += 2) {
      switch (args[i]) {
        case "--bootstrap": bootstrap = args[i + 1]; break;
        case "--topic": topic = args[i + 1]; break;
        case "--location": location = args[i + 1]; break;
        case "--stream": stream = args[i + 1]; break;
        case "--keys": keysFile = args[i + 1]; break;
        case "--phases": phases = Integer.parseInt(args[i + 1]); break;
        default: throw new IllegalArgumentException("unknown option " + args[i]);
      }
    }
    String text = Files.readString(Path.of(keysFile), StandardCharsets.UTF_8);
    List<String> keys = List.of(text.substring(0, text.length() - 1).split("\n", -1));
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    props.put(ProducerConfig.PARTITIONER_CLASS_CONFIG, RoutingPartitioner.class.getName());
    props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    props.put(RoutingPartitioner.LOCATION, location);
    props.put(RoutingPartitioner.STREAM, stream);
    props.put(RoutingPartitioner.RELOAD_MS, "0"); // reloaded between parts, below
    BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in,
        StandardCharsets.UTF_8));
    AtomicReference<Exception> failed = new AtomicReference<>();
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
      RoutingPartitioner partitioner = null;
      for (int part = 0; part < phases; part++) {
        int from = keys.size() * part / phases;
        int to = keys.size() * (part + 1) / phases;
        for (int i = from; i < to; i++) {
          producer.send(new ProducerRecord<>(topic, keys.get(i), Integer.toString(i)),
              (metadata, e) -> {
                if (e != null) {
                  failed.compareAndSet(null, e);
                }
              });
        }
        producer.flush();
        if (failed.get() != null) {
          throw failed.get();
        }
        System.out.println("sent " + part);
        System.out.flush();
        if (part + 1 < phases) {
          stdin.readLine();
          if (partitioner == null) {
            partitioner = RoutingPartitioner.lastConfigured; // the producer's own
          }
          boolean changed = partitioner.router().reload();
          System.out.println("reloaded " + changed + " v" + partitioner.router().table().version);
          System.out.flush();
        }
      }
    }
  }
}
