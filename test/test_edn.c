/*
** test_edn.c — Check suite for the EDN reader, printers, instants and uuids
** (ext/edn_*.c). Table-driven: input text → printed EDN (all top-level forms
** joined by one space) or → "!the whole error message" with its line and column.
** Expected values are written by hand from the EDN spec, the brief and the
** peer faults B01, B02, B03, B33, B34 (/work/shared/acceptance).
*/
#include <locale.h>
#include <math.h>
#include <time.h>
#include "testutil.h"
#include "edn.h"

typedef struct ReadCase {
  const char *zIn;
  int nIn;            /* -1: strlen(zIn) */
  const char *zOut;   /* printed forms, or "!" and the whole error message */
  int line, col;      /* error position (0: not checked) */
} ReadCase;

/* Reads every form of z[0..n) and returns the printed forms joined by a
** space, or "!<message>@<line>:<col>" (malloc'd, caller frees). */
static char *readPrint(const char *z, int n, int *pLine, int *pCol) {
  EdnArena arena;
  EdnValue **aForm = NULL;
  int nForm = 0, rc, i;
  EdnError err;
  char *zRet;
  ednArenaInit(&arena);
  rc = ednReadAll(&arena, z, n, &aForm, &nForm, &err);
  if (rc != SQLITE_OK) {
    zRet = malloc(strlen(err.zMsg) + 2);
    sprintf(zRet, "!%s", err.zMsg);
    *pLine = err.line;
    *pCol = err.col;
  } else {
    sqlite3_str *pStr = sqlite3_str_new(NULL);
    char *zOut;
    for (i = 0; i < nForm; i++) {
      if (i) sqlite3_str_appendchar(pStr, 1, ' ');
      ednPrint(pStr, aForm[i]);
    }
    zOut = sqlite3_str_finish(pStr);
    zRet = strdup(zOut ? zOut : "");
    sqlite3_free(zOut);
    *pLine = *pCol = 0;
  }
  ednArenaReset(&arena);
  return zRet;
}

static void checkCases(const ReadCase *a, int n) {
  int i;
  for (i = 0; i < n; i++) {
    int line, col;
    int nIn = a[i].nIn < 0 ? (int)strlen(a[i].zIn) : a[i].nIn;
    char *zGot = readPrint(a[i].zIn, nIn, &line, &col);
    if (a[i].zOut[0] == '!') {
      ck_assert_msg(strcmp(zGot, a[i].zOut) == 0,
                    "case %d [%s]: expected error \"%s\", got \"%s\"",
                    i, a[i].zIn, a[i].zOut + 1, zGot);
      {
        ck_assert_msg(line == a[i].line && col == a[i].col,
                      "case %d [%s]: error at %d:%d, expected %d:%d (%s)",
                      i, a[i].zIn, line, col, a[i].line, a[i].col, zGot);
      }
    } else {
      ck_assert_msg(strcmp(zGot, a[i].zOut) == 0, "case %d [%s]: expected \"%s\", got \"%s\"",
                    i, a[i].zIn, a[i].zOut, zGot);
    }
    free(zGot);
  }
}

#define NCASE(a) ((int)(sizeof(a) / sizeof((a)[0])))

START_TEST(test_scalars) {
  static const ReadCase a[] = {
    {"nil", -1, "nil", 0, 0},
    {"true false", -1, "true false", 0, 0},
    {"  nil  ", -1, "nil", 0, 0},
    {"nil?", -1, "nil?", 0, 0},                   /* a symbol, not nil */
    {"truex", -1, "truex", 0, 0},
    /* strings and escapes */
    {"\"abc\"", -1, "\"abc\"", 0, 0},
    {"\"\"", -1, "\"\"", 0, 0},
    {"\"a\\tb\\rc\\nd\\\\e\\\"f\\bg\\fh\"", -1, "\"a\\tb\\rc\\nd\\\\e\\\"f\\bg\\fh\"", 0, 0},
    {"\"\\u00e9\\u00C9\"", -1, "\"\xC3\xA9\xC3\x89\"", 0, 0},
    {"\"\\u20AC\"", -1, "\"\xE2\x82\xAC\"", 0, 0},
    {"\"\\uD83D\\uDE00\"", -1, "\"\xF0\x9F\x98\x80\"", 0, 0},
    {"\"a\\u0000b\"", -1, "\"a\\u0000b\"", 0, 0},
    {"\"line1\nline2\"", -1, "\"line1\\nline2\"", 0, 0},
    {"\"\xF0\x9F\x98\x80 ok\"", -1, "\"\xF0\x9F\x98\x80 ok\"", 0, 0},
    {"\"\\uD800\"", -1, "!lone surrogate \\uD800 in string", 1, 2},
    {"\"\\uDE00\"", -1, "!lone surrogate \\uDE00 in string", 1, 2},
    {"\"\\uD800\\u0041\"", -1, "!lone surrogate \\uD800 in string", 1, 2},
    {"\"x\\uD83D\"", -1, "!lone surrogate \\uD83D in string", 1, 3},
    {"\"\\u12\"", -1, "!invalid \\u escape in string (4 hex digits expected)", 1, 2},
    {"\"\\q\"", -1, "!invalid escape \\q in string", 1, 2},
    {"\"abc", -1, "!unterminated string", 1, 1},
    {"[1 \"ab\\\"]", -1, "!unterminated string", 1, 4},
    {"\"\xFF\"", -1, "!invalid UTF-8 in string", 1, 2},
    {"\"\xC0\xAF\"", -1, "!invalid UTF-8 in string", 1, 2},             /* overlong '/' */
    {"\"\xED\xA0\x80\"", -1, "!invalid UTF-8 in string", 1, 2},         /* encoded surrogate */
    {"\"\xF4\x90\x80\x80\"", -1, "!invalid UTF-8 in string", 1, 2},     /* past U+10FFFF */
    {"\"\xC3\"", -1, "!invalid UTF-8 in string", 1, 2},                 /* truncated */
    /* characters */
    {"\\c", -1, "\\c", 0, 0},
    {"\\newline \\space \\tab \\return \\backspace \\formfeed", -1,
     "\\newline \\space \\tab \\return \\backspace \\formfeed", 0, 0},
    {"\\u00E9", -1, "\\\xC3\xA9", 0, 0},
    {"\\u0041", -1, "\\A", 0, 0},
    {"\\u", -1, "\\u", 0, 0},
    {"\\\xC3\xA9", -1, "\\\xC3\xA9", 0, 0},
    {"\\\xF0\x9F\x98\x80", -1, "\\\xF0\x9F\x98\x80", 0, 0},
    {"[\\a \\b]", -1, "[\\a \\b]", 0, 0},
    {"[\\a\\b]", -1, "[\\a \\b]", 0, 0},
    {"\\( \\) \\\" \\\\ \\;", -1, "\\( \\) \\\" \\\\ \\;", 0, 0},
    {"\\1", -1, "\\1", 0, 0},
    {"[\\, \\,]", -1, "[\\, \\,]", 0, 0},
    {"\\u0000", -1, "\\u0000", 0, 0},
    {"\\ ", -1, "!a backslash followed by whitespace is not a character", 1, 1},
    {"[\\ ]", -1, "!a backslash followed by whitespace is not a character", 1, 2},
    {"\\\n", -1, "!a backslash followed by whitespace is not a character", 1, 1},
    {"\\", -1, "!backslash at end of input", 1, 1},
    {"\\abc", -1, "!unsupported character \\abc", 1, 1},
    {"\\uD800", -1, "!invalid character \\uD800 (a surrogate)", 1, 1},
    {"\\u00E9x", -1, "!unsupported character \\u00E9x", 1, 1},
    {"\\a@", -1, "!invalid character literal", 1, 1},
  };
  checkCases(a, NCASE(a));
}
END_TEST

