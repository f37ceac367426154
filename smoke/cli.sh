#!/usr/bin/env bash
# smoke/cli.sh — the built extension in the sqlite3 shell, the way a user
# types it. Every check runs one sqlite3 process (".load" with no entry
# point, then one SQL statement) and prints one `name=value` line; the lines
# are compared exactly with smoke/cli.expected, whose values were worked out
# by hand from SPEC.md and the data below (never pasted from our output).
# Errors print as the message without the shell's prefix; store paths print
# as @T@.
#
# Usage: SO=/abs/path/libmentat_sqlite.so bash smoke/cli.sh   (make smoke)
set -euo pipefail
: "${SO:?set SO to the absolute path of the built .so}"
HERE=$(cd "$(dirname "$0")" && pwd)
SQLITE=${SQLITE:-sqlite3}
T=$(mktemp -d /tmp/mentat-cli.XXXXXX)
trap 'rm -rf "$T"' EXIT
LIB=${SO%.so}
A=$T/a.db          # the main store
OUT=$T/out.txt

# norm: the shell's error prefixes go, paths become @T@, rows join with " / ".
norm() {
  sed -E -e 's/^Error: (near line [0-9]+: )?((in prepare|stepping), )?//' \
         -e 's/^(Runtime|Parse) error( near line [0-9]+)?: //' \
         -e "s#$T#@T@#g" | awk 'NR > 1 { printf " / " } { printf "%s", $0 } END { print "" }'
}

# q NAME SQL [HOST_DB]: one statement on a fresh connection.
q() {
  local out
  out=$("$SQLITE" -batch -list -noheader "${3:-:memory:}" ".load $LIB" "$2" 2>&1 </dev/null || true)
  printf '%s=%s\n' "$1" "$(printf '%s\n' "$out" | norm)"
}

# sq S: S as an SQL string literal.
sq() { printf "'%s'" "${1//\'/\'\'}"; }

S='[{:db/ident :p/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one :db/unique :db.unique/identity}
 {:db/ident :p/age :db/valueType :db.type/long :db/cardinality :db.cardinality/one}
 {:db/ident :p/nick :db/valueType :db.type/string :db/cardinality :db.cardinality/one}
 {:db/ident :p/friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}
 {:db/ident :p/born :db/valueType :db.type/instant :db/cardinality :db.cardinality/one}
 {:db/ident :p/tag :db/valueType :db.type/keyword :db/cardinality :db.cardinality/many}]'
T1='[{:db/id "ann" :p/name "Ann" :p/age 30 :p/nick "annie" :p/born #inst "1995-03-04T05:06:00Z" :p/tag [:t/a :t/b]}
 {:db/id "bob" :p/name "Bob" :p/age 25 :p/friend ["ann"]}
 {:db/id "cy" :p/name "Cy" :p/age 41 :p/friend ["ann" "bob"]}]'
QNA='[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a]]'
QAGE='[:find ?a . :in $ ?n :where [?e :p/name ?n] [?e :p/age ?a]]'
DA=$(sq "$A")

{
# --- loading (SPEC §1) ---
echo "exported=$(nm -D --defined-only "$SO" | awk '$2 == "T" {print $3}' | paste -sd, -)"
q load_no_entry_point "SELECT typeof(edn_t('', '[]'))"
out=$("$SQLITE" -batch :memory: ".load $LIB" ".load $LIB" "SELECT typeof(edn_t('', '[]'))" 2>&1 || true)
echo "load_twice=$out"
# Other file names: SQLite would look for sqlite3_<name>_init, which we do
# not export (one exported symbol); the entry point is named instead.
for name in edn.so libedn.so edn_datalog.so edn-datalog.1.2.so; do
  cp "$SO" "$T/$name"
  out=$("$SQLITE" -batch :memory: ".load $T/${name%.so}" "SELECT 1" 2>&1 || true)
  case $out in *"undefined symbol"*) out=refused ;; esac
  echo "copy_${name}_default=$out"
  out=$("$SQLITE" -batch :memory: ".load $T/$name sqlite3_mentatsqlite_init" \
        "SELECT typeof(edn_t('', '[]'))" 2>&1 || true)
  echo "copy_${name}_entry_point=$out"
