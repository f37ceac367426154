// Package mentat registers libmentat_sqlite with SQLite's auto-extension list, so every
// connection any SQLite driver of the process opens afterwards (mattn/go-sqlite3 and its
// database/sql pool among them) has edn_t, edn_q, edn_pull and mentat_version:
//
//	import (
//		"database/sql"
//		_ "github.com/mattn/go-sqlite3"
//		"libmentat_sqlite/go/mentat"
//	)
//
//	if err := mentat.Auto(); err != nil { ... }   // before the first sql.Open
//	db, _ := sql.Open("sqlite3", "app.db")
//
// The package uses cgo and links the system libsqlite3, the library mattn/go-sqlite3 uses
// when built with the libsqlite3 tag (Debian's golang-github-mattn-go-sqlite3-dev always
// is). It loads the built extension with dlopen: Auto() finds it by its bare name, where
// `make install` and the .deb put it (the loader's paths), AutoPath takes a file.
//
// The package is the module libmentat_sqlite/go/mentat (go.mod beside this file, no
// dependencies), on no proxy: a program requires it with a replace directive pointing at
// this folder, and Debian's mattn/go-sqlite3 likewise at /usr/share/gocode (README.md,
// "Installing", Go; smoke/pkg_go.sh runs those steps). GOPATH mode finds it as
// $GOPATH/src/libmentat_sqlite/go/mentat.
package mentat

/*
#cgo LDFLAGS: -lsqlite3 -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <sqlite3.h>

typedef int (*mentat_init_fn)(sqlite3 *, char **, const sqlite3_api_routines *);

// dlopens path and hands its entry point to sqlite3_auto_extension. The handle is kept
// for the life of the process: the auto-extension list points into it.
static const char *mentat_auto(const char *path) {
	void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	void *init;
	if (h == NULL) return dlerror();
	init = dlsym(h, "sqlite3_mentatsqlite_init");
	if (init == NULL) return "libmentat_sqlite: no sqlite3_mentatsqlite_init in the library";
	if (sqlite3_auto_extension((void (*)(void))init) != SQLITE_OK)
		return "libmentat_sqlite: sqlite3_auto_extension failed";
	return NULL;
}

static void mentat_cancel(const char *path) {
	void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	if (h == NULL) return;
	void *init = dlsym(h, "sqlite3_mentatsqlite_init");
	if (init) sqlite3_cancel_auto_extension((void (*)(void))init);
	dlclose(h);
}
*/
import "C"

import (
	"errors"
	"sync"
	"unsafe"
)

// Name is the file name Auto loads through the loader's search path.
const Name = "libmentat_sqlite.so"

var mu sync.Mutex

// Auto registers the installed extension (Name, found the way dlopen finds libraries:
// LD_LIBRARY_PATH, ld.so.cache, /usr/lib/<multiarch>) for every SQLite connection opened
// after it. Calling it again is harmless (SQLite keeps one entry per entry point).
func Auto() error { return AutoPath(Name) }

// AutoPath is Auto for the extension at path (e.g. "./build/libmentat_sqlite.so").
func AutoPath(path string) error {
	mu.Lock()
	defer mu.Unlock()
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	if msg := C.mentat_auto(cpath); msg != nil {
		return errors.New(C.GoString(msg))
	}
	return nil
}

// Cancel takes the extension loaded from path (Name for Auto's) off the auto-extension
// list; connections already open keep it.
func Cancel(path string) {
	mu.Lock()
	defer mu.Unlock()
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	C.mentat_cancel(cpath)
}
