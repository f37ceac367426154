/*
** edn_time.c — #inst and #uuid literals: RFC 3339 timestamps <-> microseconds
** since the Unix epoch (UTC), and UUID text <-> 16 bytes.
**
** HOW IT WORKS: calendar dates convert to a day count with Howard Hinnant's
** days_from_civil / civil_from_days algorithms (proleptic Gregorian, exact
** for negative days), so instants before 1970 format correctly. The parser
** accepts the grammar of Clojure's #inst reader (which Datomic uses):
**   yyyy[-mm[-dd[Thh[:mm[:ss[.fraction]]]]]][Z | (+|-)hh:mm]
** with any number of fraction digits (digits past the sixth are truncated:
** the store keeps microseconds), 't'/'z' in either case, and ss = 60 only
** when mm = 59 (a leap second, counted as the next minute's first second,
** as Clojure does).
*/
#include <string.h>
#include "edn.h"

/* Days since 1970-01-01 of the proleptic Gregorian date y-m-d. */
static sqlite3_int64 ednDaysFromCivil(sqlite3_int64 y, int m, int d) {
  sqlite3_int64 era, yoe, doy, doe;
  y -= m <= 2;
  era = (y >= 0 ? y : y - 399) / 400;
  yoe = y - era * 400;
  doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static void ednCivilFromDays(sqlite3_int64 z, sqlite3_int64 *pY, int *pM, int *pD) {
  sqlite3_int64 era, doe, yoe, y, doy, mp;
  z += 719468;
  era = (z >= 0 ? z : z - 146096) / 146097;
  doe = z - era * 146097;
  yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = yoe + era * 400;
  doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  mp = (5 * doy + 2) / 153;
  *pD = (int)(doy - (153 * mp + 2) / 5 + 1);
  *pM = (int)(mp < 10 ? mp + 3 : mp - 9);
  *pY = y + (*pM <= 2);
}

void ednFormatInstant(sqlite3_int64 us, char *zBuf) {
  /* Floor division so that -1 µs is 1969-12-31T23:59:59.999999Z. */
  sqlite3_int64 secs = us / 1000000, frac = us % 1000000, days, sod, y;
  int m, d;
  if (frac < 0) { frac += 1000000; secs -= 1; }
  days = secs / 86400;
  sod = secs % 86400;
  if (sod < 0) { sod += 86400; days -= 1; }
  ednCivilFromDays(days, &y, &m, &d);
  if (y >= 0 && y <= 9999) {
    /* Digit by digit: every edn_t formats its instant (the report), and
    ** sqlite3_snprintf took ~2k instructions of a one-datom call's ~200k. */
    static const char zPat[] = "0000-00-00T00:00:00.000000Z";
    const int aPos[] = { 3, 6, 9, 12, 15, 18, 25 }, aWidth[] = { 4, 2, 2, 2, 2, 2, 6 };
    sqlite3_int64 aVal[7];
    aVal[0] = y; aVal[1] = m; aVal[2] = d; aVal[3] = sod / 3600; aVal[4] = sod / 60 % 60;
    aVal[5] = sod % 60; aVal[6] = frac;
    memcpy(zBuf, zPat, sizeof zPat);
    for (int k = 0; k < 7; k++) {
      for (int j = 0; j < aWidth[k]; j++) {
        zBuf[aPos[k] - j] = (char)('0' + aVal[k] % 10);
        aVal[k] /= 10;
      }
    }
    return;
  }
  sqlite3_snprintf(40, zBuf, "%s%04lld-%02d-%02dT%02d:%02d:%02d.%06dZ",
                   y < 0 ? "-" : "", y < 0 ? -y : y, m, d,
                   (int)(sod / 3600), (int)(sod / 60 % 60), (int)(sod % 60), (int)frac);
}

/* Reads exactly nDigit decimal digits at z[*pi]; 0 on success. */
static int ednDigits(const char *z, int n, int *pi, int nDigit, int *pVal) {
  int v = 0, k;
  if (*pi + nDigit > n) return 1;
  for (k = 0; k < nDigit; k++) {
    char c = z[*pi + k];
    if (c < '0' || c > '9') return 1;
    v = v * 10 + (c - '0');
  }
  *pi += nDigit;
  *pVal = v;
  return 0;
}

static int ednDaysInMonth(int y, int m) {
  static const int aDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return 29;
  return aDays[m - 1];
}

int ednParseInstant(const char *z, int n, sqlite3_int64 *pUs) {
  int i = 0, y, mo = 1, d = 1, h = 0, mi = 0, s = 0, us = 0, offMin = 0;
  sqlite3_int64 t;
  if (z == NULL || n < 4) return 1;
  if (ednDigits(z, n, &i, 4, &y)) return 1;
  if (i < n && z[i] == '-') {
    i++;
    if (ednDigits(z, n, &i, 2, &mo)) return 1;
    if (i < n && z[i] == '-') {
      i++;
      if (ednDigits(z, n, &i, 2, &d)) return 1;
      if (i < n && (z[i] == 'T' || z[i] == 't')) {
        i++;
        if (ednDigits(z, n, &i, 2, &h)) return 1;
        if (i < n && z[i] == ':') {
          i++;
          if (ednDigits(z, n, &i, 2, &mi)) return 1;
          if (i < n && z[i] == ':') {
            i++;
            if (ednDigits(z, n, &i, 2, &s)) return 1;
            if (i < n && z[i] == '.') {
              int nFrac = 0;
              i++;
              while (i < n && z[i] >= '0' && z[i] <= '9') {
                if (nFrac < 6) us = us * 10 + (z[i] - '0');
                nFrac++;
                i++;
              }
              if (nFrac == 0) return 1;
              for (; nFrac < 6; nFrac++) us *= 10;
            }
          }
        }
      }
    }
  }
  if (i < n) {
    if (z[i] == 'Z' || z[i] == 'z') {
      i++;
    } else if (z[i] == '+' || z[i] == '-') {
      int sign = z[i] == '-' ? -1 : 1, oh, om;
      i++;
      if (ednDigits(z, n, &i, 2, &oh)) return 1;
      if (i >= n || z[i] != ':') return 1;
      i++;
      if (ednDigits(z, n, &i, 2, &om)) return 1;
      if (oh > 23 || om > 59) return 1;
      offMin = sign * (oh * 60 + om);
    } else {
      return 1;
    }
  }
  if (i != n) return 1;
  if (mo < 1 || mo > 12) return 1;
  if (d < 1 || d > ednDaysInMonth(y, mo)) return 1;
  if (h > 23 || mi > 59) return 1;
  if (s > 60 || (s == 60 && mi != 59)) return 1;
  t = ednDaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - (sqlite3_int64)offMin * 60;
  *pUs = t * 1000000 + us;
  return 0;
}

void ednFormatUuid(const unsigned char *a, char *zBuf) {
  static const char aHex[] = "0123456789abcdef";
  int i, j = 0;
  for (i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) zBuf[j++] = '-';
    zBuf[j++] = aHex[a[i] >> 4];
    zBuf[j++] = aHex[a[i] & 15];
  }
  zBuf[j] = 0;
}

static int ednHexVal(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int ednParseUuid(const char *z, int n, unsigned char *a) {
  int i, k = 0;
  unsigned char aOut[16];
  if (z == NULL || n != 36) return 1;
  for (i = 0; i < 36;) {
    int hi, lo;
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (z[i] != '-') return 1;
      i++;
      continue;
    }
    hi = ednHexVal(z[i]);
    lo = ednHexVal(z[i + 1]);
    if (hi < 0 || lo < 0) return 1;
    aOut[k++] = (unsigned char)(hi << 4 | lo);
    i += 2;
  }
  memcpy(a, aOut, 16);
  return 0;
}
