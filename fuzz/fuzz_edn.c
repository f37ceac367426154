/*
** fuzz_edn.c — libFuzzer harness for the EDN reader and printers.
**
** Any input must read without crashing, leaking or overrunning the buffer
** (the input is passed with its exact length, not NUL-terminated). When it
** reads, every form must print, and the printed text must read back to an
** equal tree (NaN excepted: it equals nothing); the JSON printer must not
** crash either. `sh fuzz/run.sh [SECONDS]` builds it with ASan+UBSan into
** build/fuzz/ and runs it from the seeds in fuzz/corpus/.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "edn.h"

int LLVMFuzzerTestOneInput(const uint8_t *aData, size_t nData);

int LLVMFuzzerTestOneInput(const uint8_t *aData, size_t nData) {
  EdnArena arena;
  EdnValue **aForm = NULL;
  int nForm = 0, i;
  EdnError err;
  char *zCopy;
  if (nData > 1000000) return 0;
  /* An exact-size heap copy, so ASan sees any read past the end. */
  zCopy = malloc(nData ? nData : 1);
  if (zCopy == NULL) return 0;
  memcpy(zCopy, aData, nData);
  ednArenaInit(&arena);
  if (ednReadAll(&arena, zCopy, (int)nData, &aForm, &nForm, &err) == SQLITE_OK) {
    for (i = 0; i < nForm; i++) {
      sqlite3_str *pStr = sqlite3_str_new(NULL);
      sqlite3_str *pJson = sqlite3_str_new(NULL);
      char *zText, *zJson;
      int nText;
      EdnValue *pBack = NULL;
      ednPrint(pStr, aForm[i]);
      nText = sqlite3_str_length(pStr);
      zText = sqlite3_str_finish(pStr);
      ednPrintJson(pJson, aForm[i]);
      zJson = sqlite3_str_finish(pJson);
      if (zText) {
        if (ednReadOne(&arena, zText, nText, &pBack, &err) != SQLITE_OK) {
          __builtin_trap();   /* printed EDN must read back */
        }
        if (strstr(zText, "##NaN") == NULL && !ednEqual(aForm[i], pBack)) {
          __builtin_trap();   /* and give the same tree */
        }
      }
      sqlite3_free(zText);
      sqlite3_free(zJson);
    }
  }
  ednArenaReset(&arena);
  free(zCopy);
  return 0;
}