START_TEST(test_numbers) {
  static const ReadCase a[] = {
    {"0", -1, "0", 0, 0},
    {"-0", -1, "0", 0, 0},
    {"+7", -1, "7", 0, 0},
    {"42 -17", -1, "42 -17", 0, 0},
    {"9223372036854775807", -1, "9223372036854775807", 0, 0},
    {"-9223372036854775808", -1, "-9223372036854775808", 0, 0},
    {"9223372036854775808", -1, "!integer 9223372036854775808 out of range", 1, 1},
    {"-9223372036854775809", -1, "!integer -9223372036854775809 out of range", 1, 1},
    {"[1 99999999999999999999]", -1, "!integer 99999999999999999999 out of range", 1, 4},
    {"0644", -1, "!invalid number 0644 (leading zeros are not allowed)", 1, 1},
    {"-01", -1, "!invalid number -01 (leading zeros are not allowed)", 1, 1},
    {"00.5", -1, "!invalid number 00.5 (leading zeros are not allowed)", 1, 1},
    {"12N", -1, "!arbitrary-precision literal 12N is not supported", 1, 1},
    {"99999999999999999999999N", -1, "!arbitrary-precision literal 99999999999999999999999N is not supported", 1, 1},
    {"1.5M", -1, "!arbitrary-precision literal 1.5M is not supported", 1, 1},
    {"0x1F", -1, "!invalid number 0x1F", 1, 1},
    {"1/2", -1, "!invalid number 1/2", 1, 1},
    {"12abc", -1, "!invalid number 12abc", 1, 1},
    {"1e", -1, "!invalid number 1e", 1, 1},
    {"1.0", -1, "1.0", 0, 0},
    {"2.0 -3.5", -1, "2.0 -3.5", 0, 0},
    {"1.", -1, "1.0", 0, 0},
    {"1e308", -1, "1e+308", 0, 0},
    {"5e-324", -1, "5e-324", 0, 0},
    {"-0.0", -1, "-0.0", 0, 0},
    {"0.0", -1, "0.0", 0, 0},
    {"0.1", -1, "0.1", 0, 0},
    {"1.5e3 1E2 2.5e-3", -1, "1500.0 100.0 0.0025", 0, 0},
    {"0.30000000000000004", -1, "0.30000000000000004", 0, 0},
    {"0.3333333333333333", -1, "0.3333333333333333", 0, 0},
    {"1500.5", -1, "1500.5", 0, 0},
    {"9007199254740993", -1, "9007199254740993", 0, 0},
    {"##Inf ##-Inf ##NaN", -1, "##Inf ##-Inf ##NaN", 0, 0},
    {"##Foo", -1, "!unknown symbolic value ##Foo", 1, 1},
    {"1e309", -1, "!double 1e309 out of range", 1, 1},
    {".5", -1, "!invalid symbol .5", 1, 1},
  };
  checkCases(a, NCASE(a));
}
END_TEST

/* B02: keywords and symbols with special characters. */
START_TEST(test_keywords_symbols) {
  static const ReadCase a[] = {
    {":a->b/c?", -1, ":a->b/c?", 0, 0},
    {":my-app.core/first-name", -1, ":my-app.core/first-name", 0, 0},
    {":foo_bar :x.y/z-1", -1, ":foo_bar :x.y/z-1", 0, 0},
    {":db.part/user :<> :a*b!", -1, ":db.part/user :<> :a*b!", 0, 0},
    {":caf\xC3\xA9", -1, ":caf\xC3\xA9", 0, 0},
    {":foo/", -1, "!invalid keyword :foo/: empty name", 1, 1},
    {":/x", -1, "!invalid keyword :/x: empty namespace", 1, 1},
    {":", -1, "!invalid keyword :: empty keyword", 1, 1},
    {"::a", -1, "!invalid keyword ::a: auto-resolved keyword (::) is not EDN", 1, 1},
    {":a/b/c", -1, "!invalid keyword :a/b/c: more than one '/'", 1, 1},
    {"[{:db/id \"y\" :foo/ 1}]", -1, "!invalid keyword :foo/: empty name", 1, 14},
    {"+ - . ... ?x _ $ % clojure.string/blank?", -1, "+ - . ... ?x _ $ % clojure.string/blank?", 0, 0},
    {"-1 +1 -a +b - +", -1, "-1 1 -a +b - +", 0, 0},
    {"[[-1 +1 -a +b - + .]]", -1, "[[-1 1 -a +b - + .]]", 0, 0},
    {"[- +] {:a -} {:b +} (- ?v 1) (+ ?v -1)", -1, "[- +] {:a -} {:b +} (- ?v 1) (+ ?v -1)", 0, 0},
    {"/ a/b a.b/c-d *ns*/x", -1, "/ a/b a.b/c-d *ns*/x", 0, 0},
    {"a#b a'b a:b", -1, "a#b a'b a:b", 0, 0},
    {"a/", -1, "!invalid symbol a/: empty name", 1, 1},
    {"a/b/c", -1, "!invalid symbol a/b/c: more than one '/'", 1, 1},
    {"-1a", -1, "!invalid number -1a", 1, 1},
    {"a@", -1, "!unexpected character '@'", 1, 2},
    {"@x", -1, "!unexpected character '@'", 1, 1},
    {"'x", -1, "!unexpected character '''", 1, 1},
    {"a:", -1, "!invalid symbol a:: a name may not end with ':'", 1, 1},
  };
  checkCases(a, NCASE(a));
}
END_TEST

START_TEST(test_collections) {
  static const ReadCase a[] = {
    {"()", -1, "()", 0, 0},
    {"[]", -1, "[]", 0, 0},
    {"{}", -1, "{}", 0, 0},
    {"#{}", -1, "#{}", 0, 0},
    {"(1 (2 [3 #{4}]))", -1, "(1 (2 [3 #{4}]))", 0, 0},
    {"{:a 1, :b [2 3]}", -1, "{:a 1 :b [2 3]}", 0, 0},
    {"[1,2,,3] ; comment\n4", -1, "[1 2 3] 4", 0, 0},
    {"[1;c\n2]", -1, "[1 2]", 0, 0},
    {"#{1 1.0 \"1\" :1}", -1, "#{1 1.0 \"1\" :1}", 0, 0},
    {"{[1 2] :v {:k 1} :w}", -1, "{[1 2] :v {:k 1} :w}", 0, 0},
    {"{:p/name 1 :p/name 2}", -1, "!duplicate key :p/name in map", 1, 12},
    {"[{:db/id \"b\" :p/name \"y\" :p/name \"z\"}]", -1, "!duplicate key :p/name in map", 1, 26},
    {"#{1 1}", -1, "!duplicate element 1 in set", 1, 5},
    {"#{[1 2] (1 2)}", -1, "#{[1 2] (1 2)}", 0, 0},   /* list and vector differ */
    {"#{[1 2] [1 2]}", -1, "!duplicate element [1 2] in set", 1, 9},
    {"#{#{1 2} #{2 1}}", -1, "!duplicate element #{2 1} in set", 1, 10},
    {"{{:a 1 :b 2} 1 {:b 2 :a 1} 2}", -1, "!duplicate key {:b 2 :a 1} in map", 1, 16},
    {"#{0.0 -0.0}", -1, "!duplicate element -0.0 in set", 1, 7},
    {"#{\"a\" \"a\"}", -1, "!duplicate element \"a\" in set", 1, 7},
    {"{:a}", -1, "!map literal has an odd number of forms (1)", 1, 1},
    {"]", -1, "!unexpected ]", 1, 1},
    {"1 2 )", -1, "!unexpected )", 1, 5},
    {"[1 2", -1, "!unterminated vector", 1, 1},
    {"(1", -1, "!unterminated list", 1, 1},
    {"{:a 1", -1, "!unterminated map", 1, 1},
    {"#{1", -1, "!unterminated set", 1, 1},
    {"[1 2)", -1, "!unexpected ) (the vector opened at line 1 col 1 is not closed)", 1, 5},
    {"x\ny\n  ]", -1, "!unexpected ]", 3, 3},
    {"\"\xC3\xA9\" ]", -1, "!unexpected ]", 1, 5},
    {"[\"a\nb\" \xC3\xA9 ]]", -1, "!unexpected ]", 2, 7},
  };
  checkCases(a, NCASE(a));
}
END_TEST

START_TEST(test_tags) {
  static const ReadCase a[] = {
    {"#inst \"2018-01-01T11:00:00Z\"", -1, "#inst \"2018-01-01T11:00:00.000000Z\"", 0, 0},
    {"#inst \"2018-01-01T12:00:00+01:00\"", -1, "#inst \"2018-01-01T11:00:00.000000Z\"", 0, 0},
    {"#inst \"2018-01-01T11:00:00.000Z\"", -1, "#inst \"2018-01-01T11:00:00.000000Z\"", 0, 0},
    {"#inst\"2018-01-01\"", -1, "#inst \"2018-01-01T00:00:00.000000Z\"", 0, 0},
    {"#inst \"not-a-date\"", -1, "!invalid #inst \"not-a-date\" (expected RFC 3339, e.g. 2018-01-01T11:00:00Z)", 1, 7},
    {"#inst 5", -1, "!#inst needs a string", 1, 1},
    {"#uuid \"FF62D552-6569-4d1b-b667-04703041dfc4\"", -1,
     "#uuid \"ff62d552-6569-4d1b-b667-04703041dfc4\"", 0, 0},
    {"#uuid \"ff62d552-6569-4d1b-b667-04703041dfc\"", -1, "!invalid #uuid \"ff62d552-6569-4d1b-b667-04703041dfc\"", 1, 7},
    {"#uuid \"ff62d552x6569-4d1b-b667-04703041dfc4\"", -1, "!invalid #uuid \"ff62d552x6569-4d1b-b667-04703041dfc4\"", 1, 7},
    {"#db/id [:db.part/user -1]", -1, "#db/id [:db.part/user -1]", 0, 0},
    {"#db/id[:db.part/db]", -1, "#db/id [:db.part/db]", 0, 0},
    {"#bytes \"00ff\"", -1, "#bytes \"00ff\"", 0, 0},
    {"#bytes \"00FFab\" #bytes \"\"", -1, "#bytes \"00ffab\" #bytes \"\"", 0, 0},
    {"[1 #bytes \"0\"]", -1, "!invalid #bytes: an even number of hex digits is needed", 1, 11},
    {"#bytes \"zz\"", -1, "!invalid #bytes: \"zz\" is not hex", 1, 8},
    {"#bytes 12", -1, "!#bytes needs a string of hex digits", 1, 1},
    {"[#_ #bytes \"0\"]", -1, "[]", 0, 0},
    {"#a #b 1", -1, "#a #b 1", 0, 0},
    {"#foo", -1, "!tag #foo has no value", 1, 1},
    {"[#foo]", -1, "!tag #foo has no value", 1, 2},
    {"#", -1, "!# at end of input", 1, 1},
  };
  checkCases(a, NCASE(a));
}
END_TEST

