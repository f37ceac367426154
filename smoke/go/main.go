// smoke/go/main.go — the built extension in Go through database/sql and
// mattn/go-sqlite3 (Debian's golang-github-mattn-go-sqlite3-dev, linked to
// the system libsqlite3).
//
// Core checks of the SQL surface (SPEC §2): schema and data through edn_t,
// the edn_q table and the scalar JSON document, pull, a join with a host
// table, errors. Then what a pooled Go host adds (peer faults in
// ../shared/acceptance):
//
//	B29  the extension is registered per pooled connection through the
//	     driver's Extensions list (SQLite derives the entry point
//	     sqlite3_mentatsqlite_init from the file name), never through a
//	     query; with SetMaxOpenConns(8), 64 goroutines each run
//	     SELECT edn_q(?, ?) on one store: all succeed and agree, on several
//	     pooled connections.
//	B31  the four longs come back as exact int64 with typeof 'integer';
//	     doubles as float64 with the infinities and the smallest subnormal
//	     exact; NaN is refused.
//	B32  QueryContext with a 100 ms deadline on a recursive rule over a
//	     200,000-link chain fails with context.DeadlineExceeded within about
//	     a second, and the next query on the pool succeeds.
//
// Expected values are worked out by hand from the data below.
//
// Usage: smoke /abs/path/libmentat_sqlite.so
// Prints name=value facts and PASS/FAIL lines, ends with 'N passed, M
// failed', exits 1 on any failure.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"
)

var passed, failed int

func check(name string, got, want interface{}) {
	if reflect.DeepEqual(got, want) {
		passed++
		fmt.Printf("PASS %s\n", name)
		return
	}
	failed++
	fmt.Printf("FAIL %s: got %#v, want %#v\n", name, got, want)
}

// checkErr: err must be non-nil and its text must be exactly want.
func checkErr(name string, err error, want string) {
	got := "no error"
	if err != nil {
		got = err.Error()
	}
	if got == want {
		passed++
		fmt.Printf("PASS %s\n", name)
		return
	}
	failed++
	fmt.Printf("FAIL %s: got %q, want the error %q\n", name, got, want)
}

// ok: an unexpected error counts as one failure; true when err is nil.
func ok(name string, err error) bool {
	if err == nil {
		return true
	}
	failed++
	fmt.Printf("FAIL %s: %v\n", name, err)
	return false
}

const schema = `[{:db/ident :p/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one :db/unique :db.unique/identity}
 {:db/ident :p/age :db/valueType :db.type/long :db/cardinality :db.cardinality/one}
 {:db/ident :p/friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]`

const people = `[{:db/id "ann" :p/name "Ann" :p/age 30}
 {:db/id "bob" :p/name "Bob" :p/age 25 :p/friend ["ann"]}
 {:db/id "cy" :p/name "Cy" :p/age 41 :p/friend ["ann" "bob"]}]`

const qNameAge = `[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a]]`

type txReport struct {
	TxID      int64            `json:"tx_id"`
	TxInstant string           `json:"tx_instant"`
	Tempids   map[string]int64 `json:"tempids"`
}

func transact(db *sql.DB, store, tx string) (txReport, error) {
	var s string
	var r txReport
	if err := db.QueryRow(`SELECT edn_t(?, ?)`, store, tx).Scan(&s); err != nil {
		return r, err
	}
	err := json.Unmarshal([]byte(s), &r)
	return r, err
}

