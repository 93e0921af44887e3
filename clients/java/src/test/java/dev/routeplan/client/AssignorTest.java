package dev.routeplan.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** RouteplanAssignor and RouteplanRebalancer on in-memory groups (no broker). */
class AssignorTest {
  static final String STREAM = "orders";
  /** Six partitions over c0, c1, c2, not in name order. */
  static final Map<Integer, String> PLAN = Map.of(0, "c2", 1, "c0", 2, "c1", 3, "c2", 4, "c0",
      5, "c1");

  /** A partition_assignment document with its checksum (docs/routing-spec.md §2, §5). */
  static byte[] assignment(String stream, long version, Map<Integer, String> plan,
      String... consumers) {
    return assignment(stream, version, plan, null, consumers);
  }

  /** The same, planned on {@code loads} (planning_load.partition_load) unless null. */
  static byte[] assignment(String stream, long version, Map<Integer, String> plan,
      double[] loads, String... consumers) {
    StringBuilder doc = new StringBuilder("{\"stream\":\"" + stream + "\",\"version\":" + version
        + ",\"kind\":\"partition_assignment\",\"strategy\":\"test\",\"consumers\":[");
    for (int i = 0; i < consumers.length; i++) {
      doc.append(i == 0 ? "" : ",").append("{\"worker\":\"").append(consumers[i])
          .append("\",\"capacity\":1,\"state\":\"active\"}");
    }
    doc.append("],\"partition_consumer\":{");
    String sep = "";
    for (Map.Entry<Integer, String> e : new TreeMap<>(plan).entrySet()) {
      doc.append(sep).append("\"").append(e.getKey()).append("\":\"").append(e.getValue())
          .append("\"");
      sep = ",";
    }
    doc.append("}");
    if (loads != null) {
      StringBuilder list = new StringBuilder();
      for (double x : loads) {
        list.append(list.length() == 0 ? "" : ",").append(x);
      }
      doc.append(",\"planning_load\":{\"partition_load\":[").append(list).append("]}");
    }
    doc.append("}");
    byte[] body = doc.toString().getBytes(StandardCharsets.UTF_8);
    String checksum = Table.CHECKSUM_PREFIX + sha256(Canonical.canonical(body));
    return (doc.substring(0, doc.length() - 1) + ",\"checksum\":\"" + checksum + "\"}")
        .getBytes(StandardCharsets.UTF_8);
  }

  static String sha256(byte[] data) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Publishes {@code body} as v{@code n} of the stream in the store at {@code root}. */
  static void publish(Path root, int n, byte[] body) throws IOException {
    Path dir = Files.createDirectories(root.resolve(STREAM));
    RouterTest.publish(dir, "v" + n + ".json", body);
  }

  static RouteplanAssignor assignor(Path root, String... more) {
    Map<String, Object> configs = new HashMap<>(Map.of(RouteplanAssignor.LOCATION,
        root.toString(), RouteplanAssignor.STREAM, STREAM));
    for (int i = 0; i + 1 < more.length; i += 2) {
      configs.put(more[i], more[i + 1]);
    }
    RouteplanAssignor assignor = new RouteplanAssignor();
    assignor.configure(configs);
    return assignor;
  }

  /** A member subscribed to {@code topic}, owning {@code owned} of it, with an instance id or
   * none. */
  static Subscription member(RouteplanAssignor assignor, String topic, String instance,
      Integer... owned) {
    List<TopicPartition> partitions = new ArrayList<>();
    for (int p : owned) {
      partitions.add(new TopicPartition(topic, p));
    }
    Subscription s = new Subscription(List.of(topic), assignor.subscriptionUserData(Set.of(topic)),
        partitions, 1, Optional.empty());
    s.setGroupInstanceId(Optional.ofNullable(instance));
    return s;
  }

  /** Member → its partitions (ascending). */
  static Map<String, List<Integer>> assign(RouteplanAssignor assignor, Cluster cluster,
      Map<String, Subscription> members) {
    Map<String, Assignment> result = assignor.assign(cluster, new GroupSubscription(members))
        .groupAssignment();
    Map<String, List<Integer>> partitions = new TreeMap<>();
    for (Map.Entry<String, Assignment> e : result.entrySet()) {
      List<Integer> ps = new ArrayList<>();
      e.getValue().partitions().forEach(tp -> ps.add(tp.partition()));
      ps.sort(null);
      partitions.put(e.getKey(), ps);
    }
    return partitions;
  }

