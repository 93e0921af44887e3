package dev.routeplan.client;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.Writer;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * {@code java -jar routeplan-client.jar --table FILE [--partitions N] < keys}: routes keys read
 * on stdin, one per line, and prints each message's worker (with --partitions N:
 * "worker&lt;TAB&gt;partition"); for a partition_assignment table each line is a partition and
 * the output its consumer. routeplan's {@code routeplan route} in Java (docs/routing-spec.md §6).
 */
public final class RouteTool {
  private RouteTool() {}

  public static void main(String[] args) throws IOException {
    try (Writer out = new BufferedWriter(new OutputStreamWriter(System.out,
        StandardCharsets.UTF_8), 1 << 16)) {
      run(args, System.in, out);
    } catch (IllegalArgumentException | NoSuchFileException e) {
      PrintStream err = System.err;
      err.println("route: error: " + (e instanceof NoSuchFileException
          ? e.getMessage() + ": no such file" : e.getMessage()));
      System.exit(1);
    }
  }

  /** What the tool prints for {@code stdin} into {@code out}; IllegalArgumentException when the
   * table is refused or the input is bad. */
  public static void run(String[] args, InputStream stdin, Writer out) throws IOException {
    String table = null;
    int partitions = 0;
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--table") && i + 1 < args.length) {
        table = args[++i];
      } else if (args[i].equals("--partitions") && i + 1 < args.length) {
        partitions = Integer.parseInt(args[++i]);
        if (partitions < 1) {
          throw new IllegalArgumentException("--partitions must be >= 1");
        }
      } else {
        throw new IllegalArgumentException("usage: route --table FILE [--partitions N] < keys");
      }
    }
    if (table == null) {
      throw new IllegalArgumentException("usage: route --table FILE [--partitions N] < keys");
    }
    Table t = Table.readFile(Path.of(table));
    String text;
    try {
      text = StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(stdin.readAllBytes())).toString();
    } catch (CharacterCodingException e) {
      throw new IllegalArgumentException("stdin: not UTF-8");
    }
    String[] keys = text.isEmpty() ? new String[0]
        : (text.endsWith("\n") ? text.substring(0, text.length() - 1) : text).split("\n", -1);
    if (Table.PARTITION_ASSIGNMENT.equals(t.kind)) {
      if (partitions > 0) {
        throw new IllegalArgumentException("--partitions is for key_routing tables");
      }
      for (String key : keys) {
        String consumer = key.matches("[0-9]{1,9}")
            ? t.partitionConsumer.get(Integer.parseInt(key)) : null;
        if (consumer == null) {
          throw new IllegalArgumentException("stdin: the table assigns no partition '" + key
              + "'");
        }
        out.write(consumer);
        out.write('\n');
      }
      return;
    }
    Router router = new Router(t, Router.options().kafka(partitions > 0));
    if (partitions > 0 && router.partitionsNeeded() > partitions) {
      throw new IllegalArgumentException("the table needs more than " + partitions
          + " partitions: worker '" + router.widestWorker() + "' is partition "
          + (router.partitionsNeeded() - 1));
    }
    for (String key : keys) {
      if (partitions == 0) {
        out.write(router.route(key));
      } else {
        Router.Routed routed = router.routePartition(key);
        out.write(routed.worker());
        out.write('\t');
        out.write(Integer.toString(routed.partition()));
      }
      out.write('\n');
    }
  }
}