func core(db *sql.DB, dir, store string) {
	r, err := transact(db, store, schema)
	if !ok("tx schema", err) {
		return
	}
	check("tx schema id", r.TxID, int64(268435457))
	r, err = transact(db, store, people)
	if !ok("tx data", err) {
		return
	}
	names := []string{}
	for k := range r.Tempids {
		names = append(names, k)
	}
	sort.Strings(names)
	check("tx data tempids", names, []string{"ann", "bob", "cy"})
	ann := r.Tempids["ann"]

	type row struct {
		N     string
		A     int64
		Value string
	}
	rows, err := db.Query(`SELECT c0, c1, value FROM edn_q(?, ?) ORDER BY c0`, store, qNameAge)
	if ok("table query", err) {
		got := []row{}
		for rows.Next() {
			var x row
			if ok("table scan", rows.Scan(&x.N, &x.A, &x.Value)) {
				got = append(got, x)
			}
		}
		ok("table rows end", rows.Err())
		rows.Close()
		check("table rows", got, []row{{"Ann", 30, `["Ann",30]`}, {"Bob", 25, `["Bob",25]`}, {"Cy", 41, `["Cy",41]`}})
	}

	var t0, t1 string
	var c2null, c15null bool
	err = db.QueryRow(`SELECT typeof(c0), typeof(c1), c2 IS NULL, c15 IS NULL FROM edn_q(?, ?) LIMIT 1`,
		store, qNameAge).Scan(&t0, &t1, &c2null, &c15null)
	if ok("table column types", err) {
		check("table column types", []interface{}{t0, t1, c2null, c15null}, []interface{}{"text", "integer", true, true})
	}

	var doc string
	err = db.QueryRow(`SELECT edn_q(?, ?, ?)`, store,
		`[:find ?a . :in $ ?n :where [?e :p/name ?n] [?e :p/age ?a]]`, `{"inputs":["Bob"]}`).Scan(&doc)
	if ok("scalar document", err) {
		check("scalar document", doc, `{"result":25}`)
	}
	err = db.QueryRow(`SELECT edn_q(?, ?)`, store, `[:find (count ?e) :where [?e :p/name _]]`).Scan(&doc)
	if ok("count document", err) {
		check("count document", doc, `{"result":3}`)
	}
	var rel struct {
		Columns []string        `json:"columns"`
		Results [][]interface{} `json:"results"`
		Result  [][]interface{} `json:"result"`
	}
	err = db.QueryRow(`SELECT edn_q(?, ?)`, store, qNameAge).Scan(&doc)
	if ok("relation document", err) && ok("relation document JSON", json.Unmarshal([]byte(doc), &rel)) {
		sort.Slice(rel.Results, func(i, j int) bool { return rel.Results[i][0].(string) < rel.Results[j][0].(string) })
		check("relation document", []interface{}{rel.Columns, rel.Results, len(rel.Result)},
			[]interface{}{[]string{"?n", "?a"}, [][]interface{}{{"Ann", 30.0}, {"Bob", 25.0}, {"Cy", 41.0}}, 3})
	}
	var pull string
	err = db.QueryRow(`SELECT edn_pull(?, ?, ?)`, store, `[:p/name :p/age]`, ann).Scan(&pull)
	if ok("pull", err) {
		var m map[string]interface{}
		if ok("pull JSON", json.Unmarshal([]byte(pull), &m)) {
			check("pull", m, map[string]interface{}{":p/name": "Ann", ":p/age": 30.0, ":db/id": float64(ann)})
		}
	}

	// A join with a host table. The host database is a file, so every
	// pooled connection sees the same table.
	_, err = db.Exec(`CREATE TABLE want(name TEXT, note TEXT);
		INSERT INTO want VALUES ('Ann', 'x'), ('Cy', 'y'), ('Zed', 'z')`)
	if ok("host table", err) {
		rows, err = db.Query(`SELECT w.note, q.c1 FROM want w JOIN edn_q(?, ?) q ON q.c0 = w.name ORDER BY w.name`,
			store, qNameAge)
		if ok("join with a host table", err) {
			got := []string{}
			for rows.Next() {
				var note string
				var age int64
				if ok("join scan", rows.Scan(&note, &age)) {
					got = append(got, fmt.Sprintf("%s=%d", note, age))
				}
			}
			rows.Close()
			check("join with a host table", got, []string{"x=30", "y=41"})
		}
		rows, err = db.Query(`SELECT w.name, r.c0 FROM want w LEFT JOIN
			edn_q(?, '[:find ?a . :in $ ?n :where [?e :p/name ?n] [?e :p/age ?a]]',
			      json_object('inputs', json_array(w.name))) r ORDER BY w.name`, store)
		if ok("correlated LEFT JOIN", err) {
			got := []string{}
			for rows.Next() {
				var name string
				var age sql.NullInt64
				if ok("correlated scan", rows.Scan(&name, &age)) {
					got = append(got, fmt.Sprintf("%s:%v", name, age))
				}
			}
			rows.Close()
			check("correlated LEFT JOIN with inputs", got, []string{"Ann:{30 true}", "Cy:{41 true}", "Zed:{0 false}"})
		}
	}

	var big int64
	err = db.QueryRow(`SELECT c0 FROM edn_q(?, ?, ?)`, store, `[:find ?x . :in $ ?x :where [_ :p/name _]]`,
		`{"inputs":[9007199254740993]}`).Scan(&big)
	if ok("int64 through opts", err) {
		check("int64 through opts", big, int64(9007199254740993))
	}
	var null sql.NullString
	err = db.QueryRow(`SELECT edn_t(NULL, ?)`, `[]`).Scan(&null)
	if ok("NULL argument", err) {
		check("NULL argument gives NULL", null.Valid, false)
	}

	_, err = transact(db, store, `[{:p/nmae "X"}]`)
	checkErr("unknown attribute", err, "edn_t: line 1 col 3: unknown attribute :p/nmae")
	_, err = queryAll(db, `SELECT * FROM edn_q(?, ?, ?)`, store, `[:find ?n :where [_ :p/name ?n]]`, `{"limit":1}`)
	checkErr("unknown option", err, `edn_q: unknown option "limit"`)
	_, err = queryAll(db, `SELECT * FROM edn_q WHERE db_path = ?`, store)
	checkErr("missing query", err, "edn_q: missing argument query")
	err = db.QueryRow(`SELECT edn_pull(?, ?, ?)`, store, `[*]`, "x").Scan(&pull)
	checkErr("pull entity type", err, "edn_pull: entity: line 1 col 1: x is not a lookup ref [:attr value] or an ident")
	_, err = transact(db, store, `[{:p/name "Eve" :p/age "old"}]`)
	var se sqlite3.Error
	check("failed tx is a sqlite3.Error", errors.As(err, &se), true)
	checkErr("failed tx message", err, "edn_t: line 1 col 24: :p/age: expected :db.type/long, got a string")
	n, err := count(context.Background(), db, store, `[:find ?e :where [?e :p/name "Eve"]]`)
	if ok("failed tx stored nothing", err) {
		check("failed tx stored nothing", n, int64(0))
	}
	_, err = transact(db, filepath.Join(dir, "host.db"), `[]`)
	checkErr("host's own database refused", err,
		"edn_t: db_path "+filepath.Join(dir, "host.db")+" is the host's own database")
}