done

# --- transactions (SPEC §2, §5) ---
q tx_schema "SELECT json_extract(edn_t($DA, $(sq "$S")), '\$.tx_id')"
q tx_data "SELECT json_extract(r, '\$.tx_id'),
             (SELECT group_concat(key, ',') FROM (SELECT key FROM json_each(r, '\$.tempids') ORDER BY key)),
             json_extract(r, '\$.tx_instant') GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]T*Z'
           FROM (SELECT edn_t($DA, $(sq "$T1")) AS r)"
q tx_nested_json "SELECT json_type(json_object('r', edn_t($DA, '[]')), '\$.r')"
q tx_memory_store "SELECT json_extract(edn_t('', $(sq "$S")), '\$.tx_id')"
q query_memory_store "SELECT count(*) FROM edn_q('', '[:find ?e :where [?e :p/name _]]')"

# --- the edn_q table (SPEC §2.1) ---
q table_rel "SELECT group_concat(c0 || ':' || c1, ',') FROM (SELECT c0, c1 FROM edn_q($DA, $(sq "$QNA")) ORDER BY c0)"
q table_value "SELECT group_concat(value, ';') FROM (SELECT value FROM edn_q($DA, $(sq "$QNA")) ORDER BY c0)"
q table_types "SELECT typeof(c0), typeof(c1), c2 IS NULL, c15 IS NULL, typeof(value), db_path = $DA, opts
               FROM edn_q($DA, '[:find ?n ?a :in \$ ?n :where [?e :p/name ?n] [?e :p/age ?a]]', '{\"inputs\":[\"Ann\"]}')"
q table_value_nests "SELECT json_object('r', value)
               FROM edn_q($DA, '[:find ?n ?a :in \$ ?n :where [?e :p/name ?n] [?e :p/age ?a]]', '{\"inputs\":[\"Ann\"]}')"
q table_instant "SELECT c0, value FROM edn_q($DA, '[:find ?b . :where [?e :p/name \"Ann\"] [?e :p/born ?b]]')"
q table_keyword_coll "SELECT group_concat(c0 || '=' || value, ',') FROM (SELECT c0, value FROM edn_q($DA, '[:find [?t ...] :where [_ :p/tag ?t]]') ORDER BY c0)"
q table_scalar_none "SELECT count(*) FROM edn_q($DA, '[:find ?a . :where [?e :p/name \"Zed\"] [?e :p/age ?a]]')"
q table_limit_1 "SELECT count(*) FROM (SELECT * FROM edn_q($DA, '[:find ?n :where [_ :p/name ?n]]') LIMIT 1)"
q table_join_host "CREATE TEMP TABLE want(name TEXT, note TEXT);
  INSERT INTO want VALUES ('Ann', 'x'), ('Cy', 'y'), ('Zed', 'z');
  SELECT group_concat(note || '=' || age, ',') FROM (SELECT w.note, q.c1 AS age FROM want w
    JOIN edn_q($DA, $(sq "$QNA")) q ON q.c0 = w.name ORDER BY w.name)"
q table_correlated "CREATE TEMP TABLE names(name TEXT); INSERT INTO names VALUES ('Ann'), ('Bob'), ('Zed');
  SELECT group_concat(name || ':' || coalesce(age, '-'), ',') FROM (SELECT n.name, r.c0 AS age
    FROM names n LEFT JOIN edn_q($DA, $(sq "$QAGE"), json_object('inputs', json_array(n.name))) r ORDER BY n.name)"
