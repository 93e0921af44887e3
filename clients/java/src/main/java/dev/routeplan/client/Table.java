package dev.routeplan.client;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.zip.GZIPInputStream;

/**
 * One verified routing-table document of either kind (docs/routing-spec.md): bounded JSON, its
 * checksum by the scheme its prefix names, and the fields routing needs.
 */
public final class Table {
  public static final String KEY_ROUTING = "key_routing";
  public static final String PARTITION_ASSIGNMENT = "partition_assignment";
  /** The largest document a reader accepts. */
  public static final int MAX_BYTES = 256 << 20;
  /** The most key groups a table may have. */
  public static final int MAX_KEY_GROUPS = 1 << 24;

  static final String CHECKSUM_PREFIX = "jcs-sha256:";
  static final String LEGACY_CHECKSUM_PREFIX = "sha256:";
  private static final Set<String> KEEP =
      Set.of("stream", "version", "kind", "checksum", "hash", "num_key_groups", "workers",
          "consumers", "hot_keys", "partition_consumer", "planning_load");

  public final String stream;
  public final long version;
  public final String kind;
  public final String checksum;

  /** key_routing: the hash seed (unsigned, in an int), workers, capacities, key groups. */
  public final int seed;
  public final List<String> workers;
  final double[] capacities;
  final int[] keyGroupWorker; // key group -> index in workers
  final Map<String, int[]> hotKeys; // split key -> worker indices by weight, descending (stable)

  /** partition_assignment: partition -> consumer. */
  public final Map<Integer, String> partitionConsumer;
  /**
   * partition_assignment: the load each partition was planned on (planning_load.partition_load,
   * its index the partition), or null when the table has none.
   */
  final double[] partitionLoads;

  private Table(String stream, long version, String kind, String checksum, int seed,
      List<String> workers, double[] capacities, int[] keyGroupWorker, Map<String, int[]> hotKeys,
      Map<Integer, String> partitionConsumer, double[] partitionLoads) {
    this.stream = stream;
    this.version = version;
    this.kind = kind;
    this.checksum = checksum;
    this.seed = seed;
    this.workers = workers;
    this.capacities = capacities;
    this.keyGroupWorker = keyGroupWorker;
    this.hotKeys = hotKeys;
    this.partitionConsumer = partitionConsumer;
    this.partitionLoads = partitionLoads;
  }

  /** The number of key groups of a key_routing table. */
  public int numKeyGroups() {
    return keyGroupWorker.length;
  }

  /** The workers of a split key, by weight (descending), or null for a plain key. */
  public List<String> splitWorkers(String key) {
    int[] targets = hotKeys.get(key);
    if (targets == null) {
      return null;
    }
    List<String> names = new ArrayList<>();
    for (int t : targets) {
      names.add(workers.get(t));
    }
    return names;
  }

  /** Reads and verifies the document at {@code path} (gunzipped when its name ends with .gz). */
  public static Table readFile(Path path) throws IOException {
    try (InputStream raw = Files.newInputStream(path)) {
      InputStream in = path.toString().endsWith(".gz") ? new GZIPInputStream(raw) : raw;
      byte[] data = in.readNBytes(MAX_BYTES + 1);
      try {
        return parse(data);
      } catch (InvalidTableException e) {
        throw new InvalidTableException(path + ": refused: " + e.getMessage(), e);
      }
    }
  }

  /** Verifies a document and returns its table; InvalidTableException says why it is refused. */
  public static Table parse(byte[] data) {
    if (data.length > MAX_BYTES) {
      throw new InvalidTableException("more than " + MAX_BYTES + " bytes");
    }
    Canonical.Result doc;
    try {
      doc = Canonical.run(data, false, Set.of("checksum"), KEEP);
    } catch (IllegalArgumentException e) {
      throw new InvalidTableException(e.getMessage(), e);
    }
    Map<String, Object> f = doc.fields;
    if (!(f.get("checksum") instanceof String)) {
      throw new InvalidTableException("the document has no checksum");
    }
    String stated = (String) f.get("checksum");
    byte[] canonical = doc.bytes;
    String prefix = CHECKSUM_PREFIX;
    if (stated.startsWith(LEGACY_CHECKSUM_PREFIX)) {
      prefix = LEGACY_CHECKSUM_PREFIX;
      canonical = Canonical.run(data, true, Set.of("checksum"), Set.of()).bytes;
    } else if (!stated.startsWith(CHECKSUM_PREFIX)) {
      throw new InvalidTableException("unknown checksum scheme in \"" + stated + "\"");
    }
    String expected = prefix + sha256(canonical);
    if (!stated.equals(expected)) {
      throw new InvalidTableException("checksum mismatch (" + stated + " != " + expected + ")");
    }
    Object kind = f.get("kind");
    String stream = string(f.get("stream"), "stream");
    long version = f.get("version") instanceof Number ? ((Number) f.get("version")).longValue() : 0;
    if (KEY_ROUTING.equals(kind)) {
      return keyRouting(f, doc, stream, version, stated);
    }
    if (PARTITION_ASSIGNMENT.equals(kind)) {
      return assignment(f, doc, stream, version, stated);
    }
    throw new InvalidTableException(
        "kind must be key_routing or partition_assignment, got " + kind);
  }

