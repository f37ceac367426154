/*
** query_funcs_java.c — java.util.regex patterns in PCRE2's syntax, for
** the regular expression functions (query_funcs_regex.c). Takes Java's
** pattern text; gives PCRE2's, with a map from its offsets back to the
** pattern's (for error positions), or the reason a construct cannot be
** translated. Calls the EDN text helpers and the class folding
** (query_funcs_java_fold.c).
*/
#include <stdarg.h>
#include <string.h>
#include <ctype.h>
#include "query_funcs.h"

int qfJavaInvalid(char **pzErr, const char *zPat, int nPat, const char *zWhy) {
  sqlite3_free(*pzErr);
  *pzErr = sqlite3_mprintf("invalid regular expression \"%.*s\": %s", nPat, zPat, zWhy);
  return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
}

/* Java's pattern as PCRE2 reads it. Every construct of the
** java.util.regex.Pattern syntax is either written out in PCRE2's terms with
** the same meaning or refused with a reason naming it; nothing passes
** through for PCRE2 to read its own way (its \K, \g, (*VERB), (?|, POSIX
** [:name:], \x without braces ...). Escapes for characters become \x{h...};
** . ^ $ \Z and \R are spelled out with Java's line terminators (\n \r \r\n
** \u0085 \u2028 \u2029, or \n alone under (?d)), which no PCRE2 newline
** convention equals; (?x) white space and comments are dropped here, in
** and out of classes, as Java does; of the inline flags only i reaches
** PCRE2 (its scope rules are Java's). */
#define QFJ_F_I 0x01    /* CASE_INSENSITIVE */
#define QFJ_F_M 0x02    /* MULTILINE */
#define QFJ_F_S 0x04    /* DOTALL */
#define QFJ_F_D 0x08    /* UNIX_LINES */
#define QFJ_F_X 0x10    /* COMMENTS */
#define QFJ_F_U 0x20    /* UNICODE_CASE */
/* CASE_INSENSITIVE without UNICODE_CASE folds US-ASCII only (Java's
** default); PCRE2 in UTF mode folds every letter, k K s S onto U+212A and
** U+017F too: a non-ASCII literal is matched exactly ((?-i:...)), k K s S
** as (?-i:[kK]), a class exactly with the ASCII cases added
** (qfJavaFoldClass), a back reference checked by a callout. */
#define QFJ_ASCII_FOLD(p) (((p)->flags & (QFJ_F_I | QFJ_F_U)) == QFJ_F_I)
#define QFJ_WIDE(c) ((c) == 'k' || (c) == 'K' || (c) == 's' || (c) == 'S')
#define QFJ_NEST 250    /* groups nest at most this deep (PCRE2's default) */

typedef struct QfJava {
  const unsigned char *z;   /* Java's pattern */
  int n, i;                 /* its length in bytes, the cursor */
  sqlite3_str *pOut;        /* PCRE2's pattern */
  const char *zWhy;         /* why it cannot be translated, or NULL */
  char zBuf[200];           /* a zWhy that names the construct */
  int flags;                /* QFJ_F_* in force at the cursor */
  int nGroup;               /* capturing groups opened so far */
  int nGroupAll;            /* capturing groups in the pattern, -1 unknown */
  int nNest;                /* groups open at the cursor */
  int nClass;               /* character classes open at the cursor */
  int aSave[QFJ_NEST];      /* the flags each open group restores at ')' */
  int *aMap;                /* pairs (offset in pOut, offset in z) per token */
  int nMap, nMapAlloc;
  int bNoMem;
} QfJava;

static void qfjWhy(QfJava *p, const char *zFmt, ...) {
  va_list ap;
  if (p->zWhy) return;
  va_start(ap, zFmt);
  sqlite3_vsnprintf(sizeof p->zBuf, p->zBuf, zFmt, ap);
  va_end(ap);
  p->zWhy = p->zBuf;
}

/* Notes that the PCRE2 text from here comes from Java's text at p->i, so a
** PCRE2 error's offset can be told as an index into the pattern written. */
static void qfjMark(QfJava *p) {
  if (p->nMap + 2 > p->nMapAlloc) {
    int nNew = p->nMapAlloc ? p->nMapAlloc * 2 : 64;
    int *aNew = sqlite3_realloc64(p->aMap, (sqlite3_uint64)nNew * sizeof(int));
    if (aNew == NULL) { p->bNoMem = 1; return; }
    p->aMap = aNew;
    p->nMapAlloc = nNew;
  }
  p->aMap[p->nMap++] = sqlite3_str_length(p->pOut);
  p->aMap[p->nMap++] = p->i;
}

/* The code point at byte i (*pLen bytes; an invalid byte stands alone, and
** PCRE2 refuses it later). */
static int qfjChar(const QfJava *p, int i, int *pLen) {
  int L = ednUtf8Len(p->z, p->n, i);
  if (L <= 0) { *pLen = 1; return p->z[i]; }
  *pLen = L;
  return ednUtf8Decode(p->z + i, L);
}

