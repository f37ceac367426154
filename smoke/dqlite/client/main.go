// smoke/dqlite/client — the server mode's client: SQL to a libmentat_sqlite
// dqlite cluster through go-dqlite's database/sql driver only. Nothing of
// ours is loaded here; the node the driver reaches runs edn_t / edn_q.
//
// Usage:
//
//	client -cluster HOST:PORT[,HOST:PORT...] [-db NAME] [-tx [-rollback]] [-exec|-query] SQL...
//
// Each SQL argument is one statement. A statement that starts with SELECT,
// WITH, VALUES, PRAGMA or EXPLAIN is sent as a query (its rows are printed
// one a line, columns tab-separated, NULL as NULL); any other is sent as an
// exec ('ok last_insert_id=N rows_affected=M'). -exec / -query send every
// statement one way; -tx runs them all in one transaction (BEGIN ... COMMIT,
// or ROLLBACK with -rollback).
// The driver asks the given nodes for the leader and sends everything to it:
// a follower's address works as well as the leader's.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/canonical/go-dqlite/client"
	"github.com/canonical/go-dqlite/driver"
)

type runner interface {
	ExecContext(ctx context.Context, query string, args ...interface{}) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...interface{}) (*sql.Rows, error)
}

func isQuery(stmt string) bool {
	f := strings.Fields(stmt)
	if len(f) == 0 {
		return false
	}
	switch strings.ToUpper(f[0]) {
	case "SELECT", "WITH", "VALUES", "PRAGMA", "EXPLAIN":
		return true
	}
	return false
}

func run(ctx context.Context, r runner, stmt string, query bool) error {
	if !query {
		res, err := r.ExecContext(ctx, stmt)
		if err != nil {
			return err
		}
		id, _ := res.LastInsertId()
		n, _ := res.RowsAffected()
		fmt.Printf("ok last_insert_id=%d rows_affected=%d\n", id, n)
		return nil
	}
	rows, err := r.QueryContext(ctx, stmt)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]interface{}, len(cols))
	ptrs := make([]interface{}, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		out := make([]string, len(vals))
		for i, v := range vals {
			switch v := v.(type) {
			case nil:
				out[i] = "NULL"
			case []byte:
				out[i] = string(v)
			default:
				out[i] = fmt.Sprint(v)
			}
		}
		fmt.Println(strings.Join(out, "\t"))
	}
	return rows.Err()
}

func main() {
	cluster := flag.String("cluster", "", "comma-separated node addresses")
	dbName := flag.String("db", "mentat", "database name on the cluster")
	inTx := flag.Bool("tx", false, "run all statements in one transaction")
	rollback := flag.Bool("rollback", false, "with -tx: end with ROLLBACK instead of COMMIT")
	forceExec := flag.Bool("exec", false, "send every statement as an exec")
	forceQuery := flag.Bool("query", false, "send every statement as a query")
	timeout := flag.Duration("timeout", 15*time.Second, "time limit for the whole run")
	flag.Parse()
	if *cluster == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: client -cluster HOST:PORT[,...] [-db NAME] [-tx [-rollback]] [-exec|-query] SQL...")
		os.Exit(2)
	}
	fail := func(err error) {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}

	store := client.NewInmemNodeStore()
	var nodes []client.NodeInfo
	for _, a := range strings.Split(*cluster, ",") {
		nodes = append(nodes, client.NodeInfo{Address: a})
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	store.Set(ctx, nodes)
	drv, err := driver.New(store, driver.WithLogFunc(func(client.LogLevel, string, ...interface{}) {}))
	if err != nil {
		fail(err)
	}
	sql.Register("dqlite", drv)
	db, err := sql.Open("dqlite", *dbName)
	if err != nil {
		fail(err)
	}
	defer db.Close()

	var r runner = db
	var tx *sql.Tx
	if *inTx {
		if tx, err = db.BeginTx(ctx, nil); err != nil {
			fail(err)
		}
		r = tx
	}
	for _, stmt := range flag.Args() {
		q := isQuery(stmt)
		if *forceExec {
			q = false
		} else if *forceQuery {
			q = true
		}
		if err := run(ctx, r, stmt, q); err != nil {
			if tx != nil {
				tx.Rollback()
			}
			fail(err)
		}
	}
	if tx != nil && *rollback {
		if err := tx.Rollback(); err != nil {
			fail(err)
		}
	} else if tx != nil {
		if err := tx.Commit(); err != nil {
			fail(err)
		}
	}
}
