#!/usr/bin/env bash
# smoke/valgrind.sh — the smoke core (transactions, the edn_q table and
# scalar, pulls, correlated and nested cursors, early-finalized cursors and
# every kind of error) in the system sqlite3 shell under valgrind: no invalid
# access and no definite leak in the loaded .so. The shell rather than
# Python, whose own allocations would drown the report.
#
# `make valgrind` runs it with VALGRIND=1; under plain `make smoke` it is
# skipped (it takes a while).
# Usage: VALGRIND=1 SO=/abs/path/libmentat_sqlite.so bash smoke/valgrind.sh
set -euo pipefail
: "${SO:?set SO to the absolute path of the built .so}"
if [ "${VALGRIND:-}" != 1 ]; then
  echo "valgrind.sh: SKIPPED (run by make valgrind)"
  exit 0
fi
command -v valgrind >/dev/null || { echo "valgrind.sh: valgrind is not installed" >&2; exit 1; }
SQLITE=${SQLITE:-sqlite3}
T=$(mktemp -d /tmp/mentat-vg.XXXXXX)
trap 'rm -rf "$T"' EXIT
LIB=${SO%.so}
A=$T/a.db

# A script on stdin: the shell reports an error and goes on with the next
# statement, so one run covers the failure paths too.
cat > "$T/core.sql" <<EOF
.load $LIB
SELECT edn_t('$A', '[{:db/ident :p/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one :db/unique :db.unique/identity}
                    {:db/ident :p/age :db/valueType :db.type/long :db/cardinality :db.cardinality/one}
                    {:db/ident :p/friend :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]') IS NOT NULL;
SELECT edn_t('$A', '[{:db/id "a" :p/name "Ann" :p/age 30} {:db/id "b" :p/name "Bob" :p/age 25 :p/friend ["a"]}]') IS NOT NULL;
SELECT * FROM edn_q('$A', '[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a]]');
SELECT * FROM edn_q('$A', '[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a]]') LIMIT 1;
SELECT edn_q('$A', '[:find ?n ?a :where [?e :p/name ?n] [?e :p/age ?a]]');
SELECT edn_q('$A', '[:find [?n ...] :where [_ :p/name ?n]]');
SELECT edn_q('$A', '[:find ?a . :in \$ ?n :where [?e :p/name ?n] [?e :p/age ?a]]', '{"inputs":["Bob"]}');
SELECT edn_q('$A', '[:find (count ?e) :where [?e :p/name _]]');
SELECT edn_pull('$A', '[* {:p/friend [:p/name]}]', c0) FROM edn_q('$A', '[:find ?e . :where [?e :p/name "Bob"]]');
SELECT a.c0, b.c0 FROM edn_q('$A', '[:find ?n :where [_ :p/name ?n]]') a,
       edn_q('$A', '[:find ?a . :in \$ ?n :where [?e :p/name ?n] [?e :p/age ?a]]', json_object('inputs', json_array(a.c0))) b;
SELECT json_object('r', edn_t('', '[]'));
SELECT * FROM edn_q;
SELECT * FROM edn_q('$A');
SELECT * FROM edn_q('$A', '[:find ?x :where [?e :p/name ?n]]');
SELECT * FROM edn_q('$A', '[:find ?n :where [_ :p/name ?n]]', '{"inputs": [null]}');
SELECT * FROM edn_q('$A', '[:find ?n :where [_ :p/name ?n]]', 'not json');
SELECT edn_q('$A', '[:find ?n :in \$ ?x :where [_ :p/name ?n]]', '{"inputs":[{"edn":"[1"}]}');
SELECT edn_t('$A', '[{:p/nmae "x"}]');
SELECT edn_t('$A', '[[[[');
SELECT edn_t('$A', printf('%.*c', 1000, '['));
SELECT edn_pull('$A', '[:p/name', 1);
SELECT edn_pull('$A', '[*]', 'x');
SELECT edn_t('/nonexistent/dir/x.db', '[]');
EOF

log=$T/valgrind.log
set +e
valgrind -q --keep-debuginfo=yes --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
  --log-file="$log" "$SQLITE" -batch :memory: < "$T/core.sql" > "$T/out.txt" 2> "$T/err.txt"
rc=$?
set -e
echo "valgrind.sh: $(wc -l < "$T/out.txt") result lines, $(wc -l < "$T/err.txt") expected error lines"
if [ "$rc" = 99 ] || grep -q "definitely lost\|Invalid \(read\|write\)\|uninitialised" "$log"; then
  cat "$log" >&2
  echo "valgrind.sh: FAILED (memory errors or definite leaks above)" >&2
  exit 1
fi
echo "valgrind.sh: no memory errors, no definite leaks"