static int qfjHex(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int qfjIsLineEnd(const QfJava *p, int c) {
  if (p->flags & QFJ_F_D) return c == '\n';
  return c == '\n' || c == '\r' || c == 0x85 || c == 0x2028 || c == 0x2029;
}

/* Java's line terminators as the body of a class */
static const char *qfjLineEnds(const QfJava *p) {
  return (p->flags & QFJ_F_D) ? "\\n" : "\\n\\r\\x{85}\\x{2028}\\x{2029}";
}

/* (?x): Java skips ASCII white space and # comments (to a line terminator)
** between tokens, inside classes too. */
static void qfjSkipSpace(QfJava *p) {
  if (!(p->flags & QFJ_F_X)) return;
  while (p->i < p->n) {
    int c = p->z[p->i], L;
    if (c == ' ' || (c >= '\t' && c <= '\r')) {
      p->i++;
    } else if (c == '#') {
      while (p->i < p->n && !qfjIsLineEnd(p, qfjChar(p, p->i, &L))) p->i += L;
    } else {
      break;
    }
  }
}

/* One code point as a PCRE2 literal. */
static void qfjCodePoint(QfJava *p, int cp) {
  int bFold = QFJ_ASCII_FOLD(p) && p->nClass == 0;
  if (bFold && cp >= 0x80) sqlite3_str_appendf(p->pOut, "(?-i:\\x{%X})", (unsigned)cp);
  else if (bFold && QFJ_WIDE(cp)) sqlite3_str_appendf(p->pOut, "(?-i:[%c%c])", cp, cp ^ 0x20);
  else sqlite3_str_appendf(p->pOut, "\\x{%X}", (unsigned)cp);
}

/* Byte c of a \Q...\E quote as a PCRE2 literal (multibyte sequences pass
** as they are: PCRE2 gives them no meaning). */
static void qfjQuoted(QfJava *p, int c) {
  if (QFJ_WIDE(c)) qfjCodePoint(p, c);
  else if (c >= 0x80 || (c < 0x80 && isalnum(c))) sqlite3_str_appendchar(p->pOut, 1, (char)c);
  else if (c > 0x20 && c < 0x7F) sqlite3_str_appendf(p->pOut, "\\%c", c);
  else qfjCodePoint(p, c);
}

/* The text of \Q...\E from z[i] up to \E (or the end), as literals;
** gives the index past it. */
static int qfjQuote(QfJava *p, int i) {
  const unsigned char *z = p->z;
  int n = p->n;
  while (i < n && !(z[i] == '\\' && i + 1 < n && z[i + 1] == 'E')) {
    int L;
    if (z[i] < 0x80 || !QFJ_ASCII_FOLD(p) || p->nClass) {
      qfjQuoted(p, z[i++]);
      continue;
    }
    /* a non-ASCII character has no case of its own (QFJ_ASCII_FOLD) */
    qfjChar(p, i, &L);
    sqlite3_str_appendall(p->pOut, "(?-i:");
    sqlite3_str_append(p->pOut, (const char*)z + i, L);
    sqlite3_str_appendchar(p->pOut, 1, ')');
    i += L;
  }
  return i < n ? i + 2 : i;
}

/* Java's $ (and \Z, which is $ without MULTILINE): the end, or before a
** line terminator that ends the text (any line terminator under
** MULTILINE), never between \r and \n. */
static void qfjDollar(QfJava *p, int bMulti) {
  if (p->flags & QFJ_F_D) {
    sqlite3_str_appendall(p->pOut, bMulti ? "(?:(?=\\n|\\z))" : "(?:(?=\\n?\\z))");
  } else if (bMulti) {
    sqlite3_str_appendf(p->pOut, "(?:(?=[%s]|\\z)(?!(?<=\\r)\\n))", qfjLineEnds(p));
  } else {
    sqlite3_str_appendf(p->pOut, "(?:(?=(?:\\r\\n|[%s])?\\z)(?!(?<=\\r)\\n))", qfjLineEnds(p));
  }
}

/* A Java character property (java.util.regex.CharPredicates) as the body
** of a PCRE2 class; zSetI is the set under CASE_INSENSITIVE (Java 16 on:
** a case property then matches every cased letter), NULL when the same. */
typedef struct QfjProp { const char *zName, *zSet, *zSetI; } QfjProp;

#define QFJ_CASED "\\p{Lowercase}\\p{Uppercase}\\p{Lt}"

/* Names Java looks up case-sensitively: categories, POSIX (US-ASCII: PCRE2's
** [:name:] without UCP) and java.lang.Character's methods. */
static const QfjProp aQfjProp[] = {
  { "Cn", "\\p{Cn}", 0 }, { "Lu", "\\p{Lu}", "\\p{Lu}\\p{Ll}\\p{Lt}" },
  { "Ll", "\\p{Ll}", "\\p{Lu}\\p{Ll}\\p{Lt}" }, { "Lt", "\\p{Lt}", "\\p{Lu}\\p{Ll}\\p{Lt}" },
  { "Lm", "\\p{Lm}", 0 }, { "Lo", "\\p{Lo}", 0 }, { "Mn", "\\p{Mn}", 0 }, { "Me", "\\p{Me}", 0 },
  { "Mc", "\\p{Mc}", 0 }, { "Nd", "\\p{Nd}", 0 }, { "Nl", "\\p{Nl}", 0 }, { "No", "\\p{No}", 0 },
  { "Zs", "\\p{Zs}", 0 }, { "Zl", "\\p{Zl}", 0 }, { "Zp", "\\p{Zp}", 0 }, { "Cc", "\\p{Cc}", 0 },
  { "Cf", "\\p{Cf}", 0 }, { "Co", "\\p{Co}", 0 }, { "Cs", "\\p{Cs}", 0 }, { "Pd", "\\p{Pd}", 0 },
  { "Ps", "\\p{Ps}", 0 }, { "Pe", "\\p{Pe}", 0 }, { "Pc", "\\p{Pc}", 0 }, { "Po", "\\p{Po}", 0 },
  { "Sm", "\\p{Sm}", 0 }, { "Sc", "\\p{Sc}", 0 }, { "Sk", "\\p{Sk}", 0 }, { "So", "\\p{So}", 0 },
  { "Pi", "\\p{Pi}", 0 }, { "Pf", "\\p{Pf}", 0 }, { "L", "\\p{L}", 0 }, { "M", "\\p{M}", 0 },
  { "N", "\\p{N}", 0 }, { "Z", "\\p{Z}", 0 }, { "C", "\\p{C}", 0 }, { "P", "\\p{P}", 0 },
  { "S", "\\p{S}", 0 }, { "LC", "\\p{Lu}\\p{Ll}\\p{Lt}", 0 }, { "LD", "\\p{L}\\p{Nd}", 0 },
  { "L1", "\\x{0}-\\x{FF}", 0 }, { "all", "\\x{0}-\\x{10FFFF}", 0 },
  { "ASCII", "[:ascii:]", 0 }, { "Alnum", "[:alnum:]", 0 }, { "Alpha", "[:alpha:]", 0 },
  { "Blank", "[:blank:]", 0 }, { "Cntrl", "[:cntrl:]", 0 }, { "Digit", "[:digit:]", 0 },
  { "Graph", "[:graph:]", 0 }, { "Lower", "[:lower:]", "[:alpha:]" }, { "Print", "[:print:]", 0 },
  { "Punct", "[:punct:]", 0 }, { "Space", "[:space:]", 0 }, { "Upper", "[:upper:]", "[:alpha:]" },
  { "XDigit", "[:xdigit:]", 0 },
  { "javaLowerCase", "\\p{Lowercase}", QFJ_CASED }, { "javaUpperCase", "\\p{Uppercase}", QFJ_CASED },
  { "javaTitleCase", "\\p{Lt}", QFJ_CASED }, { "javaAlphabetic", "\\p{Alphabetic}", 0 },
  { "javaIdeographic", "\\p{Ideographic}", 0 }, { "javaDigit", "\\p{Nd}", 0 },
  { "javaDefined", "\\P{Cn}", 0 }, { "javaLetter", "\\p{L}", 0 },
  { "javaLetterOrDigit", "\\p{L}\\p{Nd}", 0 }, { "javaSpaceChar", "\\p{Z}", 0 },
  /* isWhitespace: Zs Zl Zp but the no-break spaces, and \t-\r \x1C-\x1F */
  { "javaWhitespace", "\\t-\\r\\x{1C}-\\x{20}\\x{1680}\\x{2000}-\\x{2006}\\x{2008}-\\x{200A}"
                      "\\x{2028}\\x{2029}\\x{205F}\\x{3000}", 0 },
  { "javaISOControl", "\\x{0}-\\x{1F}\\x{7F}-\\x{9F}", 0 },
  { "javaIdentifierIgnorable", "\\x{0}-\\x{8}\\x{E}-\\x{1B}\\x{7F}-\\x{9F}\\p{Cf}", 0 },
  { "javaJavaIdentifierStart", "\\p{L}\\p{Nl}\\p{Sc}\\p{Pc}", 0 },
  { "javaJavaIdentifierPart", "\\p{L}\\p{Nl}\\p{Sc}\\p{Pc}\\p{Nd}\\p{Mc}\\p{Mn}"
                              "\\x{0}-\\x{8}\\x{E}-\\x{1B}\\x{7F}-\\x{9F}\\p{Cf}", 0 },
  { "javaMirrored", "\\p{Bidi_M}", 0 },
};

/* Java's binary properties after Is, any case (UnicodeProp). */
static const QfjProp aQfjBinary[] = {
  { "ALPHABETIC", "\\p{Alphabetic}", 0 }, { "ASSIGNED", "\\P{Cn}", 0 },
  { "CONTROL", "\\p{Cc}", 0 }, { "HEXDIGIT", "\\p{Nd}A-Fa-f\\x{FF21}-\\x{FF26}\\x{FF41}-\\x{FF46}", 0 },
  { "HEX_DIGIT", "\\p{Nd}A-Fa-f\\x{FF21}-\\x{FF26}\\x{FF41}-\\x{FF46}", 0 },
  { "IDEOGRAPHIC", "\\p{Ideographic}", 0 }, { "JOINCONTROL", "\\x{200C}\\x{200D}", 0 },
  { "JOIN_CONTROL", "\\x{200C}\\x{200D}", 0 }, { "LETTER", "\\p{L}", 0 },
  { "LOWERCASE", "\\p{Lowercase}", QFJ_CASED }, { "UPPERCASE", "\\p{Uppercase}", QFJ_CASED },
  { "TITLECASE", "\\p{Lt}", QFJ_CASED },
  { "NONCHARACTERCODEPOINT", "\\p{Noncharacter_Code_Point}", 0 },
  { "NONCHARACTER_CODE_POINT", "\\p{Noncharacter_Code_Point}", 0 },
  { "PUNCTUATION", "\\p{P}", 0 }, { "WHITESPACE", "\\t-\\r\\x{85}\\p{Z}", 0 },
  { "WHITE_SPACE", "\\t-\\r\\x{85}\\p{Z}", 0 },
  { "WORD", "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}", 0 },
  { "EMOJI", "\\p{Emoji}", 0 }, { "EMOJI_PRESENTATION", "\\p{Emoji_Presentation}", 0 },
  { "EMOJI_MODIFIER", "\\p{Emoji_Modifier}", 0 },
  { "EMOJI_MODIFIER_BASE", "\\p{Emoji_Modifier_Base}", 0 },
  { "EMOJI_COMPONENT", "\\p{Emoji_Component}", 0 },
  { "EXTENDED_PICTOGRAPHIC", "\\p{Extended_Pictographic}", 0 },
};

/* The POSIX names after Is, any case: Java's Unicode versions
** (CharPredicates.getPosixPredicate; bare \p{Alpha} ... are US-ASCII).
** GRAPH is "not Z*, Cc, Cs or Cn", written as the categories left; PRINT is
** GRAPH or BLANK without Cc, which leaves Zs. */
static const QfjProp aQfjPosixU[] = {
  { "ALPHA", "\\p{Alphabetic}", 0 }, { "DIGIT", "\\p{Nd}", 0 },
  { "ALNUM", "\\p{Alphabetic}\\p{Nd}", 0 }, { "PUNCT", "\\p{P}", 0 },
  { "SPACE", "\\t-\\r\\x{85}\\p{Z}", 0 },
  { "XDIGIT", "\\p{Nd}A-Fa-f\\x{FF21}-\\x{FF26}\\x{FF41}-\\x{FF46}", 0 },
  { "LOWER", "\\p{Lowercase}", QFJ_CASED }, { "UPPER", "\\p{Uppercase}", QFJ_CASED },
  { "CNTRL", "\\p{Cc}", 0 }, { "BLANK", "\\t\\p{Zs}", 0 },
  { "GRAPH", "\\p{L}\\p{M}\\p{N}\\p{P}\\p{S}\\p{Cf}\\p{Co}", 0 },
  { "PRINT", "\\p{L}\\p{M}\\p{N}\\p{P}\\p{S}\\p{Cf}\\p{Co}\\p{Zs}", 0 },
};

static const QfjProp *qfjFind(const QfjProp *a, int nA, const char *z, int n, int bNoCase) {
  int i;
  for (i = 0; i < nA; i++) {
    if ((int)strlen(a[i].zName) != n) continue;
    if (bNoCase ? sqlite3_strnicmp(a[i].zName, z, n) == 0 : memcmp(a[i].zName, z, (size_t)n) == 0) {
      return &a[i];
    }
  }
  return NULL;
}

#define QFJ_NPROP ((int)(sizeof aQfjProp / sizeof aQfjProp[0]))
#define QFJ_NBINARY ((int)(sizeof aQfjBinary / sizeof aQfjBinary[0]))
#define QFJ_NPOSIXU ((int)(sizeof aQfjPosixU / sizeof aQfjPosixU[0]))

/* \p{name} or \P{name} (bNot), Java's name resolution: name=value (sc,
** script, gc, general_category; blk and block are refused), In<block>
** (refused: PCRE2 has no blocks), Is<binary property, Unicode POSIX,
** category, ASCII-only or java name, or script>, else a category, POSIX
** or java name. */
static void qfjProperty(QfJava *p, int bNot, int bClass, const char *z, int n) {
  const QfjProp *pProp = NULL;
  const char *zEq = memchr(z, '=', (size_t)n);
  char zScript[80];
  const char *zSet = NULL;
  int j;
  zScript[0] = 0;
  if (zEq) {
    int nKey = (int)(zEq - z), nVal = n - nKey - 1;
    const char *zVal = zEq + 1;
    if ((nKey == 2 && sqlite3_strnicmp(z, "sc", 2) == 0) || (nKey == 6 && sqlite3_strnicmp(z, "script", 6) == 0)) {
      if (nVal > 0 && nVal < 60) sqlite3_snprintf(sizeof zScript, zScript, "\\p{sc:%.*s}", nVal, zVal);
    } else if ((nKey == 2 && sqlite3_strnicmp(z, "gc", 2) == 0)
               || (nKey == 16 && sqlite3_strnicmp(z, "general_category", 16) == 0)) {
      pProp = qfjFind(aQfjProp, QFJ_NPROP, zVal, nVal, 0);
    } else if ((nKey == 3 && sqlite3_strnicmp(z, "blk", 3) == 0) || (nKey == 5 && sqlite3_strnicmp(z, "block", 5) == 0)) {
      qfjWhy(p, "Unicode blocks (\\%c{%.*s}) are not supported: PCRE2 has no block property", bNot ? 'P' : 'p', n, z);
      return;
    }
  } else if (n > 2 && memcmp(z, "In", 2) == 0) {
    qfjWhy(p, "Unicode blocks (\\%c{%.*s}) are not supported: PCRE2 has no block property", bNot ? 'P' : 'p', n, z);
    return;
  } else if (n > 2 && memcmp(z, "Is", 2) == 0) {
    pProp = qfjFind(aQfjBinary, QFJ_NBINARY, z + 2, n - 2, 1);
    if (pProp == NULL) pProp = qfjFind(aQfjPosixU, QFJ_NPOSIXU, z + 2, n - 2, 1);
    if (pProp == NULL) pProp = qfjFind(aQfjProp, QFJ_NPROP, z + 2, n - 2, 0);
    if (pProp == NULL && n - 2 < 60) sqlite3_snprintf(sizeof zScript, zScript, "\\p{sc:%.*s}", n - 2, z + 2);
  } else {
    pProp = qfjFind(aQfjProp, QFJ_NPROP, z, n, 0);
  }
  if (pProp) {
    zSet = (p->flags & QFJ_F_I) && pProp->zSetI ? pProp->zSetI : pProp->zSet;
  } else if (zScript[0]) {
    /* a script (Java: Character.UnicodeScript, the Script property, not
    ** Script_Extensions: PCRE2's sc:), its name letters, digits and _ */
    for (j = 6; zScript[j] != '}'; j++) {
      if (!isalnum((unsigned char)zScript[j]) && zScript[j] != '_') break;
    }
    if (zScript[j] == '}') zSet = zScript;
  }
  if (zSet == NULL) {
    qfjWhy(p, "unknown or unsupported character property \\%c{%.*s}", bNot ? 'P' : 'p', n, z);
    return;
  }
  if (!bClass) {
    /* exact under (?i): Java folds no property (zSetI is the folded set) */
    sqlite3_str_appendf(p->pOut, (p->flags & QFJ_F_I) ? "(?-i:[%s%s])" : "[%s%s]", bNot ? "^" : "", zSet);
  } else if (!bNot) {
    sqlite3_str_appendall(p->pOut, zSet);
  } else if ((zSet[0] == '\\' && strchr(zSet, '}') == zSet + strlen(zSet) - 1)) {
    /* one \p{..} item: its complement is \P{..} and the reverse */
    sqlite3_str_appendf(p->pOut, "\\%c%s", zSet[1] == 'p' ? 'P' : 'p', zSet + 2);
  } else if (zSet[0] == '[' && zSet[1] == ':' && strchr(zSet + 2, ':') == zSet + strlen(zSet) - 2) {
    sqlite3_str_appendf(p->pOut, "[:^%s", zSet + 2);
  } else {
    qfjWhy(p, "\\P{%.*s} inside a character class is not supported: write it outside, as (?:\\P{%.*s}|[...])",
           n, z, n, z);
  }
}

/* The character an escape names by number or control letter (\0 octal,
** \x hex, \u UTF-16, \c control), c being the letter after the
** backslash and *pi the index past it (moved past the escape): the code
** point, or -1 after an error (qfjWhy). */
static int qfjEscapeNumber(QfJava *p, int c, int *pi) {
  const unsigned char *z = p->z;
  int n = p->n, i = *pi, cp = -1, L;
  switch (c) {
    case '0': {
      /* \0n, \0nn, \0mnn (m at most 3) */
      int d1, v;
      if (i >= n || z[i] < '0' || z[i] > '7') {
        qfjWhy(p, "\\0 must be followed by an octal digit (\\0n, \\0nn or \\0mnn)");
        return -1;
      }
      d1 = z[i++] - '0';
      v = d1;
      if (i < n && z[i] >= '0' && z[i] <= '7') {
        v = v * 8 + (z[i++] - '0');
        if (d1 <= 3 && i < n && z[i] >= '0' && z[i] <= '7') v = v * 8 + (z[i++] - '0');
      }
      cp = v;
      break;
    }
    case 'x': {
      if (i < n && z[i] == '{') {
        int j = i + 1, v = 0;
        while (j < n && qfjHex(z[j]) >= 0 && v <= 0x10FFFF) v = v * 16 + qfjHex(z[j++]);
        if (j == i + 1 || j >= n || z[j] != '}' || v > 0x10FFFF) {
          qfjWhy(p, "\\x{...} must hold a code point in hex, at most 10FFFF");
          return -1;
        }
        cp = v;
        i = j + 1;
      } else if (i + 1 < n && qfjHex(z[i]) >= 0 && qfjHex(z[i + 1]) >= 0) {
        cp = qfjHex(z[i]) * 16 + qfjHex(z[i + 1]);
        i += 2;
      } else {
        qfjWhy(p, "\\x must be followed by two hex digits or {h...h}");
        return -1;
      }
      break;
    }
    case 'u': {
      int v = i + 4 <= n ? ednHex4(z + i) : -1;
      if (v < 0) {
        qfjWhy(p, "\\u must be followed by four hex digits");
        return -1;
      }
      i += 4;
      if (v >= 0xD800 && v <= 0xDBFF && i + 6 <= n && z[i] == '\\' && z[i + 1] == 'u') {
        /* a surrogate pair written as two escapes is one code point */
        int lo = ednHex4(z + i + 2);
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
          v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
          i += 6;
        }
      }
      if (v >= 0xD800 && v <= 0xDFFF) {
        qfjWhy(p, "\\u%04X is half of a UTF-16 surrogate pair, which no UTF-8 text holds", (unsigned)v);
        return -1;
      }
      cp = v;
      break;
    }
    default:   /* 'c' */
      if (i >= n) {
        qfjWhy(p, "\\c must be followed by a character");
        return -1;
      }
      cp = qfjChar(p, i, &L) ^ 64;     /* Java: the character xor 64, any case */
      i += L;
      break;
  }
  *pi = i;
  return cp;
}