  /** The plan's partitions of each consumer. */
  static Map<String, List<Integer>> byConsumer(Map<Integer, String> plan) {
    Map<String, List<Integer>> out = new TreeMap<>();
    new TreeMap<>(plan).forEach((p, c) -> out.computeIfAbsent(c, k -> new ArrayList<>()).add(p));
    return out;
  }

  static void assertEveryPartitionOnce(Map<String, List<Integer>> assigned, int partitions) {
    List<Integer> all = new ArrayList<>();
    assigned.values().forEach(all::addAll);
    all.sort(null);
    List<Integer> expected = new ArrayList<>();
    for (int p = 0; p < partitions; p++) {
      expected.add(p);
    }
    assertEquals(expected, all, assigned.toString());
  }

  @Test
  void staticMembersGetThePartitionsOfTheConsumerTheyAreNamedAfter(@TempDir Path root)
      throws IOException {
    publish(root, 1, assignment(STREAM, 1, PLAN, "c0", "c1", "c2"));
    RouteplanAssignor assignor = assignor(root);
    Map<String, Subscription> members = new LinkedHashMap<>(); // member ids in another order
    members.put("m-a", member(assignor, STREAM, "c2"));
    members.put("m-b", member(assignor, STREAM, "c0"));
    members.put("m-c", member(assignor, STREAM, "c1"));
    Map<String, List<Integer>> got = assign(assignor, RouterTest.cluster(STREAM, 6), members);
    assertNull(assignor.fallbackReason, assignor.fallbackReason);
    Map<String, List<Integer>> plan = byConsumer(PLAN);
    assertEquals(Map.of("m-a", plan.get("c2"), "m-b", plan.get("c0"), "m-c", plan.get("c1")),
        got);
    assertEquals("routeplan", assignor.name());
  }

  @Test
  void membersWithoutAMatchingInstanceIdPairInSortedOrder(@TempDir Path root) throws IOException {
    publish(root, 1, assignment(STREAM, 1, PLAN, "c0", "c1", "c2"));
    RouteplanAssignor assignor = assignor(root);
    Map<String, List<Integer>> plan = byConsumer(PLAN);
    Map<String, Subscription> dynamic = new LinkedHashMap<>();
    for (String id : List.of("m2", "m0", "m1")) {
      dynamic.put(id, member(assignor, STREAM, null));
    }
    assertEquals(Map.of("m0", plan.get("c0"), "m1", plan.get("c1"), "m2", plan.get("c2")),
        assign(assignor, RouterTest.cluster(STREAM, 6), dynamic));
    // one static member named after c2; the others (an instance id that is no consumer's, and
    // none) take c0 and c1 in order: "" sorts before "x"
    Map<String, Subscription> mixed = new LinkedHashMap<>();
    mixed.put("a", member(assignor, STREAM, "c2"));
    mixed.put("b", member(assignor, STREAM, "x"));
    mixed.put("c", member(assignor, STREAM, null));
    assertEquals(Map.of("a", plan.get("c2"), "b", plan.get("c1"), "c", plan.get("c0")),
        assign(assignor, RouterTest.cluster(STREAM, 6), mixed));
  }

  @Test
  void partitionsTheTableLacksGoToTheLeastLoadedAndThoseTheTopicLacksAreLeftOut(
      @TempDir Path root) throws IOException {
    Map<Integer, String> plan = Map.of(0, "c0", 1, "c0", 2, "c0", 3, "c1", 7, "c1");
    publish(root, 1, assignment(STREAM, 1, plan, "c0", "c1"));
    RouteplanAssignor assignor = assignor(root);
    Map<String, Subscription> members = new LinkedHashMap<>();
    members.put("m0", member(assignor, STREAM, "c0"));
    members.put("m1", member(assignor, STREAM, "c1"));
    Map<String, List<Integer>> got = assign(assignor, RouterTest.cluster(STREAM, 6), members);
    assertNull(assignor.fallbackReason, assignor.fallbackReason);
    assertEquals(Map.of("m0", List.of(0, 1, 2), "m1", List.of(3, 4, 5)), got);
  }

