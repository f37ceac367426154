/*
** edn_utf8.c — UTF-8 sequences and hex digits, as the reader and the
** printers need them: validating a sequence (RFC 3629: no overlongs, no
** surrogates, nothing past U+10FFFF), decoding and encoding a code point,
** reading four hex digits (\uXXXX). Pure functions over bytes; no state.
*/
#include "edn.h"

int ednUtf8Len(const unsigned char *z, int n, int i) {
  unsigned c = z[i];
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    return (i + 1 < n && (z[i + 1] & 0xC0) == 0x80) ? 2 : 0;
  }
  if (c >= 0xE0 && c <= 0xEF) {
    unsigned lo = 0x80, hi = 0xBF;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
    if (i + 2 >= n) return 0;
    if (z[i + 1] < lo || z[i + 1] > hi || (z[i + 2] & 0xC0) != 0x80) return 0;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    unsigned lo = 0x80, hi = 0xBF;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
    if (i + 3 >= n) return 0;
    if (z[i + 1] < lo || z[i + 1] > hi || (z[i + 2] & 0xC0) != 0x80
     || (z[i + 3] & 0xC0) != 0x80) return 0;
    return 4;
  }
  return 0;
}

int ednUtf8Decode(const unsigned char *z, int L) {
  switch (L) {
    case 1: return z[0];
    case 2: return (z[0] & 0x1F) << 6 | (z[1] & 0x3F);
    case 3: return (z[0] & 0x0F) << 12 | (z[1] & 0x3F) << 6 | (z[2] & 0x3F);
    default: return (z[0] & 0x07) << 18 | (z[1] & 0x3F) << 12 | (z[2] & 0x3F) << 6 | (z[3] & 0x3F);
  }
}

int ednUtf8Encode(unsigned cp, char *zOut) {
  if (cp < 0x80) { zOut[0] = (char)cp; return 1; }
  if (cp < 0x800) {
    zOut[0] = (char)(0xC0 | cp >> 6);
    zOut[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    zOut[0] = (char)(0xE0 | cp >> 12);
    zOut[1] = (char)(0x80 | (cp >> 6 & 0x3F));
    zOut[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  zOut[0] = (char)(0xF0 | cp >> 18);
  zOut[1] = (char)(0x80 | (cp >> 12 & 0x3F));
  zOut[2] = (char)(0x80 | (cp >> 6 & 0x3F));
  zOut[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

int ednHexDigit(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int ednHex4(const unsigned char *z) {
  int k, v = 0;
  for (k = 0; k < 4; k++) {
    int d = ednHexDigit(z[k]);
    if (d < 0) return -1;
    v = v << 4 | d;
  }
  return v;
}