/* A back reference \N, c its first digit and *pi the index past it (moved
** past the number): more digits while the number stays within the groups
** opened so far (Java), never octal (PCRE2's reading). */
static void qfjBackref(QfJava *p, int c, int *pi) {
  const unsigned char *z = p->z;
  int n = p->n, i = *pi, v = c - '0';
  while (i < n && z[i] >= '0' && z[i] <= '9' && v * 10 + (z[i] - '0') <= p->nGroup) {
    v = v * 10 + (z[i++] - '0');
  }
  if (p->nGroupAll >= 0 && v > p->nGroupAll) {
    /* a group the pattern does not have: Java compiles it (Matcher
    ** keeps at least 10 group slots) and it never matches */
    sqlite3_str_appendall(p->pOut, "(?:(?!))");
  } else if (QFJ_ASCII_FOLD(p) && v <= 255 - QF_JAVA_BACKREF_CALLOUT) {
    /* PCRE2 folds every letter: a callout keeps it to ASCII ones */
    sqlite3_str_appendf(p->pOut, "(?:\\g{%d}(?C%d))", v, QF_JAVA_BACKREF_CALLOUT + v);
  } else if (QFJ_ASCII_FOLD(p)) {
    sqlite3_str_appendf(p->pOut, "(?:\\g{%d}(?C\"%d\"))", v, v);
  } else {
    sqlite3_str_appendf(p->pOut, "\\g{%d}", v);
  }
  *pi = i;
}