/* Clojure's reader macros are not EDN: edn-format's spec has # followed by
** {, _, # (##Inf) or "a symbol starting with an alphabetic character" (a
** tag). Every other dispatch is a read error at the '#' naming the
** characters, never a tag #= or #- whose value fails later. */
START_TEST(test_reader_macros) {
  static const ReadCase a[] = {
    {"#=(+ 1 2)", -1, "!#= is a Clojure reader macro (read-time eval), not EDN", 1, 1},
    {"[1 #=(java.lang.System/exit 0)]", -1, "!#= is a Clojure reader macro (read-time eval), not EDN", 1, 4},
    {"#?(:clj 1 :cljs 2)", -1, "!#? is a Clojure reader conditional, not EDN", 1, 1},
    {"[#?@(:clj [1 2])]", -1, "!#?@ is a Clojure reader conditional, not EDN", 1, 2},
    {"#'foo", -1, "!#' is a Clojure reader macro (var quote), not EDN", 1, 1},
    {"#(inc %)", -1, "!#( is a Clojure reader macro (anonymous function), not EDN", 1, 1},
    {"#\"re\"", -1, "!#\" is a Clojure regular expression literal, not EDN: make the pattern with (re-pattern \"...\")", 1, 1},
    {"#^String x", -1, "!#^ is a Clojure reader macro (metadata), not EDN", 1, 1},
    {"#:a{:b 1}", -1, "!#: is a Clojure namespaced map, not EDN", 1, 1},
    {"#::{:b 1}", -1, "!#: is a Clojure namespaced map, not EDN", 1, 1},
    {"#!/bin/sh", -1, "!#! is a Clojure reader macro (comment), not EDN", 1, 1},
    {"#<Object>", -1, "!#< is a Clojure unreadable form, not EDN", 1, 1},
    /* feature expressions and tags that start with no letter */
    {"#-clj 1", -1, "!#- is not EDN: a tag starts with a letter (#inst, #my/tag)", 1, 1},
    {"#+clj 1", -1, "!#+ is not EDN: a tag starts with a letter (#inst, #my/tag)", 1, 1},
    {"{:a #.foo}", -1, "!#. is not EDN: a tag starts with a letter (#inst, #my/tag)", 1, 5},
    {"#*x 1", -1, "!#* is not EDN: a tag starts with a letter (#inst, #my/tag)", 1, 1},
    {"#/x 1", -1, "!#/ is not EDN: a tag starts with a letter (#inst, #my/tag)", 1, 1},
    {"#1 2", -1, "!#1 is not EDN: a tag starts with a letter (#inst, #my/tag)", 1, 1},
    {"#>x 1", -1, "!#> is not EDN: a tag starts with a letter (#inst, #my/tag)", 1, 1},
    {"#$x 1", -1, "!#$ is not EDN: a tag starts with a letter (#inst, #my/tag)", 1, 1},
    {"#%x 1", -1, "!#% is not EDN: a tag starts with a letter (#inst, #my/tag)", 1, 1},
    {"#&x 1", -1, "!#& is not EDN: a tag starts with a letter (#inst, #my/tag)", 1, 1},
    {"# x", -1, "!# followed by whitespace is not EDN dispatch", 1, 1},
    {"#\n1", -1, "!# followed by whitespace is not EDN dispatch", 1, 1},
    {"#\x01", -1, "!# followed by control character 0x01 is not EDN dispatch", 1, 1},
    {"\n  #= 1", -1, "!#= is a Clojure reader macro (read-time eval), not EDN", 2, 3},
    /* EDN's own dispatch keeps working */
    {"#{1 2}", -1, "#{1 2}", 0, 0},
    {"[#_ 1 2]", -1, "[2]", 0, 0},
    {"##Inf", -1, "##Inf", 0, 0},
    {"#inst \"2020-01-01T00:00:00Z\"", -1, "#inst \"2020-01-01T00:00:00.000000Z\"", 0, 0},
    {"#db/id [:db.part/user -1]", -1, "#db/id [:db.part/user -1]", 0, 0},
    {"#my/tag 1 #x 2 #Point [1 2] #a.b/c-d? 3", -1, "#my/tag 1 #x 2 #Point [1 2] #a.b/c-d? 3", 0, 0},
  };
  checkCases(a, NCASE(a));
}
END_TEST

/* B01: discard, comments, commas. */
START_TEST(test_discard) {
  static const ReadCase a[] = {
    {"[1 #_ 2 3]", -1, "[1 3]", 0, 0},
    {"[1 #_2 3]", -1, "[1 3]", 0, 0},
    {"[1 #_2]", -1, "[1]", 0, 0},
    {"[1 #_ 2 ]", -1, "[1]", 0, 0},
    {"#_ #_ a b c", -1, "c", 0, 0},
    {"#_#_ a b c", -1, "c", 0, 0},
    {"[#_ #inst \"not-a-date\" 1]", -1, "[1]", 0, 0},
    {"#_{:a 1 :a 2} 5", -1, "5", 0, 0},
    {"{:a 1 #_ :b}", -1, "{:a 1}", 0, 0},
    {"#_ [[:db/add \"d\" :p/name \"v\"]]", -1, "", 0, 0},
    {"#_ ; comment\n x y", -1, "y", 0, 0},
    {"[{:db/id \"a\", :p/name \"x\" ; comment to end of line\n"
     "  #_#_ :p/age 41\n"
     "  :p/nick #_ #inst \"not-a-date\" \"new\",,,}]", -1,
     "[{:db/id \"a\" :p/name \"x\" :p/nick \"new\"}]", 0, 0},
    {"[1 #_]", -1, "!#_ with nothing to discard", 1, 4},
    {"[[:db/add \"c\" :p/name \"w\" #_]]", -1, "!#_ with nothing to discard", 1, 27},
    {"#_", -1, "!#_ with nothing to discard", 1, 1},
    {"#_ #_ a", -1, "!#_ with nothing to discard", 1, 1},
    {"[#_ #inst 5]", -1, "[]", 0, 0},
    {"#_ [1 2", -1, "!unterminated vector", 1, 4},
    {"", -1, "", 0, 0},
    {" ; only a comment", -1, "", 0, 0},
    {",,, \t\r\n", -1, "", 0, 0},
  };
  checkCases(a, NCASE(a));
}
END_TEST

/* B33: NUL bytes and invalid UTF-8 outside strings. */
START_TEST(test_nul_utf8) {
  static const ReadCase a[] = {
    {"[{:p/name \"ok\"}]\0[{:p/name \"smuggled\"}]", 39, "!NUL byte outside a string", 1, 17},
    {"[1 \0]", 5, "!NUL byte outside a string", 1, 4},
    {"\"a\0b\"", 5, "\"a\\u0000b\"", 0, 0},
    {"1 ;c\0\n", 6, "!NUL byte outside a string", 1, 5},
    {"ab\0", 3, "!NUL byte outside a string", 1, 3},
    {"#\0", 2, "!NUL byte outside a string", 1, 2},
    {"[{:p/name \"\xFF\"}]", -1, "!invalid UTF-8 in string", 1, 12},
    {"a\xFF", -1, "!invalid UTF-8", 1, 2},
    {"; \xFF\n1", -1, "!invalid UTF-8", 1, 3},
    {"\x01", -1, "!unexpected control character 0x01", 1, 1},
    {"ab\x7F", -1, "!unexpected control character 0x7F", 1, 3},
    {"\xEF\xBB\xBF[1]", -1, "[1]", 0, 0},
    {"[1 \xEF\xBB\xBF:a]", -1, "!unexpected byte order mark (U+FEFF)", 1, 4},
    {"[\"\\uD83D\\uDE00\"]", -1, "[\"\xF0\x9F\x98\x80\"]", 0, 0},
    {"[[\\newline \\space \\u00E9 \\a]]", -1, "[[\\newline \\space \\\xC3\xA9 \\a]]", 0, 0},
    {"[[\\ ]]", -1, "!a backslash followed by whitespace is not a character", 1, 3},
  };
  checkCases(a, NCASE(a));
}
END_TEST

