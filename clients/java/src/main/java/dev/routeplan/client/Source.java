package dev.routeplan.client;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.regex.Pattern;
import java.util.zip.GZIPInputStream;

/** Where a router reads a stream's table: a file, a routing store directory, the HTTP API. */
abstract class Source {
  /** The name rule (schemas/name.schema.json). */
  static final Pattern NAME = Pattern.compile("[A-Za-z0-9_][A-Za-z0-9._-]{0,127}");

  private static final Pattern VERSION_FILE = Pattern.compile("v[1-9][0-9]*\\.json");

  /** One version's document as the source delivered it, not yet verified. */
  static final class Fetched {
    final String tag; // names this version at the source: file name, or the HTTP ETag
    final String where;
    final byte[] body;

    Fetched(String tag, String where, byte[] body) {
      this.tag = tag;
      this.where = where;
      this.body = body;
    }

    Table table() {
      try {
        return Table.parse(body);
      } catch (InvalidTableException e) {
        throw new InvalidTableException(where + ": refused: " + e.getMessage(), e);
      }
    }
  }

  /** The current version, or null when its tag is {@code known}. */
  abstract Fetched fetch(String known) throws IOException;

  static Source of(String location, String stream, Router.Options opts) throws IOException {
    boolean file = !location.startsWith("http") && Files.isRegularFile(Path.of(location));
    if (!file && !NAME.matcher(stream).matches()) {
      throw new IllegalArgumentException("invalid stream name '" + stream + "'");
    }
    if (location.startsWith("http://") || location.startsWith("https://")) {
      String base = location.replaceAll("/+$", "");
      return new Http(URI.create(base + "/streams/"
          + URLEncoder.encode(stream, StandardCharsets.UTF_8) + "/latest"), opts);
    }
    if (location.contains("://") && !location.startsWith("file://")) {
      throw new IllegalArgumentException(location + ": the Java client reads a table file, a "
          + "routing store directory or the HTTP API (http(s)://); serve an object store's "
          + "tables with `routeplan serve`");
    }
    Path path = Path.of(location.startsWith("file://") ? URI.create(location).getPath() : location);
    if (Files.isDirectory(path)) {
      return new Store(path.resolve(stream));
    }
    if (!Files.isRegularFile(path)) {
      throw new java.nio.file.NoSuchFileException(location);
    }
    return new File(path);
  }

  static byte[] read(Path path) throws IOException {
    try (InputStream raw = Files.newInputStream(path)) {
      InputStream in = path.toString().endsWith(".gz") ? new GZIPInputStream(raw) : raw;
      return in.readNBytes(Table.MAX_BYTES + 1);
    }
  }

  /** One table file, read again when its size or modification time changes. */
  static final class File extends Source {
    private final Path path;

    File(Path path) {
      this.path = path;
    }

    @Override
    Fetched fetch(String known) throws IOException {
      BasicFileAttributes attrs = Files.readAttributes(path, BasicFileAttributes.class);
      String tag = attrs.size() + "@" + attrs.lastModifiedTime().toMillis();
      return tag.equals(known) ? null : new Fetched(tag, path.toString(), read(path));
    }
  }

  /** A stream's folder of a routing store: LATEST names v&lt;N&gt;.json. */
  static final class Store extends Source {
    private final Path dir;

    Store(Path dir) {
      this.dir = dir;
    }

    @Override
    Fetched fetch(String known) throws IOException {
      String name = new String(Files.readAllBytes(dir.resolve("LATEST")),
          StandardCharsets.UTF_8).strip();
      if (!VERSION_FILE.matcher(name).matches()) {
        throw new InvalidTableException(dir + "/LATEST names no version file: '"
            + (name.length() > 40 ? name.substring(0, 40) : name) + "'");
      }
      if (name.equals(known)) {
        return null;
      }
      Path file = dir.resolve(name);
      return new Fetched(name, file.toString(), read(file));
    }
  }

  /** The routing-table HTTP API: GET {base}/streams/{stream}/latest with If-None-Match. */
  static final class Http extends Source {
    private final URI uri;
    private final Router.Options opts;
    private final HttpClient client;

    Http(URI uri, Router.Options opts) {
      this.uri = uri;
      this.opts = opts;
      this.client = HttpClient.newBuilder().connectTimeout(opts.timeout).build();
    }

    @Override
    Fetched fetch(String known) throws IOException {
      HttpRequest.Builder request = HttpRequest.newBuilder(uri).timeout(opts.timeout).GET();
      if (known != null) {
        request.header("If-None-Match", known);
      }
      if (opts.token != null) {
        request.header("Authorization", "Bearer " + opts.token);
      }
      HttpResponse<InputStream> response;
      try {
        response = client.send(request.build(), HttpResponse.BodyHandlers.ofInputStream());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted", e);
      }
      if (response.statusCode() == 304) {
        response.body().close();
        return null;
      }
      byte[] body;
      try (InputStream in = response.body()) {
        body = in.readNBytes(Table.MAX_BYTES + 1);
      }
      if (response.statusCode() != 200) {
        String text = new String(body, 0, Math.min(body.length, 200), StandardCharsets.UTF_8);
        throw new IOException("GET " + uri + ": HTTP " + response.statusCode() + ": " + text);
      }
      String tag = response.headers().firstValue("ETag").orElseGet(() -> "\"" + sha256(body)
          + "\"");
      return tag.equals(known) ? null : new Fetched(tag, uri.toString(), body);
    }

    private static String sha256(byte[] data) {
      try {
        return "sha256:" + HexFormat.of().formatHex(
            MessageDigest.getInstance("SHA-256").digest(data));
      } catch (NoSuchAlgorithmException e) {
        throw new IllegalStateException(e);
      }
    }
  }
}
