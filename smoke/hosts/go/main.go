// smoke/hosts/go/main.go SO|auto DB SCRIPT — the hosts script (../script.txt) in Go's database/sql
// with mattn/go-sqlite3 (Debian's), the extension registered for every pooled connection by
// go/mentat's AutoPath(SO), or Auto() for "auto" (sqlite3_auto_extension), never through a
// query.
package main

import (
	"bufio"
	"database/sql"
	"fmt"
	"os"
	"strings"

	"libmentat_sqlite/go/mentat"

	_ "github.com/mattn/go-sqlite3"
)

func main() {
	so, dbPath, script := os.Args[1], os.Args[2], os.Args[3]
	// "auto": the installed library by bare name (smoke/pkg_install.sh after make install).
	register := func() error { return mentat.AutoPath(so) }
	if so == "auto" {
		register = mentat.Auto
	}
	if err := register(); err != nil {
		fmt.Println("FAIL registering the extension:", err)
		os.Exit(1)
	}
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		fmt.Println("FAIL sql.Open:", err)
		os.Exit(1)
	}
	db.SetMaxOpenConns(1)
	f, err := os.Open(script)
	if err != nil {
		fmt.Println("FAIL", err)
		os.Exit(1)
	}
	lit := "'" + strings.ReplaceAll(dbPath, "'", "''") + "'"
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, "\t", 2)
		name, query := parts[0], strings.ReplaceAll(parts[1], "@DB@", lit)
		if err := run(db, name, query); err != nil {
			fmt.Printf("%s=ERROR %s\n", name, err)
		}
	}
}

func run(db *sql.DB, name, query string) error {
	rows, err := db.Query(query)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	for rows.Next() {
		vals := make([]interface{}, len(cols))
		ptrs := make([]interface{}, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		out := make([]string, len(vals))
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			out[i] = fmt.Sprint(v)
		}
		fmt.Printf("%s=%s\n", name, strings.Join(out, "|"))
	}
	return rows.Err()
}