/* B03: the integer inputs of the peer fault. */
START_TEST(test_b03) {
  static const ReadCase a[] = {
    {"[{:db/id \"a\" :n/v [9223372036854775807 -9223372036854775808 0 -0 +7]}]", -1,
     "[{:db/id \"a\" :n/v [9223372036854775807 -9223372036854775808 0 0 7]}]", 0, 0},
    {"[{:db/id \"b\" :n/v 9223372036854775808}]", -1, "!integer 9223372036854775808 out of range", 1, 19},
    {"[{:db/id \"c\" :n/v -9223372036854775809}]", -1, "!integer -9223372036854775809 out of range", 1, 19},
    {"[{:db/id \"d\" :n/v 0644}]", -1, "!invalid number 0644 (leading zeros are not allowed)", 1, 19},
    {"[{:db/id \"e\" :n/v 12N}]", -1, "!arbitrary-precision literal 12N is not supported", 1, 19},
    {"[{:db/id \"f\" :n/v 1.0}]", -1, "[{:db/id \"f\" :n/v 1.0}]", 0, 0},
    {"[{:db/id \"g\" :n/v 99999999999999999999999N}]", -1, "!arbitrary-precision literal 99999999999999999999999N is not supported", 1, 19},
    {"[{:db/id \"a\" :m/d [-0.0 1e308 ##Inf ##-Inf 5e-324]}]", -1,
     "[{:db/id \"a\" :m/d [-0.0 1e+308 ##Inf ##-Inf 5e-324]}]", 0, 0},
  };
  checkCases(a, NCASE(a));
}
END_TEST

/* The surrogate pair must become exactly F0 9F 98 80; \u0000 stays a NUL
** byte counted in n. */
START_TEST(test_string_bytes) {
  EdnArena arena;
  EdnValue *p = NULL;
  EdnError err;
  ednArenaInit(&arena);
  ck_assert_int_eq(ednReadOne(&arena, "\"\\uD83D\\uDE00\"", -1, &p, &err), SQLITE_OK);
  ck_assert_int_eq(p->type, EDN_STRING);
  ck_assert_int_eq(p->u.s.n, 4);
  ck_assert(memcmp(p->u.s.z, "\xF0\x9F\x98\x80", 5) == 0);
  ck_assert_int_eq(ednReadOne(&arena, "\"a\\u0000b\"", -1, &p, &err), SQLITE_OK);
  ck_assert_int_eq(p->u.s.n, 3);
  ck_assert(memcmp(p->u.s.z, "a\0b", 4) == 0);
  ck_assert_int_eq(ednReadOne(&arena, "\\u00E9", -1, &p, &err), SQLITE_OK);
  ck_assert_int_eq(p->type, EDN_CHAR);
  ck_assert_int_eq(p->u.i, 0xE9);
  ck_assert_int_eq(ednReadOne(&arena, "\\\xF0\x9F\x98\x80", -1, &p, &err), SQLITE_OK);
  ck_assert_int_eq(p->u.i, 0x1F600);
  ck_assert_int_eq(ednReadOne(&arena, "#db/id [:db.part/user -1]", -1, &p, &err), SQLITE_OK);
  ck_assert_int_eq(p->type, EDN_TAGGED);
  ck_assert_str_eq(p->u.t.zTag, "db/id");
  ck_assert_int_eq(p->u.t.p->type, EDN_VECTOR);
  ck_assert_int_eq(ednReadOne(&arena, "#bytes \"00fF\"", -1, &p, &err), SQLITE_OK);
  ck_assert_int_eq(p->type, EDN_TAGGED);
  ck_assert_str_eq(p->u.t.zTag, "bytes");
  ck_assert_int_eq(p->u.t.p->type, EDN_STRING);
  ck_assert_int_eq(p->u.t.p->u.s.n, 2);
  ck_assert(memcmp(p->u.t.p->u.s.z, "\x00\xff", 2) == 0);
  ck_assert_int_eq(ednReadOne(&arena, "-0.0", -1, &p, &err), SQLITE_OK);
  ck_assert(p->type == EDN_DOUBLE && p->u.d == 0.0 && signbit(p->u.d));
  ck_assert_int_eq(ednReadOne(&arena, "##NaN", -1, &p, &err), SQLITE_OK);
  ck_assert(isnan(p->u.d));
  ck_assert_int_eq(ednReadOne(&arena, ":a/b", -1, &p, &err), SQLITE_OK);
  ck_assert_int_eq(p->type, EDN_KEYWORD);
  ck_assert_str_eq(p->u.s.z, ":a/b");
  ck_assert_int_eq(p->u.s.n, 4);
  ednArenaReset(&arena);
}
END_TEST

START_TEST(test_read_one) {
  EdnArena arena;
  EdnValue *p = NULL;
  EdnError err;
  ednArenaInit(&arena);
  ck_assert_int_eq(ednReadOne(&arena, "[1 2]", -1, &p, &err), SQLITE_OK);
  ck_assert_int_eq(p->type, EDN_VECTOR);
  ck_assert_int_eq(p->u.c.n, 2);
  ck_assert_int_eq(ednReadOne(&arena, "1 2", -1, &p, &err), SQLITE_ERROR);
  ck_assert_ptr_null(p);
  ck_assert_str_eq(err.zMsg, "expected one EDN form, found another after it");
  ck_assert_int_eq(err.line, 1);
  ck_assert_int_eq(err.col, 3);
  ck_assert_int_eq(ednReadOne(&arena, "", 0, &p, &err), SQLITE_ERROR);
  ck_assert_str_eq(err.zMsg, "no EDN form in input");
  ck_assert_int_eq(ednReadOne(&arena, "#_ [[:db/add \"d\" :p/name \"v\"]]", -1, &p, &err), SQLITE_ERROR);
  ck_assert_str_eq(err.zMsg, "no EDN form in input");
  ck_assert_int_eq(ednReadOne(&arena, " ;c\n", -1, &p, &err), SQLITE_ERROR);
  ck_assert_str_eq(err.zMsg, "no EDN form in input");
  ck_assert_int_eq(ednReadOne(&arena, NULL, 0, &p, &err), SQLITE_ERROR);
  /* Only n bytes are read: the rest of the buffer is never looked at. */
  ck_assert_int_eq(ednReadOne(&arena, "[1] [2]", 3, &p, &err), SQLITE_OK);
  ck_assert_int_eq(ednReadOne(&arena, "\"abc\"", 4, &p, &err), SQLITE_ERROR);
  ck_assert_str_eq(err.zMsg, "unterminated string");
  ck_assert_int_eq(ednReadOne(&arena, "12345", 2, &p, &err), SQLITE_OK);
  ck_assert_int_eq(p->u.i, 12);
  ednArenaReset(&arena);
}
END_TEST

/* Forms carry 1-based line and column (characters, not bytes). */
START_TEST(test_positions) {
  EdnArena arena;
  EdnValue *p = NULL;
  EdnError err;
  ednArenaInit(&arena);
  ck_assert_int_eq(ednReadOne(&arena, "[1\n  :a \"\xC3\xA9\xC3\xA9\" x\n\"l1\nl2\" y #inst \"2018-01-01\"]", -1, &p, &err), SQLITE_OK);
  ck_assert_int_eq(p->line, 1); ck_assert_int_eq(p->col, 1);
  ck_assert_int_eq(p->u.c.a[0]->line, 1); ck_assert_int_eq(p->u.c.a[0]->col, 2);
  ck_assert_int_eq(p->u.c.a[1]->line, 2); ck_assert_int_eq(p->u.c.a[1]->col, 3);
  ck_assert_int_eq(p->u.c.a[2]->line, 2); ck_assert_int_eq(p->u.c.a[2]->col, 6);
  ck_assert_int_eq(p->u.c.a[3]->line, 2); ck_assert_int_eq(p->u.c.a[3]->col, 11);
  ck_assert_int_eq(p->u.c.a[4]->line, 3); ck_assert_int_eq(p->u.c.a[4]->col, 1);
  ck_assert_int_eq(p->u.c.a[5]->line, 4); ck_assert_int_eq(p->u.c.a[5]->col, 5);
  ck_assert_int_eq(p->u.c.a[6]->line, 4); ck_assert_int_eq(p->u.c.a[6]->col, 7);
  ck_assert_int_eq(p->u.c.a[6]->type, EDN_INST);
  ednArenaReset(&arena);
}
END_TEST

