// smoke/dqlite/check — the cluster checks of smoke/dqlite.sh, on go-dqlite's
// client package and database/sql driver (no extension on this side).
//
//	check leader -cluster A,B,C              prints the leader's address
//	check roles -cluster A,B,C               prints 'address role' per member
//	check dump -node A -db NAME -out DIR     writes node A's own copy of the
//	                                         database (DIR/NAME, DIR/NAME-wal),
//	                                         dqlite's dump request, which any
//	                                         member answers from its own state
//	check load -cluster A,B,C -db NAME -out FILE -stop FILE [-pause D]
//	                                         transacts until FILE -stop exists,
//	                                         appending 'seq tx kind' to -out for
//	                                         every acknowledged transaction
//	check bench -via A -db NAME [-n N]       figures through node A's client
//	                                         (the driver reaches the leader):
//	                                         host-store tx/s and point-lookup
//	                                         p50
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/canonical/go-dqlite/client"
	"github.com/canonical/go-dqlite/driver"
)

func die(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "check: "+format+"\n", a...)
	os.Exit(1)
}

func store(cluster string) client.NodeStore {
	s := client.NewInmemNodeStore()
	var nodes []client.NodeInfo
	for _, a := range strings.Split(cluster, ",") {
		nodes = append(nodes, client.NodeInfo{Address: a})
	}
	s.Set(context.Background(), nodes)
	return s
}

func quiet(client.LogLevel, string, ...interface{}) {}

func leader(args []string) {
	fs := flag.NewFlagSet("leader", flag.ExitOnError)
	cluster := fs.String("cluster", "", "node addresses")
	fs.Parse(args)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cli, err := client.FindLeader(ctx, store(*cluster), client.WithLogFunc(quiet))
	if err != nil {
		die("no leader: %v", err)
	}
	defer cli.Close()
	info, err := cli.Leader(ctx)
	if err != nil || info == nil || info.Address == "" {
		die("no leader: %v", err)
	}
	fmt.Println(info.Address)
}

func roles(args []string) {
	fs := flag.NewFlagSet("roles", flag.ExitOnError)
	cluster := fs.String("cluster", "", "node addresses")
	fs.Parse(args)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cli, err := client.FindLeader(ctx, store(*cluster), client.WithLogFunc(quiet))
	if err != nil {
		die("no leader: %v", err)
	}
	defer cli.Close()
	nodes, err := cli.Cluster(ctx)
	if err != nil {
		die("cluster: %v", err)
	}
	for _, n := range nodes {
		fmt.Printf("%s %s\n", n.Address, n.Role)
	}
}

