package dev.routeplan.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RouterTest {
  static void publish(Path dir, String version, byte[] body) throws IOException {
    Files.write(dir.resolve(version), body);
    Files.writeString(dir.resolve("LATEST"), version);
  }

  @Test
  void reloadKeepsTheLastGoodTableOnEveryBadVersion(@TempDir Path root) throws IOException {
    Path dir = Files.createDirectory(root.resolve("vectors"));
    byte[] good = VectorsTest.bytes("tables/kr-seed42.json");
    publish(dir, "v1.json", good);
    try (Router router = Router.open(root.toString(), "vectors", Router.options().kafka(true))) {
      String before = router.routePartition("user-1").worker();
      Map<String, byte[]> bad = Map.of(
          "v2.json", VectorsTest.bytes("refused/bad-checksum.json"),
          "v3.json", Arrays.copyOf(good, good.length / 2),
          "v4.json", VectorsTest.bytes("tables/pa-basic.json"));
      for (Map.Entry<String, byte[]> e : bad.entrySet()) {
        publish(dir, e.getKey(), e.getValue());
        assertFalse(router.reload(), e.getKey());
        assertEquals(1, router.table().version, e.getKey());
      }
      Files.writeString(dir.resolve("LATEST"), "garbage");
      assertFalse(router.reload());
      Files.delete(dir.resolve("LATEST"));
      assertFalse(router.reload());
      assertEquals(before, router.routePartition("user-1").worker());
      publish(dir, "v6.json", VectorsTest.bytes("tables/kr-legacy.json"));
      assertTrue(router.reload());
      assertEquals(2, router.table().version); // kr-legacy is version 2
    }
  }

  @Test
  void anHttpSourceGetsTheTokenAndFollowsEtags() throws IOException {
    byte[] body = VectorsTest.bytes("tables/kr-seed42.json");
    AtomicInteger notModified = new AtomicInteger();
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/api/streams/vectors/latest", exchange -> {
      String auth = exchange.getRequestHeaders().getFirst("Authorization");
      if (!"Bearer s3cret".equals(auth)) {
        exchange.sendResponseHeaders(401, -1);
      } else if ("\"v1\"".equals(exchange.getRequestHeaders().getFirst("If-None-Match"))) {
        notModified.incrementAndGet();
        exchange.sendResponseHeaders(304, -1);
      } else {
        exchange.getResponseHeaders().add("ETag", "\"v1\"");
        exchange.sendResponseHeaders(200, body.length);
        try (OutputStream out = exchange.getResponseBody()) {
          out.write(body);
        }
      }
      exchange.close();
    });
    server.start();
    String base = "http://127.0.0.1:" + server.getAddress().getPort() + "/api/";
    try {
      IOException refused = assertThrows(IOException.class,
          () -> Router.open(base, "vectors", Router.options().token("wrong")));
      assertTrue(refused.getMessage().contains("HTTP 401"), refused.getMessage());
      try (Router router = Router.open(base, "vectors", Router.options().token("s3cret"))) {
        assertFalse(router.reload());
        assertEquals(1, notModified.get());
        assertEquals("vectors", router.table().stream);
      }
      assertThrows(IllegalArgumentException.class,
          () -> Router.open(base, "../etc", Router.options()));
    } finally {
      server.stop(0);
    }
  }

  static Cluster cluster(String topic, int partitions) {
    Node node = new Node(0, "127.0.0.1", 9092);
    List<PartitionInfo> infos = new ArrayList<>();
    for (int p = 0; p < partitions; p++) {
      infos.add(new PartitionInfo(topic, p, node, new Node[] {node}, new Node[] {node}));
    }
    return new Cluster("c", List.of(node), infos, Set.of(), Set.of());
  }

  static RoutingPartitioner partitioner(String table) {
    RoutingPartitioner partitioner = new RoutingPartitioner();
    partitioner.configure(Map.of(RoutingPartitioner.LOCATION,
        VectorsTest.VECTORS.resolve(table).toString(), RoutingPartitioner.RELOAD_MS, "0"));
    return partitioner;
  }

  @Test
  void thePartitionerRoutesByTheTableAndRefusesWhatItCannotRoute() {
    RoutingPartitioner partitioner = partitioner("tables/kr-seed42.json");
    Router reference = new Router(partitioner.router().table());
    for (String key : List.of("hot-a", "user-1", "", "hot-a", "ключ")) {
      byte[] k = key.getBytes(StandardCharsets.UTF_8);
      assertEquals(Integer.parseInt(reference.route(key).substring(1)),
          partitioner.partition("clicks", key, k, null, null, cluster("clicks", 8)));
    }
    Map<String, Object[]> refused = new LinkedHashMap<>(); // why -> key, key bytes, partitions
    refused.put("has no key", new Object[] {null, null, 8});
    refused.put("worker 'w4' maps to partition 4, which topic 'clicks' does not have "
        + "(4 partitions", new Object[] {"k", new byte[] {'k'}, 4});
    refused.put("has a key of type java.lang.Long", new Object[] {42L, new byte[8], 8});
    refused.put("the key 0xff is not UTF-8", new Object[] {new byte[] {-1}, new byte[] {-1}, 8});
    for (Map.Entry<String, Object[]> e : refused.entrySet()) {
      Object[] record = e.getValue();
      RoutingPartitioner.RoutingException error = assertThrows(
          RoutingPartitioner.RoutingException.class,
          () -> partitioner.partition("clicks", record[0], (byte[]) record[1], null, null,
              cluster("clicks", (Integer) record[2])));
      assertTrue(error.getMessage().contains(e.getKey()), error.getMessage());
    }
    assertEquals(reference.localLoads(), partitioner.router().localLoads()); // none counted
    partitioner.close();
    RoutingPartitioner.RoutingException missing = assertThrows(
        RoutingPartitioner.RoutingException.class,
        () -> new RoutingPartitioner().configure(Map.of()));
    assertTrue(missing.getMessage().contains("routeplan.table.location is required"));
  }

  /**
   * Threads routing through one router, split keys above all, by every entry point: each message
   * routed is counted once (the local loads are, per worker, the messages the calls sent there),
   * and one refused is not counted.
   */
  @Test
  void concurrentRoutesCountEveryMessageOnce() throws Exception {
    RoutingPartitioner partitioner = partitioner("tables/kr-seed42.json");
    Router router = partitioner.router();
    Table table = router.table();
    List<String> keys = List.of("hot-a", "hot-b", "", "ключ", "hot-a", "user-1", "hot-a", "ü-2",
        "hot-b");
    int threads = 8;
    int messages = 20_000;
    Cluster small = cluster("clicks", 4); // the table needs 5 partitions: refused
    Cluster topic = cluster("clicks", 8);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    List<Future<Map<String, Map<String, Long>>>> sent = new ArrayList<>(); // key -> worker -> n
    for (int t = 0; t < threads; t++) {
      int first = t;
      sent.add(pool.submit(() -> {
        Map<String, Map<String, Long>> byKey = new HashMap<>();
        for (int i = 0; i < messages; i++) {
          String key = keys.get((first + i) % keys.size());
          byte[] bytes = key.getBytes(StandardCharsets.UTF_8);
          String worker;
          switch (i % 5) {
            case 0 -> worker = router.route(key);
            case 1 -> worker = router.route(bytes);
            case 2 -> worker = router.routePartition(key).worker();
            case 3 -> worker = "w" + partitioner.partition("clicks", key, bytes, null, null,
                topic); // w0 … w4 are partitions 0 … 4
            default -> {
              assertThrows(RoutingPartitioner.RoutingException.class,
                  () -> partitioner.partition("clicks", key, bytes, null, null, small));
              worker = "(refused)";
            }
          }
          byKey.computeIfAbsent(key, k -> new HashMap<>()).merge(worker, 1L, Long::sum);
        }
        return byKey;
      }));
    }
    pool.shutdown();
    assertTrue(pool.awaitTermination(60, TimeUnit.SECONDS));
    Map<String, Long> perWorker = new HashMap<>();
    Map<String, Long> perKey = new HashMap<>();
    for (Future<Map<String, Map<String, Long>>> f : sent) {
      for (Map.Entry<String, Map<String, Long>> byKey : f.get().entrySet()) {
        String key = byKey.getKey();
        for (Map.Entry<String, Long> e : byKey.getValue().entrySet()) {
          perKey.merge(key, e.getValue(), Long::sum);
          if (e.getKey().equals("(refused)")) {
            continue;
          }
          perWorker.merge(e.getKey(), e.getValue(), Long::sum);
          int[] candidates = table.hotKeys.get(key);
          assertTrue(candidates == null || Arrays.stream(candidates)
              .anyMatch(c -> table.workers.get(c).equals(e.getKey())), key + " -> " + e.getKey());
        }
      }
    }
    Map<String, Long> attempted = new HashMap<>();
    for (int t = 0; t < threads; t++) {
      for (int i = 0; i < messages; i++) {
        attempted.merge(keys.get((t + i) % keys.size()), 1L, Long::sum);
      }
    }
    assertEquals(attempted, perKey); // every message of a key routed or refused, once
    Map<String, Long> loads = router.localLoads();
    for (String worker : table.workers) {
      assertEquals(perWorker.getOrDefault(worker, 0L), loads.get(worker), worker);
    }
  }

  @Test
  void aSplitKeyGoesToTheLeastLoadedCandidateByCapacity() throws IOException {
    Router router = new Router(VectorsTest.table("tables/kr-seed42.json"));
    // "hot-a": w0 (weight 0.7, capacity 1) then w1 (0.3, capacity 2)
    List<String> got = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      got.add(router.route("hot-a"));
    }
    assertEquals(List.of("w0", "w1", "w1", "w0", "w1", "w1"), got);
    assertEquals(2L, router.localLoads().get("w0"));
    assertEquals(4L, router.localLoads().get("w1"));
  }

  @Test
  void localLoadsRestartAtZeroWhenANewVersionIsInstalled(@TempDir Path root) throws IOException {
    Path dir = Files.createDirectory(root.resolve("vectors"));
    publish(dir, "v1.json", VectorsTest.bytes("tables/kr-seed42.json"));
    try (Router router = Router.open(root.toString(), "vectors", Router.options())) {
      for (String key : List.of("hot-a", "hot-a", "hot-a", "user-1", "hot-a", "hot-a", "hot-a")) {
        router.route(key); // w1 gets 4 of hot-a's messages under v1
      }
      publish(dir, "v2.json", VectorsTest.bytes("tables/kr-legacy.json")); // hot-a: w1, w2
      assertTrue(router.reload());
      assertEquals(2, router.table().version);
      assertEquals(Map.of("w0", 0L, "w1", 0L, "w2", 0L), router.localLoads());
      Router fresh = new Router(VectorsTest.table("tables/kr-legacy.json"));
      for (String key : List.of("hot-a", "user-1", "hot-a", "user-2", "hot-a", "hot-a")) {
        assertEquals(fresh.route(key), router.route(key), key);
      }
      assertEquals(fresh.localLoads(), router.localLoads());
    }
  }

  @Test
  void localLoadsKeepGoingWhenTheSameVersionIsReadAgain(@TempDir Path root) throws IOException {
    byte[] body = VectorsTest.bytes("tables/kr-seed42.json");
    Path dir = Files.createDirectory(root.resolve("vectors"));
    publish(dir, "v1.json", body);
    Path file = Files.write(root.resolve("table.json"), body);
    for (String location : List.of(root.toString(), file.toString())) {
      try (Router router = Router.open(location, "vectors", Router.options())) {
        for (int i = 0; i < 3; i++) {
          router.route("hot-a"); // w0 w1 w1
        }
        publish(dir, "v9.json", body); // the store names another file: the same version 1
        Files.setLastModifiedTime(file, java.nio.file.attribute.FileTime.fromMillis(
            Files.getLastModifiedTime(file).toMillis() + 60_000)); // the file is read again
        assertFalse(router.reload(), location);
        assertEquals(1L, router.localLoads().get("w0"), location);
        assertEquals(2L, router.localLoads().get("w1"), location);
        assertEquals("w0", router.route("hot-a"), location); // w0 (1/1) ties w1 (2/2): w0 first
        publish(dir, "v1.json", body);
      }
    }
  }

  @Test
  void aTableWithoutSplitKeysKeepsNoLocalLoads() throws IOException {
    Router router = new Router(VectorsTest.table("tables/kr-basic.json"),
        Router.options().kafka(true));
    for (String key : List.of("user-1", "user-2", "", "hot-a")) {
      router.route(key);
      router.route(key.getBytes(StandardCharsets.UTF_8));
      router.partition(key.getBytes(StandardCharsets.UTF_8));
      router.routePartition(key);
    }
    assertEquals(Map.of(), router.localLoads());
  }

  @Test
  void murmur3OfAStringIsMurmur3OfItsUtf8Bytes() {
    for (String key : List.of("", "a", "ab", "abc", "abcd", "é", "€uro", "😀x", "ascii-😀-é-€")) {
      byte[] b = key.getBytes(StandardCharsets.UTF_8);
      for (int seed : new int[] {0, 42, -1}) {
        assertEquals(Murmur3.hash(b, 0, b.length, seed), Murmur3.hashUtf8(key, seed), key);
      }
    }
    assertEquals(0x2e4ff723, Murmur3.hash("The quick brown fox jumps over the lazy dog"
        .getBytes(StandardCharsets.UTF_8), 0, 43, 0));
  }

  @Test
  void routeAllocatesNothingForAPlainKey() throws IOException {
    Router router = RouteBench.router();
    String[] keys = RouteBench.keys();
    byte[] raw = "user-12345".getBytes(StandardCharsets.UTF_8);
    for (int i = 0; i < 20_000; i++) { // load the classes first
      router.route(keys[i % keys.length]);
      router.partition(raw);
    }
    long before = RouteBench.allocated();
    for (int i = 0; i < 100_000; i++) {
      router.route(keys[i % keys.length]);
      router.partition(raw);
    }
    long bytes = RouteBench.allocated() - before;
    assertTrue(bytes < 10_000, bytes + " bytes for 200 000 calls");
  }

  @Test
  void isUtf8IsJavasStrictDecoder() {
    java.util.Random random = new java.util.Random(11);
    List<byte[]> cases = new ArrayList<>();
    for (String hex : List.of("", "41", "c3a9", "c0af", "c2", "e0a080", "e09f80", "eda080",
        "ed9fbf", "efbfbf", "f0908080", "f08f8080", "f48fbfbf", "f4908080", "f5", "80", "ff")) {
      cases.add(java.util.HexFormat.of().parseHex(hex));
    }
    for (int i = 0; i < 100_000; i++) {
      byte[] b = new byte[random.nextInt(6)];
      for (int j = 0; j < b.length; j++) { // mostly bytes of multi-byte forms
        b[j] = (byte) (random.nextInt(4) == 0 ? random.nextInt(256) : 0x80 + random.nextInt(0x78));
      }
      cases.add(b);
    }
    for (byte[] b : cases) {
      boolean valid;
      try {
        StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(b));
        valid = true;
      } catch (java.nio.charset.CharacterCodingException e) {
        valid = false;
      }
      assertEquals(valid, Router.isUtf8(b), java.util.HexFormat.of().formatHex(b));
    }
  }

  @Test
  void theKeyGroupIsTheUnsignedHashModuloTheGroupCount() {
    java.util.Random random = new java.util.Random(7);
    for (int n : new int[] {1, 2, 3, 7, 1000, 1024, 4096, 65537, 1 << 23, (1 << 24) - 1, 1 << 24}) {
      long m = Long.divideUnsigned(-1L, n) + 1;
      for (int hash : new int[] {0, 1, -1, Integer.MIN_VALUE, Integer.MAX_VALUE, n, -n}) {
        assertEquals(Integer.remainderUnsigned(hash, n), Router.group(hash, m, n));
      }
      for (int i = 0; i < 20_000; i++) {
        int hash = random.nextInt();
        assertEquals(Integer.remainderUnsigned(hash, n), Router.group(hash, m, n));
      }
    }
  }
}