/* B34: nesting is capped at EDN_MAX_DEPTH without stack overflow. */
static char *repeatStr(const char *zA, int nA, const char *zMid, const char *zB, int nB) {
  size_t la = strlen(zA), lm = strlen(zMid), lb = strlen(zB);
  char *z = malloc(la * (size_t)nA + lm + lb * (size_t)nB + 1), *q = z;
  int i;
  for (i = 0; i < nA; i++) { memcpy(q, zA, la); q += la; }
  memcpy(q, zMid, lm); q += lm;
  for (i = 0; i < nB; i++) { memcpy(q, zB, lb); q += lb; }
  *q = 0;
  return z;
}

START_TEST(test_depth) {
  static const struct { const char *zA, *zMid, *zB; int n; const char *zExpect; } a[] = {
    {"[", "", "]", 200000, "!nesting too deep (limit 256)"},
    {"[", "", "", 200000, "!nesting too deep (limit 256)"},
    {"{:a ", "1", "}", 100000, "!nesting too deep (limit 256)"},
    {"#t ", "1", "", 100000, "!nesting too deep (limit 256)"},
    {"#_ ", "1 2", "", 100000, "!nesting too deep (limit 256)"},
    {"(", "", ")", 257, "!nesting too deep (limit 256)"},
    {"#{", "", "}", 257, "!nesting too deep (limit 256)"},
  };
  int i;
  for (i = 0; i < NCASE(a); i++) {
    char *zIn = repeatStr(a[i].zA, a[i].n, a[i].zMid, a[i].zB, a[i].n);
    int line, col;
    char *zGot = readPrint(zIn, (int)strlen(zIn), &line, &col);
    ck_assert_msg(strcmp(zGot, a[i].zExpect) == 0, "depth case %d: %s", i, zGot);
    free(zGot);
    free(zIn);
  }
  {
    /* Exactly 256 levels are allowed, and print back the same. */
    char *zIn = repeatStr("[", 256, "", "]", 256);
    int line, col;
    char *zGot = readPrint(zIn, (int)strlen(zIn), &line, &col);
    ck_assert_str_eq(zGot, zIn);
    free(zGot);
    free(zIn);
  }
  {
    int line, col;
    char *zIn = repeatStr("[{:p/n ", 1, "", "", 0), *zBig;
    char *zInner = repeatStr("{:a ", 100000, "1", "}", 100000);
    zBig = malloc(strlen(zIn) + strlen(zInner) + 3);
    sprintf(zBig, "%s%s}]", zIn, zInner);
    char *zGot = readPrint(zBig, (int)strlen(zBig), &line, &col);
    ck_assert_str_eq(zGot, "!nesting too deep (limit 256)");
    free(zGot); free(zBig); free(zInner); free(zIn);
  }
}
END_TEST

/* A 10,000-key map reads in well under a second (no quadratic duplicate
** check), and a duplicate at the very end is still found. */
START_TEST(test_big_map) {
  int nKey = 10000, i;
  sqlite3_str *pStr = sqlite3_str_new(NULL);
  char *zIn;
  EdnArena arena;
  EdnValue *p = NULL;
  EdnError err;
  clock_t t0;
  sqlite3_str_appendchar(pStr, 1, '{');
  for (i = 0; i < nKey; i++) sqlite3_str_appendf(pStr, ":k/a%d %d ", i, i);
  sqlite3_str_appendchar(pStr, 1, '}');
  zIn = sqlite3_str_finish(pStr);
  ednArenaInit(&arena);
  t0 = clock();
  ck_assert_int_eq(ednReadOne(&arena, zIn, (int)strlen(zIn), &p, &err), SQLITE_OK);
  ck_assert_int_eq(p->u.c.n, 2 * nKey);
  /* Quadratic checking would cost ~5e7 comparisons; 1.5 s leaves room for
  ** valgrind and sanitizer builds. */
  ck_assert_msg((double)(clock() - t0) / CLOCKS_PER_SEC < 1.5, "10k-key map too slow");
  sqlite3_free(zIn);
  /* A 10,001-element set whose last element repeats an early one. */
  pStr = sqlite3_str_new(NULL);
  sqlite3_str_appendf(pStr, "#{");
  for (i = 0; i < nKey; i++) sqlite3_str_appendf(pStr, "[%d \"x\"] ", i);
  sqlite3_str_appendf(pStr, "[5 \"x\"]}");
  zIn = sqlite3_str_finish(pStr);
  ck_assert_int_eq(ednReadOne(&arena, zIn, (int)strlen(zIn), &p, &err), SQLITE_ERROR);
  ck_assert_str_eq(err.zMsg, "duplicate element [5 \"x\"] in set");
  sqlite3_free(zIn);
  ednArenaReset(&arena);
}
END_TEST

typedef struct JsonCase { const char *zIn; const char *zJson; } JsonCase;

START_TEST(test_print_json) {
  static const JsonCase a[] = {
    {"[1 2.5 \"s\" :k/w sym nil true \\a]", "[1,2.5,\"s\",\":k/w\",\"sym\",null,true,\"a\"]"},
    {"{:a 1 \"b\" 2 3 4 [5] 6}", "{\":a\":1,\"b\":2,\"3\":4,\"[5]\":6}"},
    {"#{1} (1 2) []", "[1]"},
    {"#inst \"2025-03-04T05:06:00Z\"", "\"2025-03-04T05:06:00.000000Z\""},
    {"#uuid \"ff62d552-6569-4d1b-b667-04703041dfc4\"", "\"ff62d552-6569-4d1b-b667-04703041dfc4\""},
    {"##Inf", "1e999"},
    {"##-Inf", "-1e999"},
    {"##NaN", "null"},
    {"2.0", "2.0"},
    {"0.1", "0.1"},
    {"-0.0", "-0.0"},
    {"1e300", "1e+300"},
    {"-9223372036854775808", "-9223372036854775808"},
    {"\"a\\u0000b\\n\\\"\\\\\\u001f\"", "\"a\\u0000b\\n\\\"\\\\\\u001f\""},
    {"\"\xC3\xA9\"", "\"\xC3\xA9\""},
    {"\\newline", "\"\\n\""},
    {"\\\xC3\xA9", "\"\xC3\xA9\""},
    {"#db/id [:db.part/user -1]", "\"#db/id [:db.part/user -1]\""},
    {"#bytes \"00FF7f\"", "\"00ff7f\""},
    {"{:a {:b [#{}]}}", "{\":a\":{\":b\":[[]]}}"},
  };
  int i;
  for (i = 0; i < NCASE(a); i++) {
    EdnArena arena;
    EdnValue **aForm = NULL;
    int nForm = 0;
    EdnError err;
    sqlite3_str *pStr = sqlite3_str_new(NULL);
    char *zOut;
    ednArenaInit(&arena);
    ck_assert_int_eq(ednReadAll(&arena, a[i].zIn, -1, &aForm, &nForm, &err), SQLITE_OK);
    ednPrintJson(pStr, aForm[0]);
    zOut = sqlite3_str_finish(pStr);
    ck_assert_msg(strcmp(zOut, a[i].zJson) == 0, "json case %d: expected %s got %s", i, a[i].zJson, zOut);
    sqlite3_free(zOut);
    ednArenaReset(&arena);
  }
}
END_TEST

/* Every printed form reads back to an equal tree (ednEqual). */
START_TEST(test_roundtrip) {
  static const char *az[] = {
    "[nil true false 0 -1 9223372036854775807 -9223372036854775808]",
    "[1.0 -0.5 0.1 1e+308 5e-324 ##Inf ##-Inf 0.30000000000000004 1.7976931348623157e308]",
    "[\"\" \"a\\\"b\" \"\\u0000\\u0001\\u007f\" \"\xF0\x9F\x98\x80\" \"tab\\there\"]",
    "[\\a \\newline \\space \\u0000 \\u007F \\\xC3\xA9 \\\xF0\x9F\x98\x80 \\\\ \\\"]",
    "{:a/b [1 2] #{:x :y} (a b c) \"s\" {:n nil}}",
    "[#inst \"1969-12-31T23:59:59.999999Z\" #uuid \"00000000-0000-0000-0000-000000000000\" #db/id [:db.part/user -1]]",
    "[+ - . ... ?x _ $ % / a/b :a->b/c?]",
    "[#bytes \"00ff10\" #bytes \"\" #a/b #c [1]]",
  };
  int i;
  for (i = 0; i < NCASE(az); i++) {
    EdnArena arena;
    EdnValue *p1 = NULL, *p2 = NULL;
    EdnError err;
    sqlite3_str *pStr = sqlite3_str_new(NULL);
    char *zOut;
    int nOut;
    ednArenaInit(&arena);
    ck_assert_msg(ednReadOne(&arena, az[i], -1, &p1, &err) == SQLITE_OK, "rt %d: %s", i, err.zMsg);
    ednPrint(pStr, p1);
    nOut = sqlite3_str_length(pStr);
    zOut = sqlite3_str_finish(pStr);
    ck_assert_msg(ednReadOne(&arena, zOut, nOut, &p2, &err) == SQLITE_OK, "rt %d reread %s: %s", i, zOut, err.zMsg);
    ck_assert_msg(ednEqual(p1, p2), "rt %d: %s", i, zOut);
    sqlite3_free(zOut);
    ednArenaReset(&arena);
  }
}
END_TEST

