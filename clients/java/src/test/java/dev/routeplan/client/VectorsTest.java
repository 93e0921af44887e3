package dev.routeplan.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.kafka.common.Cluster;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/** The shared vectors (schemas/vectors, written by `routeplan vectors`): Java routes, verifies
 * and canonicalises as the Python reference does. */
class VectorsTest {
  static final Path VECTORS = Path.of("../../schemas/vectors");
  private static final Map<String, Table> TABLES = new HashMap<>();

  /** The cases of a vectors file: each a map of its members (strings, ints, lists of strings). */
  static List<Map<String, Object>> cases(String file) throws IOException {
    List<Map<String, Object>> cases = new ArrayList<>();
    try (JsonParser p = new JsonFactory().createParser(VECTORS.resolve(file).toFile())) {
      p.nextToken(); // {
      p.nextToken(); // "cases"
      p.nextToken(); // [
      while (p.nextToken() == JsonToken.START_OBJECT) {
        Map<String, Object> c = new LinkedHashMap<>();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
          String name = p.currentName();
          JsonToken t = p.nextToken();
          if (t == JsonToken.START_ARRAY) {
            List<String> items = new ArrayList<>();
            while (p.nextToken() != JsonToken.END_ARRAY) {
              items.add(p.getText());
            }
            c.put(name, items);
          } else {
            c.put(name, t == JsonToken.VALUE_NULL ? null
                : t == JsonToken.VALUE_NUMBER_INT ? (Object) p.getIntValue() : p.getText());
          }
        }
        cases.add(c);
      }
    }
    return cases;
  }

  static synchronized Table table(String file) throws IOException {
    Table t = TABLES.get(file);
    if (t == null) {
      t = Table.readFile(VECTORS.resolve(file));
      TABLES.put(file, t);
    }
    return t;
  }

  @SuppressWarnings("unchecked")
  @TestFactory
  Stream<DynamicTest> everyMessageIsRoutedAsPythonRoutesIt() throws IOException {
    return cases("cases.json").stream().map(c -> DynamicTest.dynamicTest((String) c.get("name"),
        () -> {
          Table t = table((String) c.get("table"));
          assertEquals(c.get("checksum"), t.checksum);
          List<String> keys = (List<String>) c.get("keys");
          List<String> expected = (List<String>) c.get("expected");
          Integer partitions = (Integer) c.get("partitions");
          if (Table.PARTITION_ASSIGNMENT.equals(t.kind)) {
            for (int i = 0; i < keys.size(); i++) {
              assertEquals(expected.get(i), t.partitionConsumer.get(Integer.parseInt(keys.get(i))));
            }
            return;
          }
          Router router = new Router(t, Router.options().kafka(partitions != null));
          Router bytes = new Router(t, Router.options().kafka(partitions != null)); // byte[] keys
          for (int i = 0; i < keys.size(); i++) {
            String key = keys.get(i);
            String got = partitions == null ? router.route(key)
                : router.routePartition(key).worker() + "\t"
                    + bytes.partition(key.getBytes(StandardCharsets.UTF_8));
            assertEquals(expected.get(i), got, "message " + i + " (key '" + key + "')");
          }
        }));
  }

  @SuppressWarnings("unchecked")
  @TestFactory
  Stream<DynamicTest> theRouteToolPrintsTheVectorsLines() throws IOException {
    return cases("cases.json").stream()
        .filter(c -> !((String) c.get("table")).contains("2p24")) // routed once above
        .map(c -> DynamicTest.dynamicTest((String) c.get("name"), () -> {
          List<String> args = new ArrayList<>(List.of("--table",
              VECTORS.resolve((String) c.get("table")).toString()));
          if (c.get("partitions") != null) {
            args.addAll(List.of("--partitions", c.get("partitions").toString()));
          }
          String stdin = String.join("\n", (List<String>) c.get("keys"));
          StringWriter out = new StringWriter();
          RouteTool.run(args.toArray(new String[0]),
              new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)), out);
          assertEquals(String.join("\n", (List<String>) c.get("expected")) + "\n", out.toString());
        }));
  }

  /**
   * The partitioner routes a String key by its text, whatever bytes its serializer wrote (the
   * vectors' bytes of another encoding); a byte[] key as the UTF-8 of a key: another key's, or
   * refused (and not counted) when it is not UTF-8 (key_bytes.json).
   */
  @SuppressWarnings("unchecked")
  @TestFactory
  Stream<DynamicTest> thePartitionerRoutesAKeyByItsTextAndBytesAsUtf8() throws IOException {
    return cases("key_bytes.json").stream().map(c -> DynamicTest.dynamicTest(
        (String) c.get("name"), () -> {
          List<String> keys = (List<String>) c.get("keys");
          List<String> hex = (List<String>) c.get("key_bytes");
          List<String> byText = (List<String>) c.get("by_text");
          List<String> byBytes = (List<String>) c.get("by_bytes");
          Cluster cluster = RouterTest.cluster("t", (Integer) c.get("partitions"));
          RoutingPartitioner text = RouterTest.partitioner((String) c.get("table"));
          RoutingPartitioner bytes = RouterTest.partitioner((String) c.get("table"));
          for (int i = 0; i < keys.size(); i++) {
            byte[] serialized = HexFormat.of().parseHex(hex.get(i));
            String message = c.get("name") + ", message " + i + " ('" + keys.get(i) + "')";
            assertEquals(byText.get(i), Integer.toString(
                text.partition("t", keys.get(i), serialized, null, null, cluster)), message);
            String got;
            try {
              got = Integer.toString(bytes.partition("t", serialized, serialized, null, null,
                  cluster));
            } catch (RoutingPartitioner.RoutingException e) {
              assertTrue(e.getMessage().contains("not UTF-8"), e.getMessage());
              got = "refused";
            }
            assertEquals(byBytes.get(i), got, message);
          }
        }));
  }

  @TestFactory
  Stream<DynamicTest> canonicalFormsAreRfc8785() throws IOException {
    return cases("canonical.json").stream().map(c -> DynamicTest.dynamicTest(
        (String) c.get("name"), () -> assertEquals(c.get("canonical"), new String(
            Canonical.canonical(((String) c.get("input")).getBytes(StandardCharsets.UTF_8)),
            StandardCharsets.UTF_8))));
  }

  @TestFactory
  Stream<DynamicTest> everyRefusedDocumentIsRefused() throws IOException {
    return cases("refused.json").stream().map(c -> DynamicTest.dynamicTest(
        (String) c.get("name"), () -> {
          InvalidTableException e = assertThrows(InvalidTableException.class,
              () -> Table.readFile(VECTORS.resolve((String) c.get("file"))), (String) c.get("why"));
          assertTrue(e.getMessage().contains("refused"), e.getMessage());
        }));
  }

  static byte[] bytes(String file) throws IOException {
    return Files.readAllBytes(VECTORS.resolve(file));
  }
}