  /**
   * Cooperative: a partition the new plan moves is first left unassigned (its owner revokes it;
   * never revoked from one member and added to another in one rebalance), then assigned at the
   * next rebalance.
   */
  @Test
  void aPartitionThatMovesIsReleasedBeforeItIsAssigned(@TempDir Path root) throws IOException {
    publish(root, 1, assignment(STREAM, 1, PLAN, "c0", "c1", "c2"));
    RouteplanAssignor assignor = assignor(root);
    Cluster cluster = RouterTest.cluster(STREAM, 6);
    Map<String, List<Integer>> plan = byConsumer(PLAN); // c0 [1, 4], c1 [2, 5], c2 [0, 3]
    Map<String, Subscription> members = new LinkedHashMap<>();
    members.put("m0", member(assignor, STREAM, "c0", 1, 4));
    members.put("m1", member(assignor, STREAM, "c1", 2, 5));
    members.put("m2", member(assignor, STREAM, "c2", 0, 3));
    Map<String, List<Integer>> steady = assign(assignor, cluster, members);
    assertEquals(Map.of("m0", plan.get("c0"), "m1", plan.get("c1"), "m2", plan.get("c2")),
        steady);
    // v2 moves 4 from c0 to c1 and 0 from c2 to c0
    Map<Integer, String> next = new HashMap<>(PLAN);
    next.put(4, "c1");
    next.put(0, "c0");
    publish(root, 2, assignment(STREAM, 2, next, "c0", "c1", "c2"));
    Map<String, List<Integer>> first = assign(assignor, cluster, members);
    assertEquals(Map.of("m0", List.of(1), "m1", List.of(2, 5), "m2", List.of(3)), first);
    assertCooperative(members, first);
    Map<String, Subscription> released = new LinkedHashMap<>();
    first.forEach((m, ps) -> released.put(m, member(assignor, STREAM,
        members.get(m).groupInstanceId().get(), ps.toArray(new Integer[0]))));
    Map<String, List<Integer>> second = assign(assignor, cluster, released);
    Map<String, List<Integer>> want = byConsumer(next);
    assertEquals(Map.of("m0", want.get("c0"), "m1", want.get("c1"), "m2", want.get("c2")),
        second);
    assertCooperative(released, second);
    assertEveryPartitionOnce(second, 6);
  }

  /** The check the consumer's coordinator makes of an assignor that claims COOPERATIVE. */
  static void assertCooperative(Map<String, Subscription> members,
      Map<String, List<Integer>> assigned) {
    Set<Integer> added = new HashSet<>();
    Set<Integer> revoked = new HashSet<>();
    for (Map.Entry<String, Subscription> e : members.entrySet()) {
      Set<Integer> owned = new TreeSet<>();
      e.getValue().ownedPartitions().forEach(tp -> owned.add(tp.partition()));
      Set<Integer> now = new TreeSet<>(assigned.get(e.getKey()));
      now.stream().filter(p -> !owned.contains(p)).forEach(added::add);
      owned.stream().filter(p -> !now.contains(p)).forEach(revoked::add);
    }
    added.retainAll(revoked);
    assertTrue(added.isEmpty(), "revoked and added at once: " + added);
  }