START_TEST(test_instants) {
  static const struct { const char *z; int bOk; sqlite3_int64 us; } a[] = {
    {"2018-01-01T11:00:00Z", 1, 1514804400000000LL},
    {"2018-01-01T11:00:00.000Z", 1, 1514804400000000LL},
    {"2018-01-01T12:00:00+01:00", 1, 1514804400000000LL},
    {"2018-01-01T10:30:00-00:30", 1, 1514804400000000LL},
    {"2018-01-01t11:00:00z", 1, 1514804400000000LL},
    {"2018-01-01T11:00:00", 1, 1514804400000000LL},
    {"2018-01-01T11:00Z", 1, 1514804400000000LL},
    {"2018-01-01T11", 1, 1514804400000000LL},
    {"2018-01-01", 1, 1514764800000000LL},
    {"2018-01", 1, 1514764800000000LL},
    {"2018", 1, 1514764800000000LL},
    {"2018-01-01T11:00:00.5Z", 1, 1514804400500000LL},
    {"2018-01-01T11:00:00.123456789Z", 1, 1514804400123456LL},
    {"1970-01-01T00:00:00Z", 1, 0},
    {"1969-12-31T23:59:59.999999Z", 1, -1},
    {"1900-01-01T00:00:00Z", 1, -2208988800000000LL},
    {"0001-01-01T00:00:00Z", 1, -62135596800000000LL},
    {"2025-03-04T05:06:00Z", 1, 1741064760000000LL},
    {"2016-12-31T23:59:60Z", 1, 1483228800000000LL},
    {"2000-02-29", 1, 951782400000000LL},
    {"1900-02-29", 0, 0},
    {"2018-02-30", 0, 0},
    {"2018-13-01", 0, 0},
    {"2018-00-01", 0, 0},
    {"2018-01-01T24:00:00Z", 0, 0},
    {"2018-01-01T11:60:00Z", 0, 0},
    {"2018-01-01T11:00:60Z", 0, 0},
    {"2018-01-01 11:00:00Z", 0, 0},
    {"2018-01-01T11:00:00.Z", 0, 0},
    {"2018-01-01T11:00:00+0100", 0, 0},
    {"2018-01-01T11:00:00+24:00", 0, 0},
    {"2018-1-01", 0, 0},
    {"18-01-01", 0, 0},
    {"not-a-date", 0, 0},
    {"", 0, 0},
    {"2018-01-01T11:00:00Zjunk", 0, 0},
  };
  int i;
  for (i = 0; i < NCASE(a); i++) {
    sqlite3_int64 us = 12345;
    int rc = ednParseInstant(a[i].z, (int)strlen(a[i].z), &us);
    ck_assert_msg((rc == 0) == a[i].bOk, "instant %d [%s]: rc %d", i, a[i].z, rc);
    if (a[i].bOk) ck_assert_msg(us == a[i].us, "instant %d [%s]: %lld", i, a[i].z, (long long)us);
  }
}
END_TEST

START_TEST(test_format_instant) {
  static const struct { sqlite3_int64 us; const char *z; } a[] = {
    {0, "1970-01-01T00:00:00.000000Z"},
    {-1, "1969-12-31T23:59:59.999999Z"},
    {1741064760000000LL, "2025-03-04T05:06:00.000000Z"},
    {1514804400123456LL, "2018-01-01T11:00:00.123456Z"},
    {-2208988800000000LL, "1900-01-01T00:00:00.000000Z"},
    {-2208988800000001LL, "1899-12-31T23:59:59.999999Z"},
    {951782400000000LL, "2000-02-29T00:00:00.000000Z"},
    {-62135596800000000LL, "0001-01-01T00:00:00.000000Z"},
    {253402300799999999LL, "9999-12-31T23:59:59.999999Z"},
  };
  int i;
  char aBuf[40];
  for (i = 0; i < NCASE(a); i++) {
    ednFormatInstant(a[i].us, aBuf);
    ck_assert_str_eq(aBuf, a[i].z);
  }
  /* The extremes of the int64 range format without overflow: -2^63 and
  ** 2^63 - 1 microseconds, proleptic Gregorian (days from civil, by hand). */
  ednFormatInstant((sqlite3_int64)(((sqlite3_uint64)1) << 63), aBuf);
  ck_assert_str_eq(aBuf, "-290308-12-21T19:59:05.224192Z");
  ednFormatInstant((sqlite3_int64)((((sqlite3_uint64)1) << 63) - 1), aBuf);
  ck_assert_str_eq(aBuf, "294247-01-10T04:00:54.775807Z");
}
END_TEST

START_TEST(test_uuid) {
  unsigned char a[16];
  char z[37];
  static const unsigned char aExp[16] = {0xff, 0x62, 0xd5, 0x52, 0x65, 0x69, 0x4d, 0x1b,
                                         0xb6, 0x67, 0x04, 0x70, 0x30, 0x41, 0xdf, 0xc4};
  ck_assert_int_eq(ednParseUuid("FF62D552-6569-4D1B-B667-04703041DFC4", 36, a), 0);
  ck_assert(memcmp(a, aExp, 16) == 0);
  ednFormatUuid(a, z);
  ck_assert_str_eq(z, "ff62d552-6569-4d1b-b667-04703041dfc4");
  ck_assert_int_ne(ednParseUuid("ff62d552-6569-4d1b-b667-04703041dfc", 35, a), 0);
  ck_assert_int_ne(ednParseUuid("ff62d552-6569-4d1b-b667-04703041dfcg", 36, a), 0);
  ck_assert_int_ne(ednParseUuid("ff62d5526-569-4d1b-b667-04703041dfc4", 36, a), 0);
  ck_assert_int_ne(ednParseUuid("ff62d552-6569-4d1b-b667-04703041dfc45", 37, a), 0);
  ck_assert_int_ne(ednParseUuid("{f62d552-6569-4d1b-b667-04703041dfc4", 36, a), 0);
}
END_TEST

START_TEST(test_predicates_builders) {
  EdnArena arena;
  EdnValue *pKw, *pSym, *pVar, *pV1, *pV2, *pC;
  EdnValue *pA = NULL, *pB = NULL;
  EdnError err;
  char *zBig;
  ednArenaInit(&arena);
  pKw = ednNewString(&arena, EDN_KEYWORD, ":db/add", -1);
  pSym = ednNewString(&arena, EDN_SYMBOL, "_", 1);
  pVar = ednNewString(&arena, EDN_SYMBOL, "?x", -1);
  ck_assert(ednIsKeyword(pKw, ":db/add"));
  ck_assert(!ednIsKeyword(pKw, ":db/ad"));
  ck_assert(!ednIsKeyword(pSym, "_"));
  ck_assert(ednIsSymbol(pSym, "_"));
  ck_assert(!ednIsVar(pSym));
  ck_assert(ednIsVar(pVar));
  ck_assert(!ednIsVar(pKw));
  ck_assert(!ednIsKeyword(NULL, ":a"));
  pV1 = ednNewInt(&arena, 7);
  pV2 = ednNewInt(&arena, 7);
  ck_assert(ednEqual(pV1, pV2));
  pC = ednNewColl(&arena, EDN_VECTOR, 2);
  pC->u.c.a[0] = pKw;
  pC->u.c.a[1] = pV1;
  ck_assert_int_eq(ednReadOne(&arena, "[:db/add 7]", -1, &pA, &err), SQLITE_OK);
  ck_assert(ednEqual(pC, pA));
  ck_assert_int_eq(ednReadOne(&arena, "(:db/add 7)", -1, &pB, &err), SQLITE_OK);
  ck_assert(!ednEqual(pC, pB));   /* list and vector differ, as in EDN's data model */
  ck_assert_int_eq(ednReadOne(&arena, "{:a 1 :b #{1 2}}", -1, &pA, &err), SQLITE_OK);
  ck_assert_int_eq(ednReadOne(&arena, "{:b #{2 1} :a 1}", -1, &pB, &err), SQLITE_OK);
  ck_assert(ednEqual(pA, pB));
  ck_assert_int_eq(ednReadOne(&arena, "1", -1, &pA, &err), SQLITE_OK);
  ck_assert_int_eq(ednReadOne(&arena, "1.0", -1, &pB, &err), SQLITE_OK);
  ck_assert(!ednEqual(pA, pB));
  ck_assert_int_eq(ednReadOne(&arena, "##NaN", -1, &pA, &err), SQLITE_OK);
  ck_assert_int_eq(ednReadOne(&arena, "##NaN", -1, &pB, &err), SQLITE_OK);
  ck_assert(!ednEqual(pA, pB));   /* NaN equals nothing, as with == */
  /* Big allocations get their own chunk and keep earlier memory valid. */
  zBig = ednArenaAlloc(&arena, 1 << 20);
  ck_assert_ptr_nonnull(zBig);
  memset(zBig, 'x', 1 << 20);
  ck_assert(ednIsKeyword(pKw, ":db/add"));
  ck_assert_str_eq(ednArenaStrdup(&arena, "abc", 2), "ab");
  ednArenaReset(&arena);
  ednArenaReset(&arena);   /* idempotent */
  ck_assert_ptr_nonnull(ednArenaAlloc(&arena, 8));
  ednArenaReset(&arena);
}
END_TEST

