package dev.routeplan.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** RoutingVersionInterceptor with RoutingPartitioner: routing_version names the routing table. */
class RoutingVersionTest {
  static final Cluster TOPIC = RouterTest.cluster("vectors", 8);

  /** KafkaProducer.send's order: the interceptors' onSend, then the partitioner. */
  static int send(RoutingVersionInterceptor interceptor, RoutingPartitioner partitioner,
      ProducerRecord<Object, Object> record) {
    ProducerRecord<Object, Object> sent = interceptor.onSend(record);
    Object key = sent.key();
    byte[] keyBytes = key instanceof String ? ((String) key).getBytes(StandardCharsets.UTF_8)
        : (byte[]) key;
    return partitioner.partition(sent.topic(), key, keyBytes, sent.value(), null, TOPIC);
  }

  static String header(ProducerRecord<?, ?> record) {
    Header h = record.headers().lastHeader(RoutingSpec.VERSION_HEADER);
    return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
  }

  static RoutingVersionInterceptor interceptor(Object partitionerClass) {
    RoutingVersionInterceptor interceptor = new RoutingVersionInterceptor();
    interceptor.configure(Map.of("partitioner.class", partitionerClass));
    return interceptor;
  }

  @Test
  void eachRecordCarriesTheVersionOfTheTableThatPlacedIt(@TempDir Path root) throws IOException {
    Path dir = Files.createDirectory(root.resolve("vectors"));
    RouterTest.publish(dir, "v1.json", VectorsTest.bytes("tables/kr-seed42.json"));
    RoutingPartitioner partitioner = new RoutingPartitioner();
    partitioner.configure(Map.of(RoutingPartitioner.LOCATION, root.toString(),
        RoutingPartitioner.STREAM, "vectors", RoutingPartitioner.RELOAD_MS, "0"));
    RoutingVersionInterceptor interceptor = interceptor(RoutingPartitioner.class.getName());
    Router v1 = new Router(partitioner.router().table());
    for (String key : new String[] {"user-1", "hot-a", "", "ключ"}) {
      ProducerRecord<Object, Object> record = new ProducerRecord<>("vectors", key, "x");
      assertEquals(Integer.parseInt(v1.route(key).substring(1)),
          send(interceptor, partitioner, record));
      assertEquals("1", header(record));
      assertEquals(1, record.headers().toArray().length);
    }
    RouterTest.publish(dir, "v2.json", VectorsTest.bytes("tables/kr-legacy.json"));
    assertTrue(partitioner.router().reload());
    ProducerRecord<Object, Object> bytes = new ProducerRecord<>("vectors", "user-1"
        .getBytes(StandardCharsets.UTF_8), "x");
    bytes.headers().add(RoutingSpec.VERSION_HEADER, "99".getBytes(StandardCharsets.UTF_8));
    send(interceptor, partitioner, bytes);
    assertEquals("2", header(bytes)); // replaced, not added beside
    assertEquals(1, bytes.headers().toArray().length);
    partitioner.close();
  }

  @Test
  void onlyTheRecordTheInterceptorSawIsStampedAndARefusedOneIsNot() {
    RoutingPartitioner partitioner = RouterTest.partitioner("tables/kr-seed42.json");
    RoutingVersionInterceptor interceptor = interceptor(RoutingPartitioner.class);
    ProducerRecord<Object, Object> seen = new ProducerRecord<>("vectors", "user-1", "x");
    interceptor.onSend(seen);
    // another record reaches the partitioner (an interceptor after this one replaced it)
    partitioner.partition("vectors", "user-2", new byte[0], "y", null, TOPIC);
    assertNull(header(seen));
    // what a later record does not inherit: nothing is left handed over
    partitioner.partition("vectors", "user-1", new byte[0], "x", null, TOPIC);
    assertNull(header(seen));
    ProducerRecord<Object, Object> explicit = new ProducerRecord<>("vectors", 3, "user-1", "x");
    interceptor.onSend(explicit); // a partition of its own: not routed, not handed over
    assertNull(RoutingVersionInterceptor.take());
    ProducerRecord<Object, Object> noKey = new ProducerRecord<>("vectors", null, "x");
    assertThrows(RoutingPartitioner.RoutingException.class,
        () -> send(interceptor, partitioner, noKey));
    assertNull(header(noKey));
    ProducerRecord<Object, Object> narrow = new ProducerRecord<>("vectors", "user-1", "x");
    interceptor.onSend(narrow);
    assertThrows(RoutingPartitioner.RoutingException.class, () -> partitioner.partition(
        "vectors", "user-1", new byte[0], "x", null, RouterTest.cluster("vectors", 2)));
    assertNull(header(narrow));
    partitioner.close();
  }

  @Test
  void theInterceptorNeedsTheRoutingPartitioner() {
    for (Object other : new Object[] {"org.apache.kafka.clients.producer.RoundRobinPartitioner",
        "no.such.Partitioner", String.class}) {
      ConfigException e = assertThrows(ConfigException.class, () -> interceptor(other));
      assertTrue(e.getMessage().contains("partitioner.class is " + other), e.getMessage());
    }
    assertThrows(ConfigException.class, () -> new RoutingVersionInterceptor().configure(Map.of()));
  }

  @Test
  void theHeaderIsTheDecimalVersionInUtf8() {
    assertArrayEquals(new byte[] {'4', '2'}, RoutingVersionInterceptor.value(42));
    assertArrayEquals("9007199254740993".getBytes(StandardCharsets.US_ASCII),
        RoutingVersionInterceptor.value(9007199254740993L));
    RecordHeaders headers = new RecordHeaders();
    headers.add("other", new byte[] {1});
    RoutingVersionInterceptor.stamp(headers, 7);
    RoutingVersionInterceptor.stamp(headers, 8);
    assertEquals("8", new String(headers.lastHeader("routing_version").value(),
        StandardCharsets.UTF_8));
    assertEquals(2, headers.toArray().length);
    assertEquals(1, RoutingSpec.VERSION);
  }
}