/* The escape at p->i (a backslash); bClass inside a character class. */
static void qfjEscape(QfJava *p, int bClass) {
  const unsigned char *z = p->z;
  int n = p->n, i = p->i + 1, c, cp = -1, L;
  if (i >= n) {
    qfjWhy(p, "a \\ at the end escapes nothing");
    return;
  }
  c = z[i++];
  if (bClass && strchr("123456789bBAzZGRXk", c)) {
    qfjWhy(p, "\\%c is not allowed inside a character class", c);
    return;
  }
  switch (c) {
    case 'Q': {
      /* \Q...\E: literal up to \E or the end */
      i = qfjQuote(p, i);
      break;
    }
    case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
      qfjBackref(p, c, &i);
      break;
    case '0': case 'x': case 'u': case 'c':
      cp = qfjEscapeNumber(p, c, &i);
      if (cp < 0) return;
      break;
    case 't': cp = '\t'; break;
    case 'n': cp = '\n'; break;
    case 'r': cp = '\r'; break;
    case 'f': cp = '\f'; break;
    case 'a': cp = 7; break;
    case 'e': cp = 27; break;
    case 'd': case 'D': case 's': case 'S': case 'w': case 'W':
    case 'h': case 'H': case 'v': case 'V': case 'X':
      /* the same sets in PCRE2 without UCP */
      sqlite3_str_appendf(p->pOut, "\\%c", c);
      break;
    case 'A': case 'z': case 'B':
      /* the same assertions in PCRE2 without UCP; in a group, which PCRE2
      ** lets a quantifier follow as Java does every zero-width atom */
      sqlite3_str_appendf(p->pOut, "(?:\\%c)", c);
      break;
    case 'b':
      if (i < n && z[i] == '{') {
        qfjWhy(p, "\\b{...} (a grapheme cluster boundary) is not supported");
        return;
      }
      sqlite3_str_appendall(p->pOut, "(?:\\b)");
      break;
    case 'Z':
      qfjDollar(p, 0);
      break;
    case 'G':
      /* the end of the previous match: a callout checks it (PCRE2's \G is
      ** the start of the search, one character on after an empty match) */
      sqlite3_str_appendall(p->pOut, "(?:(?C1))");
      break;
    case 'R':
      sqlite3_str_appendall(p->pOut, "(?:\\r\\n|[\\n\\x{B}\\f\\r\\x{85}\\x{2028}\\x{2029}])");
      break;
    case 'k': {
      int j = i + 1;
      if (i < n && z[i] == '<' && j < n && z[j] < 0x80 && isalpha(z[j])) {
        while (j < n && z[j] < 0x80 && isalnum(z[j])) j++;
      }
      if (j >= n || z[j] != '>' || j == i + 1) {
        qfjWhy(p, "\\k must be followed by <name>");
        return;
      }
      /* under ASCII-only folding a callout checks it, as \N's */
      sqlite3_str_appendf(p->pOut, QFJ_ASCII_FOLD(p) ? "(?:\\k<%.*s>(?C\"%.*s\"))" : "\\k<%.*s>",
                          j - i - 1, z + i + 1, j - i - 1, z + i + 1);
      i = j + 1;
      break;
    }
    case 'p': case 'P': {
      if (i < n && z[i] == '{') {
        const unsigned char *zEnd = memchr(z + i, '}', (size_t)(n - i));
        if (zEnd == NULL) {
          qfjWhy(p, "\\%c{ has no closing }", c);
          return;
        }
        qfjProperty(p, c == 'P', bClass, (const char*)z + i + 1, (int)(zEnd - z - i - 1));
        i = (int)(zEnd - z) + 1;
      } else if (i < n && z[i] < 0x80 && isalpha(z[i])) {
        qfjProperty(p, c == 'P', bClass, (const char*)z + i, 1);    /* \pL */
        i++;
      } else {
        qfjWhy(p, "\\%c must be followed by a property name", c);
        return;
      }
      break;
    }
    default:
      if (c < 0x80 && isalpha(c)) {
        /* Java reserves every other escaped letter (an error there) */
        qfjWhy(p, "\\%c is not an escape of Java's regular expressions", c);
        return;
      }
      if (c < 0x80) {
        /* an escaped non-letter is that character */
        cp = c;
      } else {
        i--;
        cp = qfjChar(p, i, &L);
        i += L;
      }
      break;
  }
  if (cp >= 0) qfjCodePoint(p, cp);
  p->i = i;
}