// queryAll runs a query to its end and returns its row count.
func queryAll(db *sql.DB, q string, args ...interface{}) (int, error) {
	rows, err := db.Query(q, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	return n, rows.Err()
}

func count(ctx context.Context, db *sql.DB, store, q string, args ...interface{}) (int64, error) {
	var n int64
	all := append([]interface{}{store, q}, args...)
	sqlText := `SELECT count(*) FROM edn_q(?, ?)`
	if len(args) > 0 {
		sqlText = `SELECT count(*) FROM edn_q(?, ?, ?)`
	}
	err := db.QueryRowContext(ctx, sqlText, all...).Scan(&n)
	return n, err
}

// pool: B29 with 64 goroutines on at most 8 pooled connections.
func pool(db *sql.DB, store string, conns *int64) {
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8) // the default keeps 2 idle; keep all 8 warm
	const q = `[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a]]`
	var want string
	if !ok("pool: reference answer", db.QueryRow(`SELECT edn_q(?, ?)`, store, q).Scan(&want)) {
		return
	}
	// Hold 8 connections at once so the pool really has 8, each of which
	// must have loaded the extension by itself.
	held := []*sql.Conn{}
	for i := 0; i < 8; i++ {
		c, err := db.Conn(context.Background())
		if !ok("pool: hold a connection", err) {
			break
		}
		held = append(held, c)
	}
	nOK := 0
	for _, c := range held {
		var got string
		if err := c.QueryRowContext(context.Background(), `SELECT edn_q(?, ?)`, store, q).Scan(&got); err == nil && got == want {
			nOK++
		}
	}
	check("each of 8 held pool connections runs edn_q", nOK, 8)
	for _, c := range held {
		c.Close()
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	answers := make([]string, 64)
	errs := make([]error, 64)
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			errs[i] = db.QueryRow(`SELECT edn_q(?, ?)`, store, q).Scan(&answers[i])
		}(i)
	}
	close(start)
	wg.Wait()
	nerr, agree := 0, 0
	var firstErr error
	for i := range answers {
		if errs[i] != nil {
			nerr++
			if firstErr == nil {
				firstErr = errs[i]
			}
		} else if answers[i] == want {
			agree++
		}
	}
	if firstErr != nil {
		fmt.Printf("first_error=%v\n", firstErr)
	}
	fmt.Printf("pool_connections_opened=%d max_open=%d\n", atomic.LoadInt64(conns), db.Stats().MaxOpenConnections)
	check("64 goroutines: no error", nerr, 0)
	check("64 goroutines agree", agree, 64)
	check("8 pooled connections opened, each with the extension", atomic.LoadInt64(conns), int64(8))
	check("pool stays at 8 connections", db.Stats().OpenConnections, 8)
}