/* ---- generated trees: print → read back → equal; JSON is valid JSON ---- */

static sqlite3_uint64 rngState = 0x2545F4914F6CDD1DULL;
static sqlite3_uint64 rng(void) {   /* xorshift64*: deterministic across runs */
  rngState ^= rngState >> 12;
  rngState ^= rngState << 25;
  rngState ^= rngState >> 27;
  return rngState * 0x2545F4914F6CDD1DULL;
}

static int genCodePoint(void) {
  int cp;
  switch (rng() % 4) {
    case 0: cp = (int)(rng() % 0x20); break;                 /* controls, NUL */
    case 1: cp = " \"\\;,()[]{}#:'ab/"[rng() % 17]; break;    /* syntax */
    case 2: cp = 0x80 + (int)(rng() % 0x800); break;
    default: cp = (int)(rng() % 0x110000); break;
  }
  if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xE9;
  return cp;
}

static int encodeCp(int cp, char *z) {
  if (cp < 0x80) { z[0] = (char)cp; return 1; }
  if (cp < 0x800) { z[0] = (char)(0xC0 | cp >> 6); z[1] = (char)(0x80 | (cp & 63)); return 2; }
  if (cp < 0x10000) {
    z[0] = (char)(0xE0 | cp >> 12); z[1] = (char)(0x80 | (cp >> 6 & 63)); z[2] = (char)(0x80 | (cp & 63));
    return 3;
  }
  z[0] = (char)(0xF0 | cp >> 18); z[1] = (char)(0x80 | (cp >> 12 & 63));
  z[2] = (char)(0x80 | (cp >> 6 & 63)); z[3] = (char)(0x80 | (cp & 63));
  return 4;
}

static EdnValue *genTree(EdnArena *pA, int depth) {
  static const char *azSym[] = {"a", "?x", "_", "+", "-", ".", "...", "a/b", "clojure.string/blank?",
                                "-a", "+b", "nil?", "/", "$", "%", "a#b", "x'"};
  static const char *azKw[] = {":a", ":a/b", ":a->b/c?", ":foo_bar", ":1", ":-1", ":x.y/z-1", ":<>"};
  static const char *azTag[] = {"db/id", "foo", "a.b/c", "bytes"};
  EdnValue *p;
  int t = (int)(rng() % (depth > 5 ? 11 : 15)), i, n;
  static const EdnType aLeaf[] = {EDN_NIL, EDN_BOOL, EDN_INT, EDN_DOUBLE, EDN_STRING, EDN_CHAR,
                                  EDN_KEYWORD, EDN_SYMBOL, EDN_INST, EDN_UUID, EDN_TAGGED,
                                  EDN_LIST, EDN_VECTOR, EDN_MAP, EDN_SET};
  EdnType type = aLeaf[t];
  switch (type) {
    case EDN_STRING: {
      char aBuf[200];
      int k = 0;
      n = (int)(rng() % 12);
      for (i = 0; i < n; i++) k += encodeCp(genCodePoint(), aBuf + k);
      return ednNewString(pA, EDN_STRING, aBuf, k);
    }
    case EDN_KEYWORD: return ednNewString(pA, EDN_KEYWORD, azKw[rng() % 8], -1);
    case EDN_SYMBOL: return ednNewString(pA, EDN_SYMBOL, azSym[rng() % 17], -1);
    case EDN_LIST: case EDN_VECTOR: case EDN_MAP: case EDN_SET: {
      EdnValue *aKid[16];
      int nKid = 0;
      n = (int)(rng() % 6) * (type == EDN_MAP ? 2 : 1);
      for (i = 0; i < n; i++) {
        EdnValue *pKid = genTree(pA, depth + 1);
        int j, bDup = 0;
        if (type == EDN_SET || (type == EDN_MAP && (i & 1) == 0)) {
          for (j = 0; j < nKid; j += (type == EDN_MAP ? 2 : 1)) if (ednEqual(aKid[j], pKid)) bDup = 1;
        }
        if (bDup) {
          if (type == EDN_MAP) i++;      /* drop the pair */
          continue;
        }
        aKid[nKid++] = pKid;
      }
      if (type == EDN_MAP && (nKid & 1)) nKid--;
      p = ednNewColl(pA, type, nKid);
      for (i = 0; i < nKid; i++) p->u.c.a[i] = aKid[i];
      return p;
    }
    default: break;
  }
  p = ednNew(pA, type);
  switch (type) {
    case EDN_BOOL: p->u.b = (int)(rng() & 1); break;
    case EDN_INT:
      p->u.i = (sqlite3_int64)rng();
      if (rng() % 4 == 0) p->u.i %= 1000;
      break;
    case EDN_DOUBLE: {
      sqlite3_uint64 u = rng();
      double d;
      switch (rng() % 5) {
        case 0: d = (double)(sqlite3_int64)(u % 2000) / 8.0 - 100; break;
        case 1: d = (u & 1) ? HUGE_VAL : -HUGE_VAL; break;
        case 2: d = (u & 1) ? -0.0 : 5e-324; break;
        default: memcpy(&d, &u, sizeof d); break;
      }
      if (isnan(d)) d = 1.5;
      p->u.d = d;
      break;
    }
    case EDN_CHAR: p->u.i = genCodePoint(); break;
    case EDN_INST:
      p->u.i = -62167219200000000LL + (sqlite3_int64)(rng() % 315537897600000000ULL);
      break;
    case EDN_UUID:
      for (i = 0; i < 16; i++) p->u.uuid[i] = (unsigned char)rng();
      break;
    case EDN_TAGGED: {
      const char *zTag = azTag[rng() % 4];
      p->u.t.zTag = zTag;
      if (strcmp(zTag, "bytes") == 0) {
        char aBuf[8];
        for (i = 0; i < 8; i++) aBuf[i] = (char)rng();
        p->u.t.p = ednNewString(pA, EDN_STRING, aBuf, (int)(rng() % 8));
      } else {
        p->u.t.p = genTree(pA, depth + 1);
      }
      break;
    }
    default: break;
  }
  return p;
}

START_TEST(test_generated_roundtrip) {
  sqlite3 *db = NULL;
  sqlite3_stmt *pValid = NULL;
  int i;
  ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT json_valid(?1)", -1, &pValid, NULL), SQLITE_OK);
  for (i = 0; i < 3000; i++) {
    EdnArena arena;
    EdnValue *p, *pBack = NULL;
    EdnError err;
    sqlite3_str *pStr = sqlite3_str_new(NULL), *pJson = sqlite3_str_new(NULL);
    char *zText, *zJson;
    int nText;
    ednArenaInit(&arena);
    p = genTree(&arena, 0);
    ednPrint(pStr, p);
    nText = sqlite3_str_length(pStr);
    zText = sqlite3_str_finish(pStr);
    ck_assert_msg(ednReadOne(&arena, zText, nText, &pBack, &err) == SQLITE_OK,
                  "tree %d: %s reads back with error %s at %d:%d", i, zText, err.zMsg, err.line, err.col);
    ck_assert_msg(ednEqual(p, pBack), "tree %d: %s reads back different", i, zText);
    ednPrintJson(pJson, p);
    zJson = sqlite3_str_finish(pJson);
    sqlite3_bind_text(pValid, 1, zJson, -1, SQLITE_STATIC);
    ck_assert_int_eq(sqlite3_step(pValid), SQLITE_ROW);
    ck_assert_msg(sqlite3_column_int(pValid, 0) == 1, "tree %d: invalid JSON %s", i, zJson);
    sqlite3_reset(pValid);
    sqlite3_free(zText);
    sqlite3_free(zJson);
    ednArenaReset(&arena);
  }
  sqlite3_finalize(pValid);
  sqlite3_close(db);
}
END_TEST