/* Appends a class operand to pOp: plain members zS (NULL for none; negated
** when bNeg), then nNest nested classes zN ("|A|B"); under ASCII-only folding
** zS folded (qfJavaFoldClass; in the second pass, whose text is kept). */
static void qfjOperand(QfJava *p, sqlite3_str *pOp, const char *zS, const char *zN, int nNest,
                       int bNeg) {
  if (zS && QFJ_ASCII_FOLD(p) && p->nGroupAll >= 0) {
    char *zF = NULL;
    if (qfJavaFoldClass(zS, bNeg && nNest == 0, &zF) != SQLITE_OK) p->bNoMem = 1;
    else if (nNest == 0) sqlite3_str_appendall(pOp, zF);
    else sqlite3_str_appendf(pOp, "(?:%s%s)", zF, zN);
    sqlite3_free(zF);
  } else if (nNest == 0) sqlite3_str_appendf(pOp, "[%s%s]", bNeg ? "^" : "", zS);
  else if (zS == NULL && nNest == 1) sqlite3_str_appendall(pOp, zN + 1);
  else if (zS == NULL) sqlite3_str_appendf(pOp, "(?:%s)", zN + 1);
  else sqlite3_str_appendf(pOp, "(?:[%s]%s)", zS, zN);
}

/* A character class at p->i ('['), written to p->pOut. A plain class stays
** a PCRE2 class; Java's union ([a-d[m-p]]: a nested class adds its
** members) and intersection ([a-z&&[^aeiou]]: && binds loosest) become
** one-character alternations and look-aheads: (?:(?=B)A) is A and B, as
** each side matches exactly one character. POSIX's [[:digit:]] is Java's
** union of the characters :digt. A negated class with a union or && is
** refused (Java 8 and 9 read it differently). */
#define QFJ_CLASS_NEST 32
static void qfjClass(QfJava *p, int iDepth) {
  sqlite3_str *pSave = p->pOut;
  sqlite3_str *pFirst = NULL;          /* the first operand of && */
  sqlite3_str *pAhead = sqlite3_str_new(NULL);     /* (?=operand) of the others */
  sqlite3_str *pSimple = NULL;         /* this operand's plain members */
  sqlite3_str *pNest = NULL;           /* |nested class ... of this operand */
  int bNeg = 0, nOperand = 0, nNest = 0, bAnyNest = 0, bEnd = 0;
  p->nClass++;                         /* undone at done */
  if (iDepth >= QFJ_CLASS_NEST) {
    qfjWhy(p, "character classes nest more than %d deep", QFJ_CLASS_NEST);
    goto done;
  }
  p->i++;
  if (p->i < p->n && p->z[p->i] == '^') {
    bNeg = 1;
    p->i++;
  }
  qfjSkipSpace(p);
  while (p->zWhy == NULL && !p->bNoMem && !bEnd) {
    int c, L, bClose;
    if (pSimple == NULL) {
      pSimple = sqlite3_str_new(NULL);
      pNest = sqlite3_str_new(NULL);
      nNest = 0;
      if (nOperand == 0 && p->i < p->n && p->z[p->i] == ']') {
        /* ']' first is a member */
        sqlite3_str_appendall(pSimple, "\\]");
        p->i++;
      }
    }
    qfjSkipSpace(p);
    if (p->i >= p->n) {
      qfjWhy(p, "missing terminating ] for character class");
      break;
    }
    c = p->z[p->i];
    bClose = c == ']';
    if (bClose || (c == '&' && p->i + 1 < p->n && p->z[p->i + 1] == '&')) {
      /* the operand ends */
      sqlite3_str *pOp;
      char *zS, *zN;
      int nS = sqlite3_str_length(pSimple), nN = sqlite3_str_length(pNest);
      p->i += bClose ? 1 : 2;
      bEnd = bClose;
      if (nS == 0 && nNest == 0) {
        qfjWhy(p, "a character class or an operand of && is empty");
        break;
      }
      zS = sqlite3_str_finish(pSimple);
      zN = sqlite3_str_finish(pNest);
      pSimple = pNest = NULL;
      pOp = nOperand == 0 ? (pFirst = sqlite3_str_new(NULL)) : pAhead;
      if ((nS && zS == NULL) || (nN && zN == NULL)) p->bNoMem = 1;
      if (nOperand > 0) sqlite3_str_appendall(pOp, "(?=");
      if (!p->bNoMem) qfjOperand(p, pOp, nS ? zS : NULL, zN, nNest, bNeg);
      if (nOperand > 0) sqlite3_str_appendall(pOp, ")");
      sqlite3_free(zS);
      sqlite3_free(zN);
      nOperand++;
    } else if (c == '[') {
      p->pOut = pNest;
      sqlite3_str_appendchar(pNest, 1, '|');
      qfjClass(p, iDepth + 1);
      p->pOut = pSave;
      nNest++;
      bAnyNest = 1;
    } else if (c == '\\') {
      p->pOut = pSimple;
      qfjEscape(p, 1);
      p->pOut = pSave;
    } else if (c == ':') {
      /* never PCRE2's [:name:] */
      sqlite3_str_appendall(pSimple, "\\:");
      p->i++;
    } else {
      qfjChar(p, p->i, &L);
      sqlite3_str_append(pSimple, (const char*)p->z + p->i, L);
      p->i += L;
    }
  }
  if (p->zWhy == NULL && !p->bNoMem && bNeg && (nOperand > 1 || bAnyNest)) {
    qfjWhy(p, "a negated class with a nested class or && ([^...[...]], [^...&&...]) is not supported");
  }
  if (p->zWhy == NULL && !p->bNoMem) {
    char *zF, *zA;
    int nF = sqlite3_str_length(pFirst), nA = sqlite3_str_length(pAhead);
    zF = sqlite3_str_finish(pFirst);
    zA = sqlite3_str_finish(pAhead);
    pFirst = pAhead = NULL;
    if ((nF && zF == NULL) || (nA && zA == NULL)) p->bNoMem = 1;
    else {
      /* folded already (qfJavaFoldClass): PCRE2 matches it exactly */
      int bExact = iDepth == 0 && QFJ_ASCII_FOLD(p);
      if (bExact) sqlite3_str_appendall(p->pOut, "(?-i:");
      if (nOperand == 1) sqlite3_str_appendall(p->pOut, zF);
      else sqlite3_str_appendf(p->pOut, "(?:%s%s)", zA, zF);
      if (bExact) sqlite3_str_appendchar(p->pOut, 1, ')');
    }
    sqlite3_free(zF);
    sqlite3_free(zA);
  }
done:
  p->nClass--;
  p->pOut = pSave;
  if (pSimple && sqlite3_str_errcode(pSimple)) p->bNoMem = 1;
  if (sqlite3_str_errcode(pSave)) p->bNoMem = 1;
  sqlite3_free(sqlite3_str_finish(pSimple));
  sqlite3_free(sqlite3_str_finish(pNest));
  sqlite3_free(sqlite3_str_finish(pFirst));
  sqlite3_free(sqlite3_str_finish(pAhead));
}