q table_nested "SELECT group_concat(x, ',') FROM (SELECT a.c0 || '>' || b.c0 AS x
    FROM edn_q($DA, '[:find ?n :where [_ :p/name ?n]]') a,
         edn_q($DA, '[:find ?fn :in \$ ?n :where [?e :p/name ?n] [?e :p/friend ?f] [?f :p/name ?fn]]',
               json_object('inputs', json_array(a.c0))) b ORDER BY 1)"

# --- the scalar edn_q and edn_pull (SPEC §2.2) ---
q doc_rel_ordered "SELECT edn_q($DA, '[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a] :order ?a]')"
q doc_rel_shape "SELECT json_extract(d, '\$.columns'), json_array_length(d, '\$.results'),
                        json_extract(d, '\$.results') = json_extract(d, '\$.result')
                 FROM (SELECT edn_q($DA, $(sq "$QNA")) AS d)"
q doc_aggregate "SELECT edn_q($DA, '[:find (count ?e) :where [?e :p/name _]]')"
q doc_coll "SELECT group_concat(value, ',') FROM (SELECT value FROM json_each(edn_q($DA, '[:find [?a ...] :where [_ :p/age ?a]]'), '\$.result') ORDER BY value)"
q doc_tuple "SELECT edn_q($DA, '[:find [?n ?a] :in \$ ?n :where [?e :p/name ?n] [?e :p/age ?a]]', '{\"inputs\":[\"Cy\"]}')"
q doc_tuple_none "SELECT edn_q($DA, '[:find [?n ?a] :in \$ ?n :where [?e :p/name ?n] [?e :p/age ?a]]', '{\"inputs\":[\"Zed\"]}')"
q doc_scalar "SELECT edn_q($DA, $(sq "$QAGE"), '{\"inputs\":[\"Bob\"]}')"
q doc_scalar_none "SELECT edn_q($DA, $(sq "$QAGE"), '{\"inputs\":[\"Zed\"]}')"
q doc_nested_json "SELECT json_object('r', edn_q($DA, $(sq "$QAGE"), '{\"inputs\":[\"Bob\"]}'))"
q opts_none_forms "SELECT edn_q($DA, $(sq "$QNA"), NULL) = edn_q($DA, $(sq "$QNA"))
                      AND edn_q($DA, $(sq "$QNA"), '') = edn_q($DA, $(sq "$QNA"))
                      AND edn_q($DA, $(sq "$QNA"), 'null') = edn_q($DA, $(sq "$QNA"))
                      AND edn_q($DA, $(sq "$QNA"), '{}') = edn_q($DA, $(sq "$QNA"))"
QN3='[:find ?n :where [_ :p/name ?n]]'
q opts_asof "SELECT (SELECT count(*) FROM edn_q($DA, $(sq "$QN3"), '{\"asOf\":268435457}')),
                    (SELECT count(*) FROM edn_q($DA, $(sq "$QN3"), '{\"asOf\":268435458}')),
                    (SELECT count(*) FROM edn_q($DA, $(sq "$QN3"), '{\"asOf\":{\"edn\":\"#inst \\\"2000-01-01T00:00:00Z\\\"\"}}'))"
q opts_since "SELECT (SELECT count(*) FROM edn_q($DA, $(sq "$QN3"), '{\"since\":268435457}')),
                     (SELECT count(*) FROM edn_q($DA, $(sq "$QN3"), '{\"since\":268435458}'))"
q pull_plain "SELECT json_extract(p, '\$.\":p/name\"') || ',' || json_extract(p, '\$.\":p/age\"') || ','
                     || (json_extract(p, '\$.\":db/id\"') = e)
              FROM (SELECT edn_pull($DA, '[:p/name :p/age]', e) AS p, e
                    FROM (SELECT c0 AS e FROM edn_q($DA, '[:find ?e . :where [?e :p/name \"Bob\"]]')))"
q pull_instant_us "SELECT json_extract(edn_pull($DA, '[:p/born]', c0), '\$.\":p/born\"')
                   FROM edn_q($DA, '[:find ?e . :where [?e :p/name \"Ann\"]]')"