func dump(args []string) {
	fs := flag.NewFlagSet("dump", flag.ExitOnError)
	node := fs.String("node", "", "node address")
	db := fs.String("db", "mentat", "database name")
	out := fs.String("out", "", "output directory")
	fs.Parse(args)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cli, err := client.New(ctx, *node, client.WithLogFunc(quiet))
	if err != nil {
		die("connect %s: %v", *node, err)
	}
	defer cli.Close()
	files, err := cli.Dump(ctx, *db)
	if err != nil {
		die("dump %s on %s: %v", *db, *node, err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		die("%v", err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(*out, f.Name), f.Data, 0o644); err != nil {
			die("%v", err)
		}
	}
}

// transact runs transaction number seq and returns its txlog row id and
// kind. Even numbers insert a row with a plain exec; odd numbers transact
// on the host store, edn_t(':main', '[{:probe/seq <seq>}]'), and log the
// Datomic tx id it reports in the same transaction (kind 'edn:<tx id>').
// A write made by a function inside a SELECT is replicated by dqlite only
// inside an explicit transaction (NOTES.md; edn_t refuses autocommit on
// dqlite), hence BEGIN ... COMMIT around it: the datoms and the txlog row
// commit together or not at all.
func transact(ctx context.Context, db *sql.DB, seq int64) (int64, string, error) {
	if seq%2 == 0 {
		res, err := db.ExecContext(ctx, "INSERT INTO txlog(seq, kind) VALUES(?, 'insert')", seq)
		if err != nil {
			return 0, "", err
		}
		id, err := res.LastInsertId()
		return id, "insert", err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, "", err
	}
	var ednTx int64
	err = tx.QueryRowContext(ctx, "SELECT edn_t(':main', ?) ->> 'tx_id'",
		fmt.Sprintf("[{:probe/seq %d}]", seq)).Scan(&ednTx)
	if err != nil {
		tx.Rollback()
		return 0, "", err
	}
	kind := fmt.Sprintf("edn:%d", ednTx)
	res, err := tx.ExecContext(ctx, "INSERT INTO txlog(seq, kind) VALUES(?, ?)", seq, kind)
	if err != nil {
		tx.Rollback()
		return 0, "", err
	}
	id, err := res.LastInsertId()
	if err != nil {
		tx.Rollback()
		return 0, "", err
	}
	if err := tx.Commit(); err != nil {
		return 0, "", err
	}
	return id, kind, nil
}

func load(args []string) {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	cluster := fs.String("cluster", "", "node addresses")
	dbName := fs.String("db", "mentat", "database name")
	out := fs.String("out", "", "file of acknowledged transactions")
	stop := fs.String("stop", "", "stop once this file exists")
	first := fs.Int64("first", 1, "first sequence number")
	pause := fs.Duration("pause", 0, "pause between transactions")
	fs.Parse(args)
	drv, err := driver.New(store(*cluster), driver.WithLogFunc(quiet),
		driver.WithConnectionTimeout(3*time.Second))
	if err != nil {
		die("%v", err)
	}
	sql.Register("dqlite-load", drv)
	db, err := sql.Open("dqlite-load", *dbName)
	if err != nil {
		die("%v", err)
	}
	defer db.Close()
	f, err := os.OpenFile(*out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		die("%v", err)
	}
	defer f.Close()
	acked, failed := 0, 0
	for seq := *first; ; seq++ {
		if _, err := os.Stat(*stop); err == nil {
			break
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		id, kind, err := transact(ctx, db, seq)
		cancel()
		if err != nil {
			// Not acknowledged: it may or may not have committed; the checks
			// only count acknowledged ones. A retry would reuse the number.
			failed++
			time.Sleep(50 * time.Millisecond)
			continue
		}
		acked++
		fmt.Fprintf(f, "%d %d %s\n", seq, id, kind)
		time.Sleep(*pause)
	}
	fmt.Printf("acked=%d failed=%d\n", acked, failed)
}

// bench: n sequential host-store transactions (BEGIN; SELECT edn_t(':main',
// ...); COMMIT, one datom each) and n point lookups (edn_q on a unique
// attribute) through the client of one node; prints tx/s and p50/p95 ms.
func bench(args []string) {
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	via := fs.String("via", "", "node address the client connects to")
	dbName := fs.String("db", "mentat", "database name")
	n := fs.Int("n", 300, "transactions and lookups")
	fs.Parse(args)
	drv, err := driver.New(store(*via), driver.WithLogFunc(quiet),
		driver.WithConnectionTimeout(3*time.Second))
	if err != nil {
		die("%v", err)
	}
	sql.Register("dqlite-bench", drv)
	db, err := sql.Open("dqlite-bench", *dbName)
	if err != nil {
		die("%v", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	base := int64(1000000)
	t0 := time.Now()
	for i := 0; i < *n; i++ {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			die("begin: %v", err)
		}
		var id int64
		if err := tx.QueryRowContext(ctx, "SELECT edn_t(':main', ?) ->> 'tx_id'",
			fmt.Sprintf("[{:probe/seq %d}]", base+int64(i))).Scan(&id); err != nil {
			tx.Rollback()
			die("edn_t: %v", err)
		}
		if err := tx.Commit(); err != nil {
			die("commit: %v", err)
		}
	}
	txs := float64(*n) / time.Since(t0).Seconds()
	lat := make([]float64, 0, *n)
	for i := 0; i < *n; i++ {
		t := time.Now()
		var r string
		opts := fmt.Sprintf(`{"inputs":[%d]}`, base+int64((i*7919)%*n))
		if err := db.QueryRowContext(ctx, "SELECT edn_q(':main', '[:find ?e . :in $ ?s :where [?e :probe/seq ?s]]', ?)",
			opts).Scan(&r); err != nil {
			die("edn_q: %v", err)
		}
		lat = append(lat, float64(time.Since(t).Microseconds())/1000.0)
	}
	sort.Float64s(lat)
	fmt.Printf("host_store_tx_per_s=%.0f point_lookup_p50_ms=%.3f point_lookup_p95_ms=%.3f n=%d\n",
		txs, lat[len(lat)/2], lat[len(lat)*95/100], *n)
}

func main() {
	if len(os.Args) < 2 {
		die("usage: check leader|roles|dump|load ...")
	}
	switch os.Args[1] {
	case "leader":
		leader(os.Args[2:])
	case "roles":
		roles(os.Args[2:])
	case "dump":
		dump(os.Args[2:])
	case "load":
		load(os.Args[2:])
	case "bench":
		bench(os.Args[2:])
	default:
		die("unknown command %q", os.Args[1])
	}
}