/* A host with a decimal-comma LC_NUMERIC (setlocale in a GUI app) must not
** change how doubles read or print. Skipped when no such locale exists
** (e.g. localedef -i de_DE -f UTF-8 /tmp/loc/de_DE.UTF-8, LOCPATH=/tmp/loc). */
/* ednAppendInt against the values printf gives, edges included. */
START_TEST(test_append_int) {
  static const struct { sqlite3_int64 v; const char *z; } a[] = {
    {0, "0"}, {7, "7"}, {-7, "-7"}, {10, "10"}, {65536, "65536"}, {-1000000, "-1000000"},
    {INT64_MAX, "9223372036854775807"}, {INT64_MIN, "-9223372036854775808"},
  };
  for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
    sqlite3_str *p = sqlite3_str_new(NULL);
    ednAppendInt(p, a[i].v);
    char *z = sqlite3_str_finish(p);
    ck_assert_str_eq(z, a[i].z);
    sqlite3_free(z);
  }
}
END_TEST

START_TEST(test_locale_independent) {
  EdnArena arena;
  EdnValue *p = NULL;
  EdnError err;
  sqlite3_str *pStr;
  char *zOut;
  if (setlocale(LC_NUMERIC, "de_DE.UTF-8") == NULL && setlocale(LC_NUMERIC, "de_DE.utf8") == NULL) {
    /* no locale with a decimal comma is installed: nothing to show */
    printf("locale independence: SKIPPED (no de_DE locale installed)\n");
    fflush(stdout);
    return;
  }
  ednArenaInit(&arena);
  ck_assert_int_eq(ednReadOne(&arena, "[1.5 -2.25e3 0.1]", -1, &p, &err), SQLITE_OK);
  pStr = sqlite3_str_new(NULL);
  ednPrint(pStr, p);
  sqlite3_str_appendchar(pStr, 1, ' ');
  ednPrintJson(pStr, p);
  zOut = sqlite3_str_finish(pStr);
  setlocale(LC_NUMERIC, "C");
  ck_assert_str_eq(zOut, "[1.5 -2250.0 0.1] [1.5,-2250.0,0.1]");
  sqlite3_free(zOut);
  ednArenaReset(&arena);
}
END_TEST

/* ---- out of memory: every allocation failure gives SQLITE_NOMEM ---- */

static sqlite3_mem_methods memOrig;
static int nAllocLeft = -1;        /* allocations still allowed; -1: no limit */

static void *faultMalloc(int n) {
  if (nAllocLeft == 0) return NULL;
  if (nAllocLeft > 0) nAllocLeft--;
  return memOrig.xMalloc(n);
}

static void *faultRealloc(void *p, int n) {
  if (nAllocLeft == 0) return NULL;
  if (nAllocLeft > 0) nAllocLeft--;
  return memOrig.xRealloc(p, n);
}

START_TEST(test_oom) {
  static const char *azIn[] = {
    /* a big map (hash-sorted duplicate check), strings, tags, nesting */
    "[{:a0 0 :a1 1 :a2 2 :a3 3 :a4 4 :a5 5 :a6 6 :a7 7 :a8 8 :a9 9 :b0 0 :b1 1 :b2 2 :b3 3 :b4 4"
    " :b5 5 :b6 6 :b7 7 :b8 8 :b9 9} \"a string\" #inst \"2018-01-01\" #db/id [:db.part/user -1]"
    " #bytes \"00ff\" [[[[1.5]]]] #{1 2 3}]",
    "{:p/name 1 :p/name 2}",        /* the duplicate message is built with sqlite3_str */
  };
  /* input 0 printed as JSON, then as EDN (instants with microseconds, a
  ** tag JSON does not have as its EDN text, bytes as hex, a set as an array) */
  static const char *zWant0 =
    "[{\":a0\":0,\":a1\":1,\":a2\":2,\":a3\":3,\":a4\":4,\":a5\":5,\":a6\":6,\":a7\":7,\":a8\":8,"
    "\":a9\":9,\":b0\":0,\":b1\":1,\":b2\":2,\":b3\":3,\":b4\":4,\":b5\":5,\":b6\":6,\":b7\":7,\":b8\":8,"
    "\":b9\":9},\"a string\",\"2018-01-01T00:00:00.000000Z\",\"#db/id [:db.part/user -1]\",\"00ff\","
    "[[[[1.5]]]],[1,2,3]]"
    "[{:a0 0 :a1 1 :a2 2 :a3 3 :a4 4 :a5 5 :a6 6 :a7 7 :a8 8 :a9 9 :b0 0 :b1 1 :b2 2 :b3 3 :b4 4"
    " :b5 5 :b6 6 :b7 7 :b8 8 :b9 9} \"a string\" #inst \"2018-01-01T00:00:00.000000Z\""
    " #db/id [:db.part/user -1] #bytes \"00ff\" [[[[1.5]]]] #{1 2 3}]";
  sqlite3_mem_methods fault;
  int i, n, bDone, nNoMem;
  sqlite3_shutdown();
  ck_assert_int_eq(sqlite3_config(SQLITE_CONFIG_GETMALLOC, &memOrig), SQLITE_OK);
  fault = memOrig;
  fault.xMalloc = faultMalloc;
  fault.xRealloc = faultRealloc;
  ck_assert_int_eq(sqlite3_config(SQLITE_CONFIG_MALLOC, &fault), SQLITE_OK);
  ck_assert_int_eq(sqlite3_initialize(), SQLITE_OK);
  for (i = 0; i < (int)(sizeof(azIn) / sizeof(azIn[0])); i++) {
    bDone = nNoMem = 0;
    for (n = 0; n < 1000 && !bDone; n++) {
      EdnArena arena;
      EdnValue *p = NULL;
      EdnError err;
      int rc;
      ednArenaInit(&arena);
      nAllocLeft = n;
      rc = ednReadOne(&arena, azIn[i], -1, &p, &err);
      if (rc == SQLITE_OK) {
        sqlite3_str *pStr = sqlite3_str_new(NULL);
        char *z;
        ednPrintJson(pStr, p);
        ednPrint(pStr, p);
        z = sqlite3_str_finish(pStr);   /* NULL when an append ran out */
        /* what was read and printed is the whole input: JSON then EDN */
        if (z) ck_assert_msg(i == 0 && strcmp(z, zWant0) == 0, "input %d, %d allocations: %s", i, n, z);
        sqlite3_free(z);
        bDone = (z != NULL);
      } else if (rc == SQLITE_ERROR) {
        ck_assert_msg(i == 1, "input %d, %d allocations: unexpected error %s", i, n, err.zMsg);
        ck_assert_str_eq(err.zMsg, "duplicate key :p/name in map");
        ck_assert_int_eq(err.col, 12);
        bDone = 1;
      } else {
        ck_assert_int_eq(rc, SQLITE_NOMEM);
        nNoMem++;
      }
      nAllocLeft = -1;
      ednArenaReset(&arena);
    }
    ck_assert_msg(bDone, "input %d never succeeded", i);
    ck_assert_msg(nNoMem >= 1, "input %d: no allocation failure was injected", i);
  }
  sqlite3_shutdown();
  ck_assert_int_eq(sqlite3_config(SQLITE_CONFIG_MALLOC, &memOrig), SQLITE_OK);
  ck_assert_int_eq(sqlite3_initialize(), SQLITE_OK);
}
END_TEST

static Suite *ednSuite(void) {
  Suite *s = suite_create("edn");
  TCase *tc = tcase_create("reader");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_scalars);
  tcase_add_test(tc, test_numbers);
  tcase_add_test(tc, test_keywords_symbols);
  tcase_add_test(tc, test_collections);
  tcase_add_test(tc, test_tags);
  tcase_add_test(tc, test_reader_macros);
  tcase_add_test(tc, test_discard);
  tcase_add_test(tc, test_nul_utf8);
  tcase_add_test(tc, test_b03);
  tcase_add_test(tc, test_string_bytes);
  tcase_add_test(tc, test_read_one);
  tcase_add_test(tc, test_positions);
  tcase_add_test(tc, test_depth);
  tcase_add_test(tc, test_big_map);
  tcase_add_test(tc, test_print_json);
  tcase_add_test(tc, test_roundtrip);
  tcase_add_test(tc, test_instants);
  tcase_add_test(tc, test_format_instant);
  tcase_add_test(tc, test_uuid);
  tcase_add_test(tc, test_predicates_builders);
  tcase_add_test(tc, test_generated_roundtrip);
  tcase_add_test(tc, test_append_int);
  tcase_add_test(tc, test_locale_independent);
  tcase_add_test(tc, test_oom);
  suite_add_tcase(s, tc);
  return s;
}

TU_MAIN(ednSuite)