q pull_nested_many "SELECT group_concat(n, ',') FROM (SELECT json_extract(f.value, '\$.\":p/name\"') AS n
                    FROM edn_q($DA, '[:find ?e . :where [?e :p/name \"Cy\"]]') c,
                         json_each(edn_pull($DA, '[:p/name {:p/friend [:p/name]}]', c.c0), '\$.\":p/friend\"') f ORDER BY n)"

# --- NULL arguments (SPEC §2) ---
q null_args "SELECT edn_t(NULL, '[]') IS NULL, edn_t($DA, NULL) IS NULL,
                    edn_q(NULL, '[:find ?e :where [?e :p/name _]]') IS NULL, edn_q($DA, NULL) IS NULL,
                    edn_pull($DA, '[*]', NULL) IS NULL, edn_pull(NULL, '[*]', 1) IS NULL,
                    (SELECT count(*) FROM edn_q(NULL, '[:find ?e :where [?e :p/name _]]')),
                    (SELECT count(*) FROM edn_q($DA, NULL))"

# --- errors (SPEC §2, §2.4, §7) ---
"$SQLITE" "$T/host.db" "CREATE TABLE h(x)" </dev/null
q err_own_db_t "SELECT edn_t('$T/host.db', '[]')" "$T/host.db"
q err_own_db_q "SELECT * FROM edn_q('$T/./host.db', $(sq "$QNA"))" "$T/host.db"
q err_own_db_pull "SELECT edn_pull('$T/host.db', '[*]', 1)" "$T/host.db"
q err_view_function "CREATE VIEW v AS SELECT edn_t($DA, '[]'); SELECT * FROM v"
q err_view_table "CREATE VIEW v AS SELECT * FROM edn_q($DA, $(sq "$QNA")); SELECT * FROM v"
q err_trigger "CREATE TABLE t(x); CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT edn_q($DA, $(sq "$QNA")); END;
               INSERT INTO t VALUES (1)"
q err_missing_args "SELECT * FROM edn_q"
q err_missing_query "SELECT * FROM edn_q WHERE db_path = $DA"
q err_missing_query_tvf "SELECT * FROM edn_q($DA)"
q err_unknown_option "SELECT * FROM edn_q($DA, $(sq "$QNA"), '{\"input\":[]}')"
q err_not_json "SELECT edn_q($DA, $(sq "$QNA"), '{inputs:[]}')"
q err_not_object "SELECT edn_q($DA, $(sq "$QNA"), '[1]')"
q err_tx_id "SELECT edn_q($DA, $(sq "$QNA"), '{\"asOf\":\"yesterday\"}')"
# asOf and since compose (Datomic's (d/since (d/as-of db t2) t1)): the data tx is in the span, then not
q asof_since "SELECT (SELECT group_concat(c0, ',') FROM (SELECT c0 FROM edn_q($DA, $(sq "$QNA"), '{\"asOf\":268435458,\"since\":268435457}') ORDER BY c0)),
                     (SELECT count(*) FROM edn_q($DA, $(sq "$QNA"), '{\"asOf\":268435458,\"since\":268435458}'))"
q err_inputs_array "SELECT edn_q($DA, $(sq "$QAGE"), '{\"inputs\":\"Ann\"}')"
q err_input_null "SELECT edn_q($DA, $(sq "$QAGE"), '{\"inputs\":[null]}')"
q err_input_object "SELECT edn_q($DA, $(sq "$QAGE"), '{\"inputs\":[{\"name\":\"Ann\"}]}')"
q err_input_count "SELECT edn_q($DA, $(sq "$QAGE"), '{\"inputs\":[\"Ann\", \"Bob\"]}')"
q err_input_count_table "SELECT * FROM edn_q($DA, $(sq "$QAGE"))"
q err_pull_entity "SELECT edn_pull($DA, '[*]', '65536')"
q err_pull_pattern "SELECT edn_pull($DA, ':p/name', 65536)"
q err_tx_unknown_attr "SELECT edn_t($DA, '[{:p/nmae \"x\"}]')"
q err_tx_nul_byte "SELECT edn_t($DA, '[{:p/name \"Dee\"}]' || char(0) || '[{:p/name \"Eve\"}]')"
q after_nul_nothing_stored "SELECT (SELECT count(*) FROM edn_q($DA, '[:find ?e :where [?e :p/name \"Dee\"]]')),
                                  (SELECT count(*) FROM edn_q($DA, '[:find ?e :where [?e :p/name \"Eve\"]]'))"