/* A group at p->i ('('): capturing, named, (?:, lookaround, atomic, or
** inline flags (Java's i d m s u x; U and any other letter refused). */
static void qfjGroup(QfJava *p) {
  const unsigned char *z = p->z;
  int n = p->n, i;
  if (p->nNest >= QFJ_NEST) {
    qfjWhy(p, "groups nest more than %d deep", QFJ_NEST);
    return;
  }
  p->i++;
  qfjSkipSpace(p);
  i = p->i;
  if (i < n && z[i] == '*') {
    qfjWhy(p, "a * must follow something to repeat (PCRE2 would read (* as a verb)");
    return;
  }
  if (i >= n || z[i] != '?') {
    p->aSave[p->nNest++] = p->flags;
    p->nGroup++;
    sqlite3_str_appendchar(p->pOut, 1, '(');
    return;
  }
  i++;
  if (i < n && (z[i] == ':' || z[i] == '=' || z[i] == '!' || z[i] == '>')) {
    p->aSave[p->nNest++] = p->flags;
    sqlite3_str_appendf(p->pOut, "(?%c", z[i]);
    p->i = i + 1;
  } else if (i + 1 < n && z[i] == '<' && (z[i + 1] == '=' || z[i + 1] == '!')) {
    p->aSave[p->nNest++] = p->flags;
    sqlite3_str_appendf(p->pOut, "(?<%c", z[i + 1]);
    p->i = i + 2;
  } else if (i < n && z[i] == '<') {
    /* (?<name>X): a letter, then letters and digits */
    int j = i + 1;
    if (j < n && z[j] < 0x80 && isalpha(z[j])) {
      while (j < n && z[j] < 0x80 && isalnum(z[j])) j++;
    }
    if (j == i + 1 || j >= n || z[j] != '>') {
      qfjWhy(p, "a group name must be a letter then letters or digits, in (?<name>X)");
      return;
    }
    p->aSave[p->nNest++] = p->flags;
    p->nGroup++;
    sqlite3_str_appendf(p->pOut, "(?<%.*s>", j - i - 1, z + i + 1);
    p->i = j + 1;
  } else {
    int on = 0, off = 0, bNeg = 0, j;
    for (j = i; j < n && z[j] != ')' && z[j] != ':'; j++) {
      int f = 0;
      switch (z[j]) {
        case 'i': f = QFJ_F_I; break;
        case 'm': f = QFJ_F_M; break;
        case 's': f = QFJ_F_S; break;
        case 'd': f = QFJ_F_D; break;
        case 'x': f = QFJ_F_X; break;
        case 'u': f = QFJ_F_U; break;   /* UNICODE_CASE: (?i) folds every letter */
        case '-':
          if (!bNeg) { bNeg = 1; break; }
          /* fall through */
        default:
          if (z[j] == 'U') {
            qfjWhy(p, "the inline flag U (UNICODE_CHARACTER_CLASS) is not supported (only i, d, m, s, u and x)");
          } else if (j == i) {
            qfjWhy(p, "unknown group construct (?%c", z[j]);
          } else {
            qfjWhy(p, "unknown inline flag %c (Java's are i d m s u x U)", z[j]);
          }
          return;
      }
      if (bNeg) off |= f;
      else on |= f;
    }
    if (j >= n) {
      qfjWhy(p, "unclosed group");
      return;
    }
    if (z[j] == ':') {
      p->aSave[p->nNest++] = p->flags;
      sqlite3_str_appendf(p->pOut, "(?%s%s:", (on & QFJ_F_I) ? "i" : "", (off & QFJ_F_I) ? "-i" : "");
    } else if ((on | off) & QFJ_F_I) {
      sqlite3_str_appendf(p->pOut, "(?%s%s)", (on & QFJ_F_I) ? "i" : "", (off & QFJ_F_I) ? "-i" : "");
    }
    p->flags = (p->flags | on) & ~off;
    p->i = j + 1;
  }
}

