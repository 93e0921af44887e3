package dev.routeplan.client;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.io.schubfach.DoubleToDecimal;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * RFC 8785 (JSON Canonicalization Scheme) form of a JSON text, and the spelling of documents
 * published before it (Python's {@code json.dumps(sort_keys=True, separators=(",", ":"),
 * ensure_ascii=False)}), docs/routing-spec.md §2. A member name given twice keeps its last value,
 * as Python's json does. While canonicalising the top-level object it keeps the members a reader
 * needs ({@link Result#fields}: plain Java values) and {@code key_group_worker} as indices into
 * its distinct names.
 */
public final class Canonical {
  /** How deeply arrays and objects may nest. */
  public static final int MAX_DEPTH = 64;

  private static final JsonFactory FACTORY =
      JsonFactory.builder()
          .streamReadConstraints(
              StreamReadConstraints.builder()
                  .maxNestingDepth(MAX_DEPTH)
                  .maxStringLength(Integer.MAX_VALUE)
                  .maxDocumentLength(Table.MAX_BYTES)
                  .build())
          .build();

  private static final Comparator<String> CODE_POINTS =
      (a, b) -> {
        int i = 0;
        int j = 0;
        while (i < a.length() && j < b.length()) {
          int x = a.codePointAt(i);
          int y = b.codePointAt(j);
          if (x != y) {
            return Integer.compare(x, y);
          }
          i += Character.charCount(x);
          j += Character.charCount(y);
        }
        return Integer.compare(a.length() - i, b.length() - j);
      };

  /** What one pass gives. */
  public static final class Result {
    /** The canonical UTF-8 bytes. */
    public final byte[] bytes;

    /** The kept top-level members (Map, List, String, Double, BigInteger, Boolean, null). */
    public final Map<String, Object> fields;

    /** key_group_worker's distinct names, and each group's index into them (null: absent). */
    public final List<String> groupNames;

    public final int[] groups;

    Result(byte[] bytes, Map<String, Object> fields, List<String> groupNames, int[] groups) {
      this.bytes = bytes;
      this.fields = fields;
      this.groupNames = groupNames;
      this.groups = groups;
    }
  }

  private final JsonParser parser;
  private final boolean legacy;
  private final Set<String> skip;
  private final Set<String> keep;
  private final Map<String, Object> fields = new HashMap<>();
  private List<String> groupNames;
  private int[] groups;

  private Canonical(byte[] data, boolean legacy, Set<String> skip, Set<String> keep)
      throws IOException {
    this.parser = FACTORY.createParser(data);
    this.legacy = legacy;
    this.skip = skip;
    this.keep = keep;
  }

  /** The RFC 8785 form of {@code data}; IllegalArgumentException when it is not JSON. */
  public static byte[] canonical(byte[] data) {
    return run(data, false, Set.of(), Set.of()).bytes;
  }

  /**
   * One pass over {@code data}: its canonical form (JCS, or with {@code legacy} the old
   * spelling) without the top-level members in {@code skip}, and the top-level members in
   * {@code keep}.
   */
  static Result run(byte[] data, boolean legacy, Set<String> skip, Set<String> keep) {
    try {
      Canonical c = new Canonical(data, legacy, skip, keep);
      ByteArrayOutputStream out = new ByteArrayOutputStream(Math.max(32, data.length));
      JsonToken first = c.parser.nextToken();
      if (first == null) {
        throw new IllegalArgumentException("not JSON: empty");
      }
      c.value(first, out, 0, false);
      if (c.parser.nextToken() != null) {
        throw new IllegalArgumentException("not JSON: data after the JSON value");
      }
      return new Result(out.toByteArray(), c.fields, c.groupNames, c.groups);
    } catch (IOException | RuntimeException e) {
      if (e instanceof IllegalArgumentException) {
        throw (IllegalArgumentException) e;
      }
      throw new IllegalArgumentException("not JSON: " + firstLine(e.getMessage()), e);
    }
  }

  private static String firstLine(String message) {
    return message == null ? "" : message.lines().findFirst().orElse("");
  }

  /** Writes the value that starts at {@code token}; returns it as a Java value when {@code
   * build}. */
  private Object value(JsonToken token, ByteArrayOutputStream out, int depth, boolean build)
      throws IOException {
    switch (token) {
      case START_OBJECT:
        return object(out, depth + 1, build);
      case START_ARRAY:
        List<Object> list = build ? new ArrayList<>() : null;
        out.write('[');
        boolean first = true;
        for (JsonToken t = parser.nextToken(); t != JsonToken.END_ARRAY; t = parser.nextToken()) {
          if (!first) {
            out.write(',');
          }
          first = false;
          Object item = value(t, out, depth + 1, build);
          if (build) {
            list.add(item);
          }
        }
        out.write(']');
        return list;
      case VALUE_STRING:
        String s = text();
        writeString(out, s);
        return s;
      case VALUE_NUMBER_INT:
        String digits = parser.getText();
        if (legacy) {
          BigInteger exact = new BigInteger(digits);
          write(out, exact.toString());
          return exact;
        }
        double d = Double.parseDouble(digits);
        write(out, numberText(d));
        return build ? (Object) new BigInteger(digits) : null;
      case VALUE_NUMBER_FLOAT:
        double x = Double.parseDouble(parser.getText());
        if (Double.isInfinite(x)) {
          throw new IllegalArgumentException(parser.getText() + " is not a finite double");
        }
        write(out, legacy ? pythonRepr(x) : numberText(x));
        return x;
      case VALUE_TRUE:
        write(out, "true");
        return Boolean.TRUE;
      case VALUE_FALSE:
        write(out, "false");
        return Boolean.FALSE;
      case VALUE_NULL:
        write(out, "null");
        return null;
      default:
        throw new IllegalArgumentException("not JSON: unexpected " + token);
    }
  }

  private String text() throws IOException {
    String s = parser.getText();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isSurrogate(c)) {
        if (Character.isHighSurrogate(c) && i + 1 < s.length()
            && Character.isLowSurrogate(s.charAt(i + 1))) {
          i++;
        } else {
          throw new IllegalArgumentException("not JSON text: a lone surrogate");
        }
      }
    }
    return s;
  }

  private Object object(ByteArrayOutputStream out, int depth, boolean build) throws IOException {
    boolean top = depth == 1;
    Map<String, byte[]> members = new LinkedHashMap<>();
    Map<String, Object> built = build ? new LinkedHashMap<>() : null;
    for (JsonToken t = parser.nextToken(); t != JsonToken.END_OBJECT; t = parser.nextToken()) {
      String name = text();
      JsonToken valueToken = parser.nextToken();
      ByteArrayOutputStream value = new ByteArrayOutputStream();
      Object kept;
      if (top && name.equals("key_group_worker") && valueToken == JsonToken.START_ARRAY) {
        kept = groups(value);
      } else {
        kept = value(valueToken, value, depth, build || (top && keep.contains(name)));
      }
      if (top && keep.contains(name)) {
        fields.put(name, kept);
      }
      if (build) {
        built.put(name, kept);
      }
      if (!(top && skip.contains(name))) {
        members.remove(name); // the last value counts
        members.put(name, value.toByteArray());
      }
    }
    List<String> names = new ArrayList<>(members.keySet());
    names.sort(legacy ? CODE_POINTS : Comparator.naturalOrder()); // String: UTF-16 code units
    out.write('{');
    for (int i = 0; i < names.size(); i++) {
      if (i > 0) {
        out.write(',');
      }
      writeString(out, names.get(i));
      out.write(':');
      out.write(members.get(names.get(i)));
    }
    out.write('}');
    return built;
  }

  /** key_group_worker: written, and kept as indices into its distinct names. */
  private Object groups(ByteArrayOutputStream out) throws IOException {
    Map<String, Integer> index = new HashMap<>();
    List<String> names = new ArrayList<>();
    int[] found = new int[1024];
    int n = 0;
    out.write('[');
    for (JsonToken t = parser.nextToken(); t != JsonToken.END_ARRAY; t = parser.nextToken()) {
      if (n > 0) {
        out.write(',');
      }
      if (t != JsonToken.VALUE_STRING) {
        value(t, out, 2, false);
        names = null; // not a list of names: refused by the reader
        continue;
      }
      String name = text();
      writeString(out, name);
      if (names != null) {
        Integer i = index.get(name);
        if (i == null) {
          i = names.size();
          index.put(name, i);
          names.add(name);
        }
        if (n == found.length) {
          found = java.util.Arrays.copyOf(found, n * 2);
        }
        found[n] = i;
      }
      n++;
    }
    out.write(']');
    groupNames = names;
    groups = names == null ? null : java.util.Arrays.copyOf(found, n);
    return null;
  }

  private static void write(ByteArrayOutputStream out, String ascii) {
    for (int i = 0; i < ascii.length(); i++) {
      out.write(ascii.charAt(i));
    }
  }

  /** Writes {@code s} as JCS (and Python's ensure_ascii=False) escapes it, in UTF-8. */
  static void writeString(ByteArrayOutputStream out, String s) {
    out.write('"');
    int start = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c >= 0x20 && c != '"' && c != '\\') {
        continue;
      }
      out.writeBytes(s.substring(start, i).getBytes(StandardCharsets.UTF_8));
      switch (c) {
        case '"':
          write(out, "\\\"");
          break;
        case '\\':
          write(out, "\\\\");
          break;
        case '\b':
          write(out, "\\b");
          break;
        case '\f':
          write(out, "\\f");
          break;
        case '\n':
          write(out, "\\n");
          break;
        case '\r':
          write(out, "\\r");
          break;
        case '\t':
          write(out, "\\t");
          break;
        default:
          write(out, String.format("\\u%04x", (int) c));
      }
      start = i + 1;
    }
    out.writeBytes(s.substring(start).getBytes(StandardCharsets.UTF_8));
    out.write('"');
  }

  /** The shortest digits of x > 0 that read back as x (Schubfach), and n: x = 0.digits × 10^n. */
  private static Object[] shortest(double x) {
    String s = DoubleToDecimal.toString(x); // Java 19's Double.toString: "4.5", "1.0E-7"
    int e = s.indexOf('E');
    int exponent = e < 0 ? 0 : Integer.parseInt(s.substring(e + 1));
    String mantissa = e < 0 ? s : s.substring(0, e);
    int dot = mantissa.indexOf('.');
    String digits = mantissa.substring(0, dot) + mantissa.substring(dot + 1);
    int n = dot + exponent;
    int lead = 0;
    while (lead < digits.length() - 1 && digits.charAt(lead) == '0') {
      lead++;
    }
    digits = digits.substring(lead);
    n -= lead;
    int end = digits.length();
    while (end > 1 && digits.charAt(end - 1) == '0') {
      end--;
    }
    digits = digits.substring(0, end);
    if (digits.length() == 2) { // Java writes at least two digits: one may read back as x too
      int d0 = digits.charAt(0) - '0';
      boolean up = digits.charAt(1) >= '5';
      String near = up ? oneDigit(d0 + 1, n, x) : oneDigit(d0, n, x);
      String far = up ? oneDigit(d0, n, x) : oneDigit(d0 + 1, n, x);
      String one = near != null ? near : far;
      if (one != null) {
        return new Object[] {one.equals("10") ? "1" : one, one.equals("10") ? n + 1 : n};
      }
    }
    return new Object[] {digits, n};
  }

  /** The digit d (10: "10") as 0.d × 10^n, when it reads back as x. */
  private static String oneDigit(int d, int n, double x) {
    String s = Integer.toString(d);
    return d > 0 && Double.parseDouble("0." + s + "E" + n) == x ? s : null;
  }

  /** ECMAScript's Number.prototype.toString of x (RFC 8785 §3.2.2.3). */
  public static String numberText(double x) {
    if (Double.isNaN(x) || Double.isInfinite(x)) {
      throw new IllegalArgumentException(x + " is not a JSON number");
    }
    if (x == 0) {
      return "0";
    }
    String sign = x < 0 ? "-" : "";
    Object[] sn = shortest(Math.abs(x));
    String s = (String) sn[0];
    int n = (Integer) sn[1];
    int k = s.length();
    if (k <= n && n <= 21) {
      return sign + s + "0".repeat(n - k);
    }
    if (0 < n && n <= 21) {
      return sign + s.substring(0, n) + "." + s.substring(n);
    }
    if (-6 < n && n <= 0) {
      return sign + "0." + "0".repeat(-n) + s;
    }
    String mantissa = k == 1 ? s : s.charAt(0) + "." + s.substring(1);
    int e = n - 1;
    return sign + mantissa + "e" + (e >= 0 ? "+" : "-") + Math.abs(e);
  }

  /** Python's repr of the double x (the spelling of documents published before JCS). */
  static String pythonRepr(double x) {
    String sign = (Double.doubleToRawLongBits(x) < 0) ? "-" : "";
    if (x == 0) {
      return sign + "0.0";
    }
    Object[] sn = shortest(Math.abs(x));
    String s = (String) sn[0];
    int n = (Integer) sn[1];
    int k = s.length();
    if (-4 < n && n <= 16) {
      if (n <= 0) {
        return sign + "0." + "0".repeat(-n) + s;
      }
      if (n < k) {
        return sign + s.substring(0, n) + "." + s.substring(n);
      }
      return sign + s + "0".repeat(n - k) + ".0";
    }
    String mantissa = k == 1 ? s : s.charAt(0) + "." + s.substring(1);
    int e = n - 1;
    return String.format("%s%se%s%02d", sign, mantissa, e >= 0 ? "+" : "-", Math.abs(e));
  }
}