q err_db_path_nul "SELECT edn_t('$T/x' || char(0) || '.db', '[]')"
q err_query_nul_byte "SELECT * FROM edn_q($DA, '[:find ?e :where [?e :p/name _]]' || char(0) || ' junk')"
q err_tx_deep "SELECT edn_t($DA, printf('%.*c', 300, '[') || printf('%.*c', 300, ']'))"
q err_query_unbound "SELECT * FROM edn_q($DA, '[:find ?x :where [?e :p/name ?n]]')"

# --- peer fault B27: correlated arguments, unusable constraints, IN, outer joins ---
B27A=$(sq "$T/b27a.db") B27B=$(sq "$T/b27b.db")
QN='[:find ?n :where [_ :p/name ?n]]' QK='[:find ?n :where [_ :p/nick ?n]]'
q b27_setup "SELECT json_extract(edn_t($B27A, '[{:db/ident :p/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}
                                             {:db/ident :p/nick :db/valueType :db.type/string :db/cardinality :db.cardinality/one}]'), '\$.tx_id'),
                     json_extract(edn_t($B27A, '[{:p/name \"x\"} {:p/name \"y\" :p/nick \"z\"}]'), '\$.tx_id'),
                     json_extract(edn_t($B27B, '[{:db/ident :p/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}]'), '\$.tx_id')"
JOBS="CREATE TEMP TABLE jobs(id INTEGER PRIMARY KEY, db TEXT, q TEXT);
      INSERT INTO jobs VALUES (1, $B27A, $(sq "$QN")), (2, $B27B, $(sq "$QN")), (3, $B27A, $(sq "$QK"));"
q b27_1 "$JOBS SELECT group_concat(x, ',') FROM (SELECT j.id || ':' || r.c0 AS x FROM jobs j, edn_q(j.db, j.q) r ORDER BY j.id, r.c0)"
q b27_2 "$JOBS SELECT group_concat(x, ',') FROM (SELECT j.id || ':' || r.c0 AS x FROM edn_q(j.db, j.q) r, jobs j ORDER BY j.id, r.c0)"
q b27_3 "$JOBS SELECT group_concat(x, ',') FROM (SELECT j.id || ':' || coalesce(r.c0, '-') AS x FROM jobs j LEFT JOIN edn_q(j.db, j.q) r ORDER BY j.id, r.c0)"
q b27_4 "SELECT group_concat(c0, ',') FROM (SELECT c0 FROM edn_q WHERE db_path = $B27A AND query IN ($(sq "$QN"), $(sq "$QK")) ORDER BY c0)"
q b27_5 "SELECT * FROM edn_q"
q b27_6 "SELECT group_concat(x, ',') FROM (SELECT a.c0 || '=' || b.c0 AS x FROM edn_q($B27A, $(sq "$QN")) a JOIN edn_q($B27A, $(sq "$QN")) b ON a.c0 = b.c0 ORDER BY 1)"
} > "$OUT"

if diff -u "$HERE/cli.expected" "$OUT"; then
  echo "cli.sh: $(wc -l < "$OUT") checks passed"
else
  echo "cli.sh: FAILED (expected smoke/cli.expected, got the + lines above)" >&2
  exit 1
fi