// numbers: B31 through int64 and float64.
func numbers(db *sql.DB, store string) {
	if _, err := transact(db, store, `[
	  {:db/ident :m/i :db/valueType :db.type/long :db/cardinality :db.cardinality/many}
	  {:db/ident :m/d :db/valueType :db.type/double :db/cardinality :db.cardinality/many}]`); !ok("B31 schema", err) {
		return
	}
	if _, err := transact(db, store, `[{:db/id "a"
	  :m/i [2147483648 9007199254740993 9223372036854775807 -9223372036854775808]
	  :m/d [-0.0 1e308 ##Inf ##-Inf 5e-324]}]`); !ok("B31 data", err) {
		return
	}
	rows, err := db.Query(`SELECT c0, typeof(c0) FROM edn_q(?, ?) ORDER BY c0`, store, `[:find ?v :where [_ :m/i ?v]]`)
	if ok("longs", err) {
		got := []string{}
		for rows.Next() {
			var v int64
			var t string
			if ok("longs scan", rows.Scan(&v, &t)) {
				got = append(got, fmt.Sprintf("%d %s", v, t))
			}
		}
		rows.Close()
		check("longs exact as int64", got, []string{"-9223372036854775808 integer", "2147483648 integer",
			"9007199254740993 integer", "9223372036854775807 integer"})
	}
	rows, err = db.Query(`SELECT c0, typeof(c0) FROM edn_q(?, ?) ORDER BY c0`, store, `[:find ?v :where [_ :m/d ?v]]`)
	if ok("doubles", err) {
		got := []interface{}{}
		for rows.Next() {
			var v float64
			var t string
			if ok("doubles scan", rows.Scan(&v, &t)) {
				if v == 0 {
					v = 0 // -0.0 and 0.0 are one value; either sign reads as zero
				}
				got = append(got, v, t)
			}
		}
		rows.Close()
		check("doubles REAL, infinities and subnormal exact", got, []interface{}{
			math.Inf(-1), "real", 0.0, "real", 5e-324, "real", 1e308, "real", math.Inf(1), "real"})
	}
	_, err = transact(db, store, `[{:m/d ##NaN}]`)
	checkErr("NaN refused", err, "edn_t: line 1 col 8: :m/d: NaN cannot be stored")
}

// chain: B32's 200,000 :n/next links, 0 -> 1 -> ... -> 200000, written in
// four transactions. Each transaction re-mentions its last id, which the
// next one upserts through :n/id (unique identity).
func chain(db *sql.DB, store string, links int) error {
	if _, err := transact(db, store, `[{:db/ident :n/id :db/valueType :db.type/long
	    :db/cardinality :db.cardinality/one :db/unique :db.unique/identity}
	  {:db/ident :n/next :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}]`); err != nil {
		return err
	}
	const per = 50000
	for lo := 0; lo < links; lo += per {
		hi := lo + per
		if hi > links {
			hi = links
		}
		var b strings.Builder
		b.WriteString("[")
		for i := lo; i < hi; i++ {
			fmt.Fprintf(&b, "{:db/id \"%d\" :n/id %d :n/next \"%d\"}\n", i, i, i+1)
		}
		fmt.Fprintf(&b, "{:db/id \"%d\" :n/id %d}]", hi, hi)
		if _, err := transact(db, store, b.String()); err != nil {
			return err
		}
	}
	return nil
}