/* Translates the whole pattern (see QfJava). */
static void qfjRun(QfJava *p) {
  while (p->zWhy == NULL && !p->bNoMem) {
    int c, L;
    qfjSkipSpace(p);
    qfjMark(p);
    if (p->i >= p->n) break;
    c = p->z[p->i];
    switch (c) {
      case '\\': qfjEscape(p, 0); break;
      case '[': qfjClass(p, 0); break;
      case '(': qfjGroup(p); break;
      case ')':
        /* an unmatched one is PCRE2's error */
        if (p->nNest > 0) p->flags = p->aSave[--p->nNest];
        sqlite3_str_appendchar(p->pOut, 1, ')');
        p->i++;
        break;
      case '.':
        if (p->flags & QFJ_F_S) sqlite3_str_appendall(p->pOut, "(?s:.)");
        else sqlite3_str_appendf(p->pOut, "[^%s]", qfjLineEnds(p));
        p->i++;
        break;
      case '^':
        /* MULTILINE: at the start or after a line terminator (not inside
        ** \r\n), never at the end of the text (Java's Caret) */
        if (!(p->flags & QFJ_F_M)) sqlite3_str_appendall(p->pOut, "(?:\\A)");
        else if (p->flags & QFJ_F_D) sqlite3_str_appendall(p->pOut, "(?:(?<![^\\n])(?!\\z))");
        else sqlite3_str_appendf(p->pOut, "(?:(?<![^%s])(?!(?<=\\r)\\n)(?!\\z))", qfjLineEnds(p));
        p->i++;
        break;
      case '$':
        qfjDollar(p, (p->flags & QFJ_F_M) != 0);
        p->i++;
        break;
      case '{': {
        /* only a repetition {n}, {n,} or {n,m} (Java: illegal repetition) */
        int j = p->i + 1, a = j;
        while (j < p->n && p->z[j] >= '0' && p->z[j] <= '9') j++;
        if (j > a && j < p->n && p->z[j] == ',') {
          j++;
          while (j < p->n && p->z[j] >= '0' && p->z[j] <= '9') j++;
        }
        if (j == a || j >= p->n || p->z[j] != '}') {
          qfjWhy(p, "a { must begin a repetition {n}, {n,} or {n,m}: write \\{ for the character");
          break;
        }
        sqlite3_str_append(p->pOut, (const char*)p->z + p->i, j + 1 - p->i);
        p->i = j + 1;
        break;
      }
      default:
        qfjChar(p, p->i, &L);
        if (QFJ_WIDE(c) && QFJ_ASCII_FOLD(p)) {
          qfjCodePoint(p, c);
        } else if (c >= 0x80 && QFJ_ASCII_FOLD(p)) {
          /* no case of its own under ASCII-only folding */
          sqlite3_str_appendall(p->pOut, "(?-i:");
          sqlite3_str_append(p->pOut, (const char*)p->z + p->i, L);
          sqlite3_str_appendchar(p->pOut, 1, ')');
        } else {
          sqlite3_str_append(p->pOut, (const char*)p->z + p->i, L);
        }
        p->i += L;
        break;
    }
  }
}