  @Test
  void withoutAFittingPlanTheGroupIsAssignedByCooperativeSticky(@TempDir Path root)
      throws IOException {
    Map<String, Path> sources = new LinkedHashMap<>();
    for (String name : List.of("none", "refused", "key_routing", "other_stream", "plan")) {
      sources.put(name, Files.createDirectory(root.resolve(name)));
    }
    byte[] good = assignment(STREAM, 1, PLAN, "c0", "c1", "c2");
    byte[] bad = Table.utf8(good).replace("\"version\":1", "\"version\":9")
        .getBytes(StandardCharsets.UTF_8); // the checksum no longer matches
    publish(sources.get("refused"), 1, bad);
    publish(sources.get("key_routing"), 1, VectorsTest.bytes("tables/kr-basic.json"));
    Path other = Files.createDirectories(sources.get("other_stream").resolve(STREAM));
    RouterTest.publish(other, "v1.json", assignment("clicks", 1, PLAN, "c0", "c1", "c2"));
    publish(sources.get("plan"), 1, good);
    Map<String, String> reasons = new LinkedHashMap<>(); // source/case -> why
    reasons.put("none", "no table at");
    reasons.put("refused", "invalid table: ");
    reasons.put("key_routing", "a key_routing table, not a partition_assignment one");
    reasons.put("other_stream", "the table is of stream 'clicks', not 'orders'");
    for (Map.Entry<String, String> e : reasons.entrySet()) {
      RouteplanAssignor assignor = assignor(sources.get(e.getKey()));
      assertFallsBack(assignor, threeMembers(assignor, STREAM), STREAM, e.getValue());
    }
    RouteplanAssignor assignor = assignor(sources.get("plan"));
    Map<String, Subscription> two = threeMembers(assignor, STREAM);
    two.remove("m2");
    assertFallsBack(assignor, two, STREAM,
        "the group has 2 members, the plan 3 consumers that read partitions");
    Map<String, Subscription> four = threeMembers(assignor, STREAM);
    four.put("m3", member(assignor, STREAM, "c3"));
    assertFallsBack(assignor, four, STREAM, "the group has 4 members");
    assertFallsBack(assignor, threeMembers(assignor, "payments"), "payments",
        "subscribes to [payments], not to topic 'orders' alone");
    RouteplanAssignor topic = assignor(sources.get("plan"), RouteplanAssignor.TOPIC, "payments");
    assertEquals(byConsumer(PLAN).get("c0"),
        assign(topic, RouterTest.cluster("payments", 6), threeMembers(topic, "payments"))
            .get("m0"));
    assertNull(topic.fallbackReason, topic.fallbackReason);
  }

  @Test
  void aGroupOfAnotherSizeGetsThePlansPartitionsSpreadByItsLoads(@TempDir Path root)
      throws IOException {
    // partition 6 (the topic's 7th) is not in the plan: it counts as the mean load, 26/6
    double[] loads = {9, 1, 4, 4, 2, 6};
    publish(root, 1, assignment(STREAM, 1, PLAN, loads, "c0", "c1", "c2"));
    RouteplanAssignor assignor = assignor(root);
    Map<String, Subscription> two = new LinkedHashMap<>();
    two.put("m-b", member(assignor, STREAM, "zeta"));
    two.put("m-a", member(assignor, STREAM, "c1"));
    // members by group.instance.id: c1 (m-a), zeta (m-b); heaviest first: 0 -> a, 5 -> b,
    // 6 -> b, 2 -> a, 3 -> b, 4 -> a, 1 -> b (Graham's LPT; the Python assignor's test too)
    assertEquals(Map.of("m-a", List.of(0, 2, 4), "m-b", List.of(1, 3, 5, 6)),
        assign(assignor, RouterTest.cluster(STREAM, 7), two));
    assertTrue(assignor.fallbackReason.contains("the group has 2 members, the plan 3"),
        assignor.fallbackReason);
    assertEquals(byConsumer(PLAN).get("c0"),
        assign(assignor, RouterTest.cluster(STREAM, 6), threeMembers(assignor, STREAM))
            .get("m0"));
    assertNull(assignor.fallbackReason, assignor.fallbackReason);
  }

  static Map<String, Subscription> threeMembers(RouteplanAssignor assignor, String topic) {
    Map<String, Subscription> members = new LinkedHashMap<>();
    for (int i = 0; i < 3; i++) {
      members.put("m" + i, member(assignor, topic, "c" + i));
    }
    return members;
  }

  static void assertFallsBack(RouteplanAssignor assignor, Map<String, Subscription> members,
      String topic, String reason) {
    Map<String, List<Integer>> got = assign(assignor, RouterTest.cluster(topic, 6), members);
    assertNotNull(assignor.fallbackReason, reason);
    assertTrue(assignor.fallbackReason.contains(reason), assignor.fallbackReason);
    assertEquals(members.keySet(), got.keySet());
    assertEveryPartitionOnce(got, 6);
    for (List<Integer> partitions : got.values()) { // cooperative-sticky balances: 6 / n each
      assertTrue(Math.abs(partitions.size() - 6.0 / members.size()) < 1, got.toString());
    }
  }