  private static String sha256(byte[] data) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String string(Object value, String what) {
    if (!(value instanceof String)) {
      throw new InvalidTableException(what + " must be a string");
    }
    return (String) value;
  }

  /** An integral number, or NaN. */
  private static double integral(Object value) {
    if (value instanceof BigInteger) {
      return ((BigInteger) value).doubleValue();
    }
    if (value instanceof Double && (Double) value == Math.rint((Double) value)) {
      return (Double) value;
    }
    return Double.NaN;
  }

  private static double positive(Object value, String what) {
    double x = value instanceof Number ? ((Number) value).doubleValue() : Double.NaN;
    if (!(x > 0) || Double.isInfinite(x)) {
      throw new InvalidTableException(what + " must be > 0, got " + value);
    }
    return x;
  }

  @SuppressWarnings("unchecked")
  private static List<Map<String, Object>> records(Object value, String what) {
    if (!(value instanceof List) || ((List<?>) value).isEmpty()) {
      throw new InvalidTableException(what + ": at least one is needed");
    }
    for (Object r : (List<?>) value) {
      if (!(r instanceof Map)) {
        throw new InvalidTableException(what + ": an entry is not an object");
      }
    }
    return (List<Map<String, Object>>) value;
  }

  /** Names and capacities of workers (or consumers); index by name. */
  private static List<String> parseWorkers(Object value, String what, List<Double> capacities) {
    List<String> names = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    boolean active = false;
    for (Map<String, Object> r : records(value, what)) {
      String name = string(r.get("worker"), what + " name");
      if (name.isEmpty() || !seen.add(name)) {
        throw new InvalidTableException(what + ": \"" + name + "\" is empty or listed twice");
      }
      capacities.add(r.containsKey("capacity") ? positive(r.get("capacity"), name + " capacity")
          : 1.0);
      Object state = r.getOrDefault("state", "active");
      if (!"active".equals(state) && !"draining".equals(state)) {
        throw new InvalidTableException(what + " " + name + ": state must be active or draining");
      }
      active |= "active".equals(state);
      names.add(name);
    }
    if (!active) {
      throw new InvalidTableException(what + ": at least one must be active");
    }
    return names;
  }

  @SuppressWarnings("unchecked")
  private static Table keyRouting(Map<String, Object> f, Canonical.Result doc, String stream,
      long version, String checksum) {
    if (!(f.get("hash") instanceof Map)
        || !"murmur3_x86_32".equals(((Map<String, Object>) f.get("hash")).get("function"))) {
      throw new InvalidTableException("hash.function must be murmur3_x86_32");
    }
    Object seedValue = ((Map<String, Object>) f.get("hash")).get("seed");
    double seed = integral(seedValue);
    if (!(seed >= 0 && seed < 4294967296.0)) {
      throw new InvalidTableException("hash.seed must be an integer in [0, 2^32), got " + seedValue);
    }
    double n = integral(f.get("num_key_groups"));
    if (!(n >= 1 && n <= MAX_KEY_GROUPS)) {
      throw new InvalidTableException(
          "num_key_groups must be in [1, 2^24], got " + f.get("num_key_groups"));
    }
    if (doc.groups == null || doc.groups.length != (int) n) {
      throw new InvalidTableException("key_group_worker must have num_key_groups names");
    }
    Object pc = f.get("partition_consumer");
    if ((pc instanceof Map && !((Map<?, ?>) pc).isEmpty()) || f.containsKey("consumers")) {
      throw new InvalidTableException(
          "partition_consumer and consumers belong to partition_assignment tables");
    }
    List<Double> caps = new ArrayList<>();
    List<String> workers = parseWorkers(f.get("workers"), "workers", caps);
    Map<String, Integer> index = new HashMap<>();
    for (int i = 0; i < workers.size(); i++) {
      index.put(workers.get(i), i);
    }
    int[] nameWorker = new int[doc.groupNames.size()];
    for (int i = 0; i < nameWorker.length; i++) {
      Integer w = index.get(doc.groupNames.get(i));
      if (w == null) {
        throw new InvalidTableException(
            "key_group_worker: worker \"" + doc.groupNames.get(i) + "\" is not in workers");
      }
      nameWorker[i] = w;
    }
    int[] groups = new int[doc.groups.length];
    for (int g = 0; g < groups.length; g++) {
      groups[g] = nameWorker[doc.groups[g]];
    }
    Map<String, int[]> hot = new LinkedHashMap<>();
    Object hotKeys = f.getOrDefault("hot_keys", List.of());
    if (!(hotKeys instanceof List)) {
      throw new InvalidTableException("hot_keys must be a list");
    }
    for (Object h : (List<Object>) hotKeys) {
      Map<String, Object> entry = h instanceof Map ? (Map<String, Object>) h : Map.of();
      String key = string(entry.get("key"), "a hot key");
      if (hot.containsKey(key)) {
        throw new InvalidTableException("hot_keys: \"" + key + "\" is listed twice");
      }
      List<Map<String, Object>> targets = records(entry.get("workers"), "hot key " + key);
      int[] order = new int[targets.size()];
      double[] weights = new double[targets.size()];
      for (int i = 0; i < order.length; i++) {
        Integer w = index.get(String.valueOf(targets.get(i).get("worker")));
        if (w == null) {
          throw new InvalidTableException("hot key " + key + ": a worker is not in workers");
        }
        order[i] = w;
        weights[i] = positive(targets.get(i).get("weight"), "hot key " + key + " weight");
      }
      for (int i = 1; i < order.length; i++) { // insertion sort: stable, by weight descending
        for (int j = i; j > 0 && weights[j] > weights[j - 1]; j--) {
          double tw = weights[j];
          weights[j] = weights[j - 1];
          weights[j - 1] = tw;
          int to = order[j];
          order[j] = order[j - 1];
          order[j - 1] = to;
        }
      }
      hot.put(key, order);
    }
    double[] capacities = caps.stream().mapToDouble(Double::doubleValue).toArray();
    return new Table(stream, version, KEY_ROUTING, checksum, (int) (long) seed,
        Collections.unmodifiableList(workers), capacities, groups,
        Collections.unmodifiableMap(hot), Map.of(), null);
  }