// The rule set travels as {"edn": ...} (JSON cannot type it), then ?start.
const reach = `[{"edn": "[[(reach ?s ?e) [?s :n/next ?e]] [(reach ?s ?e) [?s :n/next ?m] (reach ?m ?e)]]"}, 0]`
const qReach = `[:find ?e :in $ % ?start :where [?s :n/id ?start] (reach ?s ?e)]`

// deadline: B32 through QueryContext.
func deadline(db *sql.DB, store string) {
	const links = 200000
	t0 := time.Now()
	err := chain(db, store, links)
	fmt.Printf("chain_links=%d chain_seconds=%.1f\n", links, time.Since(t0).Seconds())
	if !ok("B32 chain", err) {
		return
	}
	check("chain written in under a minute", time.Since(t0) < time.Minute, true)
	n, err := count(context.Background(), db, store, `[:find ?e :where [?e :n/next _]]`)
	if ok("chain count", err) {
		check("chain has 200000 links", n, int64(links))
	}
	opts := `{"inputs":` + reach + `}`
	for _, form := range []struct{ name, sql string }{
		{"table", `SELECT count(*) FROM edn_q(?, ?, ?)`},
		{"scalar", `SELECT edn_q(?, ?, ?)`},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		t1 := time.Now()
		var out string
		rows, err := db.QueryContext(ctx, form.sql, store, qReach, opts)
		if err == nil {
			if rows.Next() {
				err = rows.Scan(&out)
			}
			if err == nil {
				err = rows.Err()
			}
			if err == nil {
				err = errors.New("finished: " + out[:min(len(out), 60)])
			}
			rows.Close()
		}
		took := time.Since(t1)
		cancel()
		fmt.Printf("deadline_%s_ms=%d error=%v\n", form.name, took.Milliseconds(), err)
		check("100 ms deadline stops the "+form.name+" edn_q", errors.Is(err, context.DeadlineExceeded), true)
		check("... within a second ("+form.name+")", took < time.Second, true)
		m, err := count(context.Background(), db, store, `[:find ?e . :where [?e :n/id 7]]`)
		if ok("next query after the deadline ("+form.name+")", err) {
			check("next query after the deadline ("+form.name+")", m, int64(1))
		}
	}
	// The same recursive query to its end (about a second here), to show
	// the deadline cut real work: every node after 0 is reachable. Bounded
	// so a slow plan fails the check instead of hanging the run.
	t2 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err = count(ctx, db, store, qReach, opts)
	fmt.Printf("reach_full_seconds=%.2f\n", time.Since(t2).Seconds())
	if ok("full recursive query", err) {
		check("full recursive query reaches every node", n, int64(links))
	}
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func main() {
	if len(os.Args) < 2 {
		fmt.Println("usage: smoke /abs/path/libmentat_sqlite.so")
		os.Exit(2)
	}
	lib := strings.TrimSuffix(os.Args[1], ".so")
	dir, err := os.MkdirTemp("", "mentat-go.")
	if err != nil {
		fmt.Println("FAIL temp dir:", err)
		os.Exit(1)
	}
	ver, _, _ := sqlite3.Version()
	fmt.Printf("host=mattn/go-sqlite3 sqlite %s\n", ver)

	var conns int64
	// Registered per connection: database/sql opens pooled connections
	// whenever it likes, so a load through a query would reach only one.
	sql.Register("sqlite3_mentat", &sqlite3.SQLiteDriver{
		Extensions: []string{lib},
		ConnectHook: func(*sqlite3.SQLiteConn) error {
			atomic.AddInt64(&conns, 1)
			return nil
		},
	})
	db, err := sql.Open("sqlite3_mentat", filepath.Join(dir, "host.db"))
	if err == nil {
		err = db.Ping()
	}
	if ok("load the extension", err) {
		core(db, dir, filepath.Join(dir, "store.db"))
		pool(db, filepath.Join(dir, "store.db"), &conns)
		numbers(db, filepath.Join(dir, "numbers.db"))
		deadline(db, filepath.Join(dir, "chain.db"))
		ok("close", db.Close())
	}
	os.RemoveAll(dir)
	fmt.Printf("%d passed, %d failed\n", passed, failed)
	if failed > 0 || passed == 0 {
		os.Exit(1)
	}
}
