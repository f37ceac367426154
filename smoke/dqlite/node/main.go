// smoke/dqlite/node — a dqlite node with libmentat_sqlite on every
// connection: the replicated cluster and the server mode.
//
// It dlopens the built extension (-ext, or $MENTAT_SO) and registers its
// entry point with sqlite3_auto_extension before dqlite opens any
// connection, so every connection dqlite opens, on the leader and on the
// followers, has edn_t / edn_q / edn_pull. Then it runs a node through
// go-dqlite's app package and serves the dqlite wire protocol on -addr.
// Clients need nothing of ours: any dqlite client (go-dqlite's database/sql
// driver, see ../client) sends SQL, the leader runs it.
//
// Usage:
//
//	node -dir DIR -addr HOST:PORT [-join HOST:PORT,...] [-ext PATH] [-probe]
//
// The first node starts without -join and bootstraps the cluster; the others
// join through any member. A restarted node finds its identity in DIR (it
// keeps its address). -probe also registers the test-only probe_* functions
// of probe.c (smoke/dqlite/NOTES.md). It prints 'ready id=N addr=A' once the
// node has joined, and hands its roles over on SIGTERM or SIGINT.
//
// Built offline against Debian's golang-github-canonical-go-dqlite-dev and
// libdqlite-dev (GOPATH=/usr/share/gocode GO111MODULE=off).
package main

/*
#cgo LDFLAGS: -ldl -lsqlite3
#include <stdlib.h>
#include "register.h"
*/
import "C"

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/canonical/go-dqlite/app"
	"github.com/canonical/go-dqlite/client"
)

func register(path, entry string) error {
	cPath := C.CString(path)
	defer C.free(unsafe.Pointer(cPath))
	cEntry := C.CString(entry)
	defer C.free(unsafe.Pointer(cEntry))
	buf := (*C.char)(C.malloc(512))
	defer C.free(unsafe.Pointer(buf))
	if C.mentatNodeRegister(cPath, cEntry, buf, 512) != 0 {
		return fmt.Errorf("%s", C.GoString(buf))
	}
	return nil
}

func main() {
	dir := flag.String("dir", "", "node data directory (created if missing)")
	addr := flag.String("addr", "", "address this node serves and replicates on, HOST:PORT")
	join := flag.String("join", "", "comma-separated addresses of existing members (empty: bootstrap)")
	ext := flag.String("ext", os.Getenv("MENTAT_SO"), "path of libmentat_sqlite.so (default $MENTAT_SO)")
	entry := flag.String("entry", "sqlite3_mentatsqlite_init", "extension entry point")
	probe := flag.Bool("probe", false, "also register the test-only probe_* functions")
	latency := flag.Duration("latency", 0, "one-way network latency for raft timeouts (0: dqlite's default)")
	verbose := flag.Bool("v", false, "log dqlite's messages")
	flag.Parse()
	log.SetPrefix(fmt.Sprintf("node %s: ", *addr))
	log.SetFlags(log.Lmicroseconds)
	if *dir == "" || *addr == "" || *ext == "" {
		log.Fatal("usage: node -dir DIR -addr HOST:PORT [-join HOST:PORT,...] -ext libmentat_sqlite.so")
	}
	if err := register(*ext, *entry); err != nil {
		log.Fatal(err)
	}
	if *probe && C.mentatProbeRegister() != 0 {
		log.Fatal("cannot register the probe functions")
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		log.Fatal(err)
	}

	opts := []app.Option{app.WithAddress(*addr), app.WithLogFunc(func(l client.LogLevel, format string, a ...interface{}) {
		if *verbose || l >= client.LogWarn {
			log.Printf("%s: %s", l, fmt.Sprintf(format, a...))
		}
	})}
	if *join != "" {
		opts = append(opts, app.WithCluster(strings.Split(*join, ",")))
	}
	if *latency > 0 {
		opts = append(opts, app.WithNetworkLatency(*latency))
	}
	node, err := app.New(*dir, opts...)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err = node.Ready(ctx)
	cancel()
	if err != nil {
		log.Fatalf("not ready: %v", err)
	}
	fmt.Printf("ready id=%d addr=%s\n", node.ID(), node.Address())

	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	<-ch
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	node.Handover(ctx)
	cancel()
	node.Close()
}
