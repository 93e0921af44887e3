package dev.routeplan.client;

/**
 * MurmurHash3 x86 32-bit (Austin Appleby), the hash every routeplan client shares
 * (docs/routing-spec.md §3): of bytes, or of a string's UTF-8 encoding computed on the fly,
 * allocating nothing.
 */
public final class Murmur3 {
  private static final int C1 = 0xcc9e2d51;
  private static final int C2 = 0x1b873593;

  private Murmur3() {}

  /** The hash of {@code data[offset, offset + length)} (an unsigned 32-bit value in an int). */
  public static int hash(byte[] data, int offset, int length, int seed) {
    int h = seed;
    int i = offset;
    int end = offset + (length & ~3);
    for (; i < end; i += 4) {
      int k = (data[i] & 0xff) | (data[i + 1] & 0xff) << 8 | (data[i + 2] & 0xff) << 16
          | (data[i + 3] & 0xff) << 24;
      h = mixH(h, k);
    }
    int k = 0;
    switch (length & 3) {
      case 3:
        k ^= (data[i + 2] & 0xff) << 16;
        // fall through
      case 2:
        k ^= (data[i + 1] & 0xff) << 8;
        // fall through
      case 1:
        k ^= data[i] & 0xff;
        h ^= mixK(k);
        break;
      default:
        break;
    }
    return fmix(h, length);
  }

  /** The hash of the UTF-8 bytes of {@code s} (a lone surrogate is encoded as '?', as Java's
   * encoder does). */
  public static int hashUtf8(String s, int seed) {
    int n = s.length();
    int h = seed;
    int i = 0;
    for (; i + 4 <= n; i += 4) { // ASCII (most keys): a character is a byte
      int c0 = s.charAt(i);
      int c1 = s.charAt(i + 1);
      int c2 = s.charAt(i + 2);
      int c3 = s.charAt(i + 3);
      if ((c0 | c1 | c2 | c3) >= 0x80) {
        return hashUtf8Any(s, seed);
      }
      h = mixH(h, c0 | c1 << 8 | c2 << 16 | c3 << 24);
    }
    int k = 0;
    for (int j = n - 1; j >= i; j--) {
      int c = s.charAt(j);
      if (c >= 0x80) {
        return hashUtf8Any(s, seed);
      }
      k = k << 8 | c;
    }
    if (i < n) {
      h ^= mixK(k);
    }
    return fmix(h, n);
  }

  /** {@link #hashUtf8(String, int)} of any text, one UTF-8 byte at a time. */
  static int hashUtf8Any(CharSequence s, int seed) {
    int h = seed;
    int k = 0; // bytes not yet mixed, little-endian
    int shift = 0; // 8 × their count
    int length = 0;
    int n = s.length();
    for (int i = 0; i < n; i++) {
      int c = s.charAt(i);
      int bytes;
      int packed; // up to 4 bytes, first in the low byte
      if (c < 0x80) {
        if (shift == 0 && i + 3 < n) { // four ASCII characters at once
          int c1 = s.charAt(i + 1);
          int c2 = s.charAt(i + 2);
          int c3 = s.charAt(i + 3);
          if ((c1 | c2 | c3) < 0x80) {
            h = mixH(h, c | c1 << 8 | c2 << 16 | c3 << 24);
            length += 4;
            i += 3;
            continue;
          }
        }
        packed = c;
        bytes = 1;
      } else if (c < 0x800) {
        packed = (0xc0 | c >> 6) | (0x80 | (c & 0x3f)) << 8;
        bytes = 2;
      } else if (Character.isSurrogate((char) c)) {
        int cp;
        if (Character.isHighSurrogate((char) c) && i + 1 < n
            && Character.isLowSurrogate(s.charAt(i + 1))) {
          i++;
          cp = Character.toCodePoint((char) c, s.charAt(i));
          packed = (0xf0 | cp >> 18) | (0x80 | (cp >> 12 & 0x3f)) << 8
              | (0x80 | (cp >> 6 & 0x3f)) << 16 | (0x80 | (cp & 0x3f)) << 24;
          bytes = 4;
        } else {
          packed = '?';
          bytes = 1;
        }
      } else {
        packed = (0xe0 | c >> 12) | (0x80 | (c >> 6 & 0x3f)) << 8 | (0x80 | (c & 0x3f)) << 16;
        bytes = 3;
      }
      length += bytes;
      for (int b = 0; b < bytes; b++) {
        k |= (packed >>> (8 * b) & 0xff) << shift;
        shift += 8;
        if (shift == 32) {
          h = mixH(h, k);
          k = 0;
          shift = 0;
        }
      }
    }
    if (shift != 0) {
      h ^= mixK(k);
    }
    return fmix(h, length);
  }

  private static int mixK(int k) {
    k *= C1;
    k = Integer.rotateLeft(k, 15);
    return k * C2;
  }

  private static int mixH(int h, int k) {
    h ^= mixK(k);
    h = Integer.rotateLeft(h, 13);
    return h * 5 + 0xe6546b64;
  }

  private static int fmix(int h, int length) {
    h ^= length;
    h ^= h >>> 16;
    h *= 0x85ebca6b;
    h ^= h >>> 13;
    h *= 0xc2b2ae35;
    h ^= h >>> 16;
    return h;
  }
}