  @Test
  void aMissingLocationIsAConfigError() {
    ConfigException e = assertThrows(ConfigException.class,
        () -> new RouteplanAssignor().configure(Map.of(RouteplanAssignor.STREAM, STREAM)));
    assertTrue(e.getMessage().contains("routeplan.table.location is required"));
    assertThrows(ConfigException.class, () -> new RouteplanAssignor().configure(Map.of(
        RouteplanAssignor.LOCATION, "/tmp", RouteplanAssignor.STREAM, "../etc")));
  }

  @Test
  void theRebalancerAsksForARebalanceWhenANewPlanIsLatest(@TempDir Path root) throws Exception {
    publish(root, 1, assignment(STREAM, 1, PLAN, "c0", "c1", "c2"));
    RouteplanRebalancer rebalancer = new RouteplanRebalancer(Map.of(RouteplanAssignor.LOCATION,
        root.toString(), RouteplanAssignor.STREAM, STREAM, RoutingPartitioner.RELOAD_MS, "1"));
    assertEquals(1, rebalancer.table().version);
    MockConsumer<byte[], byte[]> consumer = new MockConsumer<>("earliest");
    Thread.sleep(5);
    assertFalse(rebalancer.maybeRebalance(consumer)); // v1 still
    assertFalse(consumer.shouldRebalance());
    Map<Integer, String> next = new HashMap<>(PLAN);
    next.put(0, "c0");
    publish(root, 2, assignment(STREAM, 2, next, "c0", "c1", "c2"));
    Thread.sleep(5);
    assertTrue(rebalancer.maybeRebalance(consumer));
    assertTrue(consumer.shouldRebalance());
    assertEquals(2, rebalancer.table().version);
    consumer.resetShouldRebalance();
    publish(root, 3, "{not json".getBytes(StandardCharsets.UTF_8)); // refused: nothing asked
    assertNull(rebalancer.changed());
    publish(root, 4, VectorsTest.bytes("tables/kr-basic.json")); // another kind: nothing asked
    assertNull(rebalancer.changed());
    publish(root, 5, assignment(STREAM, 2, next, "c0", "c1", "c2")); // v2 again: nothing
    assertNull(rebalancer.changed());
    publish(root, 6, assignment(STREAM, 6, PLAN, "c0", "c1", "c2"));
    assertEquals("routeplan orders v6 (was v2)", rebalancer.changed());
    RouteplanRebalancer never = new RouteplanRebalancer(Map.of(RouteplanAssignor.LOCATION,
        root.toString(), RouteplanAssignor.STREAM, STREAM, RoutingPartitioner.RELOAD_MS, "0"));
    RouteplanRebalancer hourly = new RouteplanRebalancer(Map.of(RouteplanAssignor.LOCATION,
        root.toString(), RouteplanAssignor.STREAM, STREAM, RoutingPartitioner.RELOAD_MS,
        "3600000"));
    publish(root, 7, assignment(STREAM, 7, next, "c0", "c1", "c2"));
    Thread.sleep(5);
    assertFalse(never.maybeRebalance(consumer));
    assertFalse(hourly.maybeRebalance(consumer)); // not read again within the interval
    assertFalse(consumer.shouldRebalance());
    assertEquals("routeplan orders v7 (was v6)", hourly.changed());
  }

  @Test
  void theRebalancerStartsWithoutATableAndAsksWhenOneAppears(@TempDir Path root)
      throws Exception {
    RouteplanRebalancer rebalancer = new RouteplanRebalancer(Map.of(RouteplanAssignor.LOCATION,
        root.toString(), RouteplanAssignor.STREAM, STREAM));
    assertNull(rebalancer.table());
    assertNull(rebalancer.changed());
    publish(root, 1, assignment(STREAM, 1, PLAN, "c0", "c1", "c2"));
    assertEquals("routeplan orders v1", rebalancer.changed());
  }
}