/* Writes Java's pattern z (n bytes) as PCRE2 reads it into *pzOut
** (sqlite3_malloc'd, *pnOut bytes), with *paMap (sqlite3_malloc'd, *pnMap
** ints: pairs of an offset in *pzOut and the offset in z it came from), or
** fails with the reason ("invalid regular expression ...", SQLITE_ERROR;
** SQLITE_NOMEM). */
int qfJavaTranslate(const char *z, int n, char **pzOut, int *pnOut, int **paMap, int *pnMap,
                       char **pzErr) {
  QfJava j;
  int rc, nGroupAll;
  /* a first pass counts the groups, which a back reference to a later or
  ** missing group needs */
  memset(&j, 0, sizeof j);
  j.z = (const unsigned char*)z;
  j.n = n;
  j.nGroupAll = -1;
  j.pOut = sqlite3_str_new(NULL);
  qfjRun(&j);
  nGroupAll = j.nGroup;
  sqlite3_free(sqlite3_str_finish(j.pOut));
  sqlite3_free(j.aMap);
  memset(&j, 0, sizeof j);
  j.z = (const unsigned char*)z;
  j.n = n;
  j.nGroupAll = nGroupAll;
  j.pOut = sqlite3_str_new(NULL);
  *pzOut = NULL;
  *pnOut = 0;
  qfjRun(&j);
  *pnOut = sqlite3_str_length(j.pOut);
  rc = sqlite3_str_errcode(j.pOut);
  *pzOut = sqlite3_str_finish(j.pOut);
  if (j.bNoMem) rc = SQLITE_NOMEM;
  if (rc == SQLITE_OK && j.zWhy) rc = qfJavaInvalid(pzErr, z, n, j.zWhy);
  if (rc == SQLITE_OK && *pzOut == NULL) {
    /* the empty pattern (sqlite3_str_finish gives NULL for no text) */
    *pzOut = sqlite3_malloc(1);
    if (*pzOut) (*pzOut)[0] = 0;
    else rc = SQLITE_NOMEM;
  }
  if (rc != SQLITE_OK) {
    sqlite3_free(*pzOut);
    *pzOut = NULL;
    sqlite3_free(j.aMap);
    j.aMap = NULL;
    j.nMap = 0;
    if (rc != SQLITE_ERROR) rc = SQLITE_NOMEM;
  }
  *paMap = j.aMap;
  *pnMap = j.nMap;
  return rc;
}
