package dev.routeplan.client;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A warm loop (README, Performance): nanoseconds per call of Murmur3 of a key, route(key),
 * partition(key bytes) and route of a split key, and the bytes each call allocates; then route
 * of a key and of a split key from as many threads as there are processors, at once.
 *
 * <pre>
 * cd clients/java && java -cp 'target/classes:target/test-classes:target/lib/*' \
 *     dev.routeplan.client.RouteBench
 * </pre>
 */
public final class RouteBench {
  static final int KEYS = 4096;

  static String[] keys() {
    String[] keys = new String[KEYS];
    for (int i = 0; i < KEYS; i++) {
      keys[i] = "user-" + (i * 7919 % 100000);
    }
    return keys;
  }

  static Router router() throws IOException {
    return new Router(Table.readFile(Path.of("../../schemas/vectors/tables/kr-seedmax.json")));
  }

  /** Bytes the current thread allocated so far (HotSpot). */
  static long allocated() {
    return ((com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean())
        .getThreadAllocatedBytes(Thread.currentThread().getId());
  }

  interface Call {
    long run(int i);
  }

  static volatile long sink;

  static void measure(String name, Call call, int rounds) {
    long s = 0;
    for (int i = 0; i < 2_000_000; i++) { // warm up: let the JIT compile it
      s += call.run(i);
    }
    double best = Double.MAX_VALUE;
    long bytes = 0;
    for (int r = 0; r < rounds; r++) {
      int n = 10_000_000;
      long before = allocated();
      long t0 = System.nanoTime();
      for (int i = 0; i < n; i++) {
        s += call.run(i);
      }
      long t1 = System.nanoTime();
      bytes = allocated() - before;
      best = Math.min(best, (t1 - t0) / (double) n);
    }
    sink = s;
    System.out.printf("%-24s %6.1f ns/call  %.3f bytes/call%n", name, best,
        bytes / 10_000_000.0);
  }

  /** {@code call} on {@code threads} threads at once, 10M calls each, through one router: wall
   * time per call (best of {@code rounds}). */
  static void measureParallel(String name, Call call, int threads, int rounds) throws Exception {
    int n = 10_000_000;
    double best = Double.MAX_VALUE;
    for (int r = 0; r <= rounds; r++) { // round 0 warms up
      java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(threads + 1);
      List<Thread> running = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int offset = t * 1013;
        Thread thread = new Thread(() -> {
          long s = 0;
          try {
            start.await();
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
          for (int i = 0; i < n; i++) {
            s += call.run(i + offset);
          }
          sink = s;
        });
        thread.start();
        running.add(thread);
      }
      start.await();
      long t0 = System.nanoTime();
      for (Thread thread : running) {
        thread.join();
      }
      if (r > 0) {
        best = Math.min(best, (System.nanoTime() - t0) / ((double) n * threads));
      }
    }
    System.out.printf("%-24s %6.1f ns/call  (%d threads, wall time per call)%n", name, best,
        threads);
  }

  public static void main(String[] args) throws Exception {
    String[] keys = keys();
    byte[][] raw = new byte[KEYS][];
    for (int i = 0; i < KEYS; i++) {
      raw[i] = keys[i].getBytes(StandardCharsets.UTF_8);
    }
    Router router = router();
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
    measure("murmur3(key)", i -> Murmur3.hashUtf8(keys[i & (KEYS - 1)], 42), rounds);
    measure("route(key)", i -> router.route(keys[i & (KEYS - 1)]).length(), rounds);
    measure("partition(key bytes)", i -> router.partition(raw[i & (KEYS - 1)]), rounds);
    measure("route(split key)", i -> router.route("hot-8").length(), rounds);
    int threads = Runtime.getRuntime().availableProcessors();
    measureParallel("route(key), threads", i -> router.route(keys[i & (KEYS - 1)]).length(),
        threads, rounds);
    measureParallel("route(split key), threads", i -> router.route("hot-8").length(), threads,
        rounds);
  }
}
