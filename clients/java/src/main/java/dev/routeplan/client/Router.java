package dev.routeplan.client;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Routes keys as the last good key_routing table of a source says (docs/routing-spec.md §3–4).
 *
 * <pre>{@code
 * try (Router router = Router.open("https://routeplan.example", "clicks",
 *     Router.options().reloadInterval(Duration.ofSeconds(30)).token(System.getenv("TOKEN")))) {
 *   String worker = router.route("user-42");   // "w7"
 *   int partition = router.partition("user-42".getBytes(UTF_8)); // 7
 * }
 * }</pre>
 *
 * <p>A source is a table file (.json or .json.gz), a routing store directory ({@code
 * <dir>/<stream>/LATEST} naming {@code v<N>.json}, as routeplan publishes), or the routing-table
 * HTTP API at an http(s) base URL (bearer token, ETag / 304). With a reload interval a daemon
 * thread polls it; a version that is refused (not JSON, wrong checksum, wrong kind, a worker
 * without a partition for a Kafka router) or a source that is down is logged once and the last
 * good table keeps serving. {@code route} takes no lock and allocates nothing for a plain key;
 * concurrent calls are safe, and each message is counted once (a {@link LongAdder} per worker:
 * threads counting at once add to cells of their own).
 *
 * <p>The local loads (the messages this router has routed to each worker, which decide a split
 * key's worker) are counted per installed version: they start at 0 when a new version is
 * installed, and a router whose table has no split keys does not keep them
 * (docs/routing-spec.md §3).
 */
public final class Router implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(Router.class.getName());
  private static final Pattern TRAILING_INT = Pattern.compile("([0-9]+)$");

  /** How a router is opened. */
  public static final class Options {
    Duration reloadInterval;
    String token;
    Duration timeout = Duration.ofSeconds(10);
    Map<String, Integer> workerPartition = Map.of();
    boolean kafka;

    /** Poll the source this often (default: load once). */
    public Options reloadInterval(Duration interval) {
      this.reloadInterval = interval;
      return this;
    }

    /** Sent as "Authorization: Bearer TOKEN" to an HTTP source. */
    public Options token(String token) {
      this.token = token;
      return this;
    }

    /** Bounds each HTTP request (default 10 s). */
    public Options timeout(Duration timeout) {
      this.timeout = timeout;
      return this;
    }

    /** Worker → partition where a worker's name does not end with its partition. */
    public Options workerPartition(Map<String, Integer> map) {
      this.workerPartition = Map.copyOf(map);
      return this;
    }

    /** Refuse (keeping the last good one) a table whose workers have no partition each. */
    public Options kafka(boolean kafka) {
      this.kafka = kafka;
      return this;
    }
  }

  public static Options options() {
    return new Options();
  }

  /** One table compiled for routing, with its own local loads; swapped whole. A slot is a
   * worker's index in the table's workers. */
  private static final class Snapshot {
    Table table;
    int seed;
    int n;
    long m; // Lemire's fastmod multiplier for n: ceil(2^64 / n)
    int[] groupSlot; // key group -> slot; ~slot when a split key hashes to this group
    Map<String, int[]> splitSlots;
    Map<String, double[]> splitCapacities;
    String[] names; // slot -> worker
    LongAdder[] counts; // slot -> messages routed under this version; null without split keys
    int[] partition; // slot -> Kafka partition, -1: none
    int widest; // the slot of the largest partition: a topic needs partition[widest] + 1
    String noPartition; // why the table's workers have no partition each, or null
    int[] splitHashes; // the split keys' hashes, ascending (duplicates next to each other)
    byte[][] splitBytes; // their UTF-8 bytes, in the same order
    String[] splitKeys;
  }

  private volatile Snapshot snap;
  private final Object installLock = new Object();
  private final Options opts;
  private Source source;
  private String tag;
  private String rejected;
  private boolean down;
  private ScheduledExecutorService poller;

  /** A router of {@code table} alone (no source, no reload). */
  public Router(Table table, Options opts) {
    this.opts = opts;
    install(table);
  }

  public Router(Table table) {
    this(table, options());
  }

  /** Loads the table of {@code stream} from {@code location} and, with a reload interval, keeps
   * following it; throws when the first load fails. */
  public static Router open(String location, String stream, Options opts) throws IOException {
    Source source = Source.of(location, stream, opts);
    Source.Fetched fetched = source.fetch(null);
    Router router = new Router(fetched.table(), opts);
    router.source = source;
    router.tag = fetched.tag;
    if (opts.reloadInterval != null) {
      router.poller = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "routeplan-reload-" + stream);
        t.setDaemon(true);
        return t;
      });
      long ms = Math.max(1, opts.reloadInterval.toMillis());
      router.poller.scheduleWithFixedDelay(router::reload, ms, ms, TimeUnit.MILLISECONDS);
    }
    return router;
  }

  /**
   * Compiles {@code table} and swaps it in with local loads at 0; false when it is the version
   * now serving read again (same version and checksum), which changes nothing: its counts keep
   * going.
   */
  private boolean install(Table table) {
    if (!Table.KEY_ROUTING.equals(table.kind)) {
      throw new InvalidTableException(table.stream + " v" + table.version + " is a " + table.kind
          + " table, not a key_routing one");
    }
    synchronized (installLock) {
      Snapshot old = snap;
      if (old != null && old.table.version == table.version
          && old.table.checksum.equals(table.checksum)) {
        return false;
      }
      Snapshot s = new Snapshot();
      s.table = table;
      s.seed = table.seed;
      s.n = table.numKeyGroups();
      s.m = Long.divideUnsigned(-1L, s.n) + 1;
      s.names = table.workers.toArray(new String[0]);
      if (!table.hotKeys.isEmpty()) { // no decision reads the counts of a table without them
        s.counts = new LongAdder[s.names.length];
        for (int i = 0; i < s.counts.length; i++) {
          s.counts[i] = new LongAdder();
        }
      }
      s.groupSlot = table.keyGroupWorker.clone();
      s.splitSlots = new HashMap<>();
      s.splitCapacities = new HashMap<>();
      for (Map.Entry<String, int[]> e : table.hotKeys.entrySet()) {
        int[] targets = e.getValue();
        double[] caps = new double[targets.length];
        for (int i = 0; i < targets.length; i++) {
          caps[i] = table.capacities[targets[i]];
        }
        s.splitSlots.put(e.getKey(), targets);
        s.splitCapacities.put(e.getKey(), caps);
        int g = Integer.remainderUnsigned(Murmur3.hashUtf8(e.getKey(), s.seed), s.n);
        if (s.groupSlot[g] >= 0) {
          s.groupSlot[g] = ~s.groupSlot[g];
        }
      }
      List<String> split = new ArrayList<>(table.hotKeys.keySet());
      split.sort(java.util.Comparator.comparingInt(k -> Murmur3.hashUtf8(k, s.seed)));
      s.splitKeys = split.toArray(new String[0]);
      s.splitHashes = split.stream().mapToInt(k -> Murmur3.hashUtf8(k, s.seed)).toArray();
      s.splitBytes = split.stream().map(k -> k.getBytes(StandardCharsets.UTF_8))
          .toArray(byte[][]::new);
      s.partition = new int[s.names.length];
      Map<Integer, String> owner = new HashMap<>();
      for (int i = 0; i < s.names.length; i++) {
        Integer p = opts.workerPartition.get(s.names[i]);
        Matcher m = TRAILING_INT.matcher(s.names[i]);
        s.partition[i] = p != null ? p : m.find() && m.group(1).length() < 10
            ? Integer.parseInt(m.group(1)) : -1;
        if (s.partition[i] > s.partition[s.widest]) {
          s.widest = i;
        }
      }
      for (int i = 0; i < s.names.length && s.noPartition == null; i++) {
        String name = s.names[i];
        int p = s.partition[i];
        if (p < 0) {
          s.noPartition = "worker '" + name + "' has no trailing integer to use as its partition";
        } else if (owner.containsKey(p)) {
          s.noPartition = "workers '" + owner.get(p) + "' and '" + name
              + "' both map to partition " + p;
        }
        owner.put(p, name);
      }
      if (opts.kafka && s.noPartition != null) {
        throw new InvalidTableException(s.noPartition);
      }
      snap = s;
      return true;
    }
  }

  /** The table now serving. */
  public Table table() {
    return snap.table;
  }

  /** The worker of the next message of {@code key}. */
  public String route(String key) {
    Snapshot s = snap;
    return s.names[slot(s, key)];
  }

  /** The worker (slot) of the next message of {@code key}, the message counted. */
  private static int slot(Snapshot s, String key) {
    int slot = s.groupSlot[group(Murmur3.hashUtf8(key, s.seed), s.m, s.n)];
    if (slot < 0) { // a split key hashes to this group: is it one?
      int[] split = s.splitSlots.get(key);
      slot = split != null ? leastLoaded(s, split, s.splitCapacities.get(key)) : ~slot;
    }
    return counted(s, slot);
  }

  /** {@code slot}, a message routed to it counted (under a table with split keys: no decision
   * reads the counts of one without). */
  private static int counted(Snapshot s, int slot) {
    if (s.counts != null) {
      s.counts[slot].increment();
    }
    return slot;
  }

  /**
   * The key group of an unsigned 32-bit hash: {@code hash mod n}, as Lemire's fastmod computes
   * it (a multiplication instead of a division; exact for every 32-bit hash, {@code m =
   * ceil(2^64 / n)}).
   */
  static int group(int hash, long m, int n) {
    long low = m * (hash & 0xFFFFFFFFL);
    return (int) (Math.multiplyHigh(low, n) + ((low >> 63) & n)); // unsigned high 64 bits
  }

  /** The split key's candidate with the smallest local load relative to its capacity, the
   * first one on ties. */
  private static int leastLoaded(Snapshot s, int[] split, double[] capacities) {
    int best = split[0];
    double bestLoad = s.counts[best].sum() / capacities[0];
    for (int i = 1; i < split.length; i++) {
      double load = s.counts[split[i]].sum() / capacities[i];
      if (load < bestLoad) {
        best = split[i];
        bestLoad = load;
      }
    }
    return best;
  }

  /**
   * The worker of the next message whose key is the UTF-8 {@code key} (the bytes of its text,
   * docs/routing-spec.md §3); an IllegalArgumentException, the message not counted, when they
   * are not UTF-8.
   */
  public String route(byte[] key) {
    Snapshot s = snap;
    return s.names[slot(s, key)];
  }

  /** {@link #slot(Snapshot, String)} of the key whose UTF-8 bytes are {@code key}. */
  private static int slot(Snapshot s, byte[] key) {
    if (!isUtf8(key)) {
      throw new IllegalArgumentException("the key 0x" + HexFormat.of().formatHex(key, 0,
          Math.min(key.length, 40)) + " is not UTF-8 text (a key is routed by the UTF-8 bytes of "
          + "its text)");
    }
    int hash = Murmur3.hash(key, 0, key.length, s.seed);
    int slot = s.groupSlot[group(hash, s.m, s.n)];
    if (slot < 0) { // a split key hashes to this group: compare bytes, allocate nothing
      int i = Arrays.binarySearch(s.splitHashes, hash);
      while (i > 0 && s.splitHashes[i - 1] == hash) {
        i--;
      }
      slot = ~slot;
      for (; i >= 0 && i < s.splitHashes.length && s.splitHashes[i] == hash; i++) {
        if (Arrays.equals(s.splitBytes[i], key)) {
          String text = s.splitKeys[i];
          slot = leastLoaded(s, s.splitSlots.get(text), s.splitCapacities.get(text));
          break;
        }
      }
    }
    return counted(s, slot);
  }

  /**
   * Whether {@code b} is well-formed UTF-8 (no overlong form, surrogate, or code point above
   * U+10FFFF), as Python's and Go's decoders have it.
   */
  static boolean isUtf8(byte[] b) {
    for (int i = 0; i < b.length; ) {
      int c = b[i] & 0xff;
      if (c < 0x80) {
        i++;
        continue;
      }
      int more; // continuation bytes
      int lo = 0x80; // the second byte's range
      int hi = 0xbf;
      if (c >= 0xc2 && c <= 0xdf) {
        more = 1;
      } else if (c >= 0xe0 && c <= 0xef) {
        more = 2;
        lo = c == 0xe0 ? 0xa0 : lo; // not overlong
        hi = c == 0xed ? 0x9f : hi; // not a surrogate
      } else if (c >= 0xf0 && c <= 0xf4) {
        more = 3;
        lo = c == 0xf0 ? 0x90 : lo; // not overlong
        hi = c == 0xf4 ? 0x8f : hi; // not above U+10FFFF
      } else {
        return false;
      }
      if (i + more >= b.length || (b[i + 1] & 0xff) < lo || (b[i + 1] & 0xff) > hi) {
        return false;
      }
      for (int j = 2; j <= more; j++) {
        if ((b[i + j] & 0xc0) != 0x80) {
          return false;
        }
      }
      i += more + 1;
    }
    return true;
  }

  /** The Kafka partition of the next message whose key is the UTF-8 {@code key} (as {@link
   * #route(byte[])}). */
  public int partition(byte[] key) {
    Snapshot s = snap;
    if (s.noPartition != null) {
      throw new InvalidTableException(s.noPartition);
    }
    return s.partition[slot(s, key)];
  }

  /**
   * The partition of the next message of a record to {@code topic}, a topic of {@code
   * partitions} partitions ({@link RoutingPartitioner}), by one snapshot of the table: {@code
   * key} is the record's key, its text (a String) or the UTF-8 bytes of its text (a byte[]).
   * The message is counted only once it is placed: an IllegalArgumentException says why it
   * cannot be (a topic with fewer partitions than the table needs, a key of another type, bytes
   * that are not UTF-8).
   */
  int partition(String topic, int partitions, Object key) {
    return place(topic, partitions, key).partition();
  }

  /** {@link #partition(String, int, Object)} and the version of the table it routed by. */
  Placed place(String topic, int partitions, Object key) {
    Snapshot s = snap;
    if (s.noPartition != null) {
      throw new InvalidTableException(s.noPartition);
    }
    if (partitions <= s.partition[s.widest]) {
      Table t = s.table;
      throw new IllegalArgumentException("worker '" + s.names[s.widest] + "' maps to partition "
          + s.partition[s.widest] + ", which topic '" + topic + "' does not have (" + partitions
          + " partitions; table " + t.stream + " v" + t.version + ")");
    }
    if (key instanceof String) {
      return new Placed(s.partition[slot(s, (String) key)], s.table.version);
    } else if (key instanceof byte[]) {
      return new Placed(s.partition[slot(s, (byte[]) key)], s.table.version);
    }
    throw new IllegalArgumentException("a record to topic '" + topic + "' has a key of type "
        + key.getClass().getName() + ": routeplan routes a key by its text, a String (or a "
        + "byte[] of its UTF-8), whatever the key serializer writes");
  }

  /** The worker and partition of the next message of {@code key}. */
  public Routed routePartition(String key) {
    Snapshot s = snap;
    if (s.noPartition != null) {
      throw new InvalidTableException(s.noPartition);
    }
    int slot = slot(s, key);
    return new Routed(s.names[slot], s.partition[slot]);
  }

  /** A message's worker and partition. */
  public record Routed(String worker, int partition) {}

  /** A record's partition and the version of the table that placed it. */
  record Placed(int partition, long version) {}

  /** The fewest partitions a topic needs for the table now serving (its largest + 1). */
  public int partitionsNeeded() {
    Snapshot s = snap;
    if (s.noPartition != null) {
      throw new InvalidTableException(s.noPartition);
    }
    return s.partition[s.widest] + 1;
  }

  /** The worker needing the largest partition. */
  String widestWorker() {
    Snapshot s = snap;
    return s.names[s.widest];
  }

  /**
   * Messages this router has routed to each worker of the table in force since that version was
   * installed; empty under a table without split keys (no decision reads them, so none are
   * kept).
   */
  public Map<String, Long> localLoads() {
    Snapshot s = snap;
    Map<String, Long> loads = new HashMap<>();
    if (s.counts == null) {
      return loads;
    }
    for (int i = 0; i < s.names.length; i++) {
      loads.put(s.names[i], s.counts[i].sum());
    }
    return loads;
  }

  /**
   * Polls the source once; true when a new table now serves (not when the version serving is
   * read again). Never throws for the source's
   * sake: a refused version or an outage is logged once (WARNING) and the last good table
   * keeps serving.
   */
  public synchronized boolean reload() {
    if (source == null) {
      return false;
    }
    Table old = snap.table;
    Source.Fetched fetched;
    try {
      fetched = source.fetch(tag);
    } catch (InvalidTableException e) {
      reject(e.getMessage(), e);
      return false;
    } catch (IOException | RuntimeException e) {
      if (!down) {
        LOG.log(Level.WARNING, "stream {0}: source unavailable, keeps serving v{1}: {2}",
            old.stream, old.version, e.toString());
        down = true;
      }
      return false;
    }
    if (down) {
      LOG.log(Level.INFO, "stream {0}: source available again (serving v{1})", old.stream,
          old.version);
      down = false;
    }
    if (fetched == null) {
      return false;
    }
    tag = fetched.tag; // a bad version is not fetched again
    boolean changed;
    try {
      changed = install(fetched.table());
    } catch (InvalidTableException e) {
      reject(fetched.tag, e);
      return false;
    }
    if (rejected != null) {
      LOG.log(Level.INFO, "stream {0}: v{1} is good, after rejecting {2}", old.stream,
          snap.table.version, rejected);
      rejected = null;
    }
    if (changed) { // the same version read again changes nothing
      LOG.log(Level.INFO, "stream {0}: now serving v{1} (was v{2})", old.stream,
          snap.table.version, old.version);
    }
    return changed;
  }

  private void reject(String what, Exception e) {
    if (!what.equals(rejected)) {
      Table t = snap.table;
      LOG.log(Level.WARNING, "stream {0}: rejected {1}, keeps serving v{2}: {3}", t.stream, what,
          t.version, e.getMessage());
      rejected = what;
    }
  }

  /** Stops following the source; the current table keeps serving. */
  @Override
  public void close() {
    if (poller != null) {
      poller.shutdownNow();
      poller = null;
    }
  }
}