  @SuppressWarnings("unchecked")
  private static Table assignment(Map<String, Object> f, Canonical.Result doc, String stream,
      long version, String checksum) {
    Object consumers = f.get("consumers");
    if (consumers == null) { // documents published before: the consumers as workers
      double n = integral(f.get("num_key_groups"));
      boolean noHot = f.get("hot_keys") instanceof List && ((List<?>) f.get("hot_keys")).isEmpty();
      if (n != 0 || doc.groups == null || doc.groups.length != 0 || !noHot) {
        throw new InvalidTableException("a partition_assignment table has no key groups");
      }
      consumers = f.get("workers");
    }
    List<String> names = parseWorkers(consumers, "consumers", new ArrayList<>());
    if (!(f.get("partition_consumer") instanceof Map)
        || ((Map<?, ?>) f.get("partition_consumer")).isEmpty()) {
      throw new InvalidTableException("partition_consumer: at least one partition is needed");
    }
    Map<Integer, String> assigned = new TreeMap<>();
    for (Map.Entry<String, Object> e :
        ((Map<String, Object>) f.get("partition_consumer")).entrySet()) {
      if (!e.getKey().matches("[0-9]{1,9}") || !names.contains(e.getValue())) {
        throw new InvalidTableException("partition_consumer: " + e.getKey() + " -> "
            + e.getValue() + " is not a partition of a listed consumer");
      }
      assigned.put(Integer.parseInt(e.getKey()), (String) e.getValue());
    }
    return new Table(stream, version, PARTITION_ASSIGNMENT, checksum, 0,
        Collections.unmodifiableList(names), new double[0], new int[0], Map.of(),
        Collections.unmodifiableMap(assigned), partitionLoads(f.get("planning_load")));
  }

  /** planning_load.partition_load as loads, or null when absent or not finite numbers >= 0. */
  private static double[] partitionLoads(Object planning) {
    Object loads = planning instanceof Map ? ((Map<?, ?>) planning).get("partition_load") : null;
    if (!(loads instanceof List) || ((List<?>) loads).isEmpty()) {
      return null;
    }
    List<?> values = (List<?>) loads;
    double[] out = new double[values.size()];
    for (int p = 0; p < out.length; p++) {
      if (!(values.get(p) instanceof Number)) {
        return null;
      }
      out[p] = ((Number) values.get(p)).doubleValue();
      if (!(out[p] >= 0) || Double.isInfinite(out[p])) {
        return null;
      }
    }
    return out;
  }

  static byte[] readAll(InputStream in) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    in.transferTo(out);
    return out.toByteArray();
  }

  @Override
  public String toString() {
    return stream + " v" + version + " (" + kind + ", " + checksum + ")";
  }

  static String utf8(byte[] data) {
    return new String(data, StandardCharsets.UTF_8);
  }
}
