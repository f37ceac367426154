#!/usr/bin/env bash
# smoke/demo.sh — `make demo`: the Learn Datalog Today movie data set,
# loaded UNCHANGED (Datomic's legacy schema syntax and #db/id tempids) through
# the sqlite3 shell into a fresh store under build/, then the tutorial's
# questions asked in SQL. Each question prints its SQL (the Datalog inside)
# and then its answer, which is checked against an expected answer worked out
# without the extension: three come from the data set's README, the others
# were counted by hand in data.edn (the comment above each says how). The
# script fails on a wrong answer, so `make smoke` runs it too.
#
# Usage: SO=/abs/path/libmentat_sqlite.so bash smoke/demo.sh
# The data ships in data/movies/ (MOVIES=/other/folder to use another copy).
set -euo pipefail
: "${SO:?set SO to the absolute path of the built .so}"
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
DATA=$(cd "${MOVIES:-$ROOT/data/movies}" && pwd)
SQLITE=${SQLITE:-sqlite3}
LIB=${SO%.so}
DB=$ROOT/build/demo/movies.db
mkdir -p "$(dirname "$DB")"
rm -f "$DB" "$DB-wal" "$DB-shm"
fails=0

sql() { "$SQLITE" -batch -noheader -list :memory: ".load $LIB" "$@" </dev/null; }

# show TITLE EXPECTED SQL [SOURCE]: prints the SQL (with the store's path
# shortened) and the answer lines, and checks them against EXPECTED ("" = no
# check), saying where EXPECTED comes from: SOURCE "readme" the data set's
# README, otherwise counted by hand in data.edn.
show() {
  local title=$1 want=$2 src=${4:-hand} got
  got=$(sql "$3" 2>&1) || true
  printf '\n== %s\n' "$title"
  printf '%s\n' "${3//$DB/movies.db}" | sed 's/^/   sql> /'
  printf '%s\n' "$got" | sed 's/^/   /'
  if [ -n "$want" ]; then
    if [ "$got" = "$want" ]; then
      if [ "$src" = readme ]; then echo "   (as the data set's README says)"
      else echo "   (as counted by hand in data.edn)"; fi
    else printf '   MISMATCH, expected:\n%s\n' "$want" | sed '2,$s/^/   /'; fails=$((fails + 1)); fi
  fi
}

echo "== loading $DATA/schema.edn and data.edn into $DB"
sql "SELECT 'schema tx ' || json_extract(edn_t('$DB', CAST(readfile('$DATA/schema.edn') AS TEXT)), '\$.tx_id')"
sql "SELECT 'data tx   ' || json_extract(r, '\$.tx_id') || ', ' ||
            (SELECT count(*) FROM json_each(r, '\$.tempids')) || ' tempids resolved'
     FROM (SELECT edn_t('$DB', CAST(readfile('$DATA/data.edn') AS TEXT)) AS r)"

show "Titles of movies made before 1984" "$(printf '%s\n' Alien 'First Blood' 'Mad Max' 'Mad Max 2')" \
"SELECT c0 FROM edn_q('$DB', '[:find ?title
                               :where [?m :movie/title ?title]
                                      [?m :movie/year ?year]
                                      [(< ?year 1984)]]') ORDER BY c0" readme

show "Who directed the movies Arnold Schwarzenegger acted in" \
"$(printf '%s\n' 'Commando: Mark L. Lester' 'Predator: John McTiernan' \
  'Terminator 2: Judgment Day: James Cameron' 'Terminator 3: Rise of the Machines: Jonathan Mostow' \
  'The Terminator: James Cameron')" \
"SELECT c0 || ': ' || c1 FROM edn_q('$DB', '[:find ?title ?director
                               :where [?a :person/name \"Arnold Schwarzenegger\"]
                                      [?m :movie/cast ?a]
                                      [?m :movie/title ?title]
                                      [?m :movie/director ?d]
                                      [?d :person/name ?director]]') ORDER BY 1" readme

show "The sequel chain from \"The Terminator\" (two hops)" \
"The Terminator -> Terminator 2: Judgment Day -> Terminator 3: Rise of the Machines" \
"SELECT 'The Terminator -> ' || c0 || ' -> ' || c1 FROM edn_q('$DB', '[:find ?t1 ?t2
                               :where [?m :movie/title \"The Terminator\"]
                                      [?m :movie/sequel ?s1] [?s1 :movie/title ?t1]
                                      [?s1 :movie/sequel ?s2] [?s2 :movie/title ?t2]]')" readme

# data.edn: The Terminator's :movie/sequel is Terminator 2, whose sequel is Terminator 3, which
# has none: the rule's closure is those two.
show "Every sequel of \"The Terminator\" (a recursive rule, passed as an input)" \
"$(printf '%s\n' 'Terminator 2: Judgment Day' 'Terminator 3: Rise of the Machines')" \
"SELECT c0 FROM edn_q('$DB', '[:find ?title :in \$ % :where [?m :movie/title \"The Terminator\"]
                                                     (sequel ?m ?s) [?s :movie/title ?title]]',
       json_object('inputs', json_array(json_object('edn',
         '[[(sequel ?a ?b) [?a :movie/sequel ?b]]
           [(sequel ?a ?b) [?a :movie/sequel ?x] (sequel ?x ?b)]]')))) ORDER BY c0"

RULES="json_object('inputs', json_array(json_object('edn',
         '[[(sequel ?a ?b) [?a :movie/sequel ?b]]
           [(sequel ?a ?b) [?a :movie/sequel ?x] (sequel ?x ?b)]]')))"

# data.edn: The Terminator -> Terminator 2 -> Terminator 3 (two :movie/sequel hops); Alien's
# sequel is Aliens, which has none.
show "Is \"Terminator 3\" a sequel of \"The Terminator\"? Of \"Alien\"? (the rule with both ends bound)" \
"$(printf '%s\n' 'The Terminator: yes' 'Alien: no')" \
"SELECT t || ': ' || CASE WHEN json_extract(edn_q('$DB', '[:find ?yes . :in \$ % ?t :where [?a :movie/title ?t]
                                   [?b :movie/title \"Terminator 3: Rise of the Machines\"]
                                   (sequel ?a ?b) [(ground true) ?yes]]',
       json_object('inputs', json_array(json_extract($RULES, '\$.inputs[0]'), t))), '\$.result')
       = 1 THEN 'yes' ELSE 'no' END
 FROM (SELECT 'The Terminator' AS t UNION ALL SELECT 'Alien') ORDER BY t DESC"

# data.edn: Mel Gibson (-112) directs Braveheart and is in its cast (and in the Lethal Weapon
# and Mad Max films); no other director appears in a cast.
show "Directors who also acted" "Mel Gibson" \
"SELECT c0 FROM edn_q('$DB', '[:find ?name :where [_ :movie/director ?p] [_ :movie/cast ?p]
                                              [?p :person/name ?name]]') ORDER BY c0"

# data.edn: 20 movies whose years add up to 39743 -> 1987.15 per movie. Without :with the
# years form a set first: 14 distinct years averaging 1988.0.
show "Average movie year, per movie (:with ?m) and over the set of years" "1987.15 1988.0" \
"SELECT json_extract(edn_q('$DB', '[:find (avg ?y) . :with ?m :where [?m :movie/year ?y]]'), '\$.result')
        || ' ' || json_extract(edn_q('$DB', '[:find (avg ?y) . :where [_ :movie/year ?y]]'), '\$.result')"

# data.edn: The Terminator's cast is Arnold Schwarzenegger, Linda Hamilton, Michael Biehn.
show "A nested pull in :find: \"The Terminator\" with its cast's names" \
"The Terminator: Arnold Schwarzenegger, Linda Hamilton, Michael Biehn" \
"SELECT json_extract(p, '\$.\":movie/title\"') || ': ' ||
        (SELECT group_concat(n, ', ') FROM (SELECT json_extract(value, '\$.\":person/name\"') AS n
                                             FROM json_each(p, '\$.\":movie/cast\"') ORDER BY n))
 FROM (SELECT c0 AS p FROM edn_q('$DB', '[:find (pull ?m [:movie/title {:movie/cast [:person/name]}]) .
                                       :where [?m :movie/title \"The Terminator\"]]'))"

# data.edn: The Terminator (1984), directed by James Cameron (-100), cast -101 -102 -103 (the
# refs in entity order, as the tempids come in the file); its own :db/id left out here.
show "A pull of \"The Terminator\" (title, year, directors' and cast's names)" \
'{":movie/title":"The Terminator",":movie/year":1984,":movie/director":[{":person/name":"James Cameron"}],'\
'":movie/cast":[{":person/name":"Arnold Schwarzenegger"},{":person/name":"Linda Hamilton"},'\
'{":person/name":"Michael Biehn"}]}' \
"SELECT json_remove(edn_pull('$DB', '[:movie/title :movie/year {:movie/director [:person/name]} {:movie/cast [:person/name]}]', c0),
                    '\$.\":db/id\"')
 FROM edn_q('$DB', '[:find ?m . :where [?m :movie/title \"The Terminator\"]]')"

# data.edn, counted by hand: Cameron (The Terminator, Terminator 2, Aliens), Donner (the three
# Lethal Weapons), George Miller (Mad Max, Mad Max 2, and Beyond Thunderdome with George
# Ogilvie), McTiernan (Predator, Die Hard); one each for the rest.
show "Movies per director (count aggregate)" \
"$(printf '%s\n' '3  George Miller' '3  James Cameron' '3  Richard Donner' '2  John McTiernan' \
  '1  George Ogilvie' '1  George P. Cosmatos' '1  Jonathan Mostow' '1  Mark L. Lester' '1  Mel Gibson' \
  '1  Paul Verhoeven' '1  Peter MacDonald' '1  Ridley Scott' '1  Stephen Hopkins' '1  Ted Kotcheff')" \
"SELECT c1 || '  ' || c0 FROM edn_q('$DB', '[:find ?name (count ?m)
                               :where [?m :movie/director ?d]
                                      [?d :person/name ?name]]') ORDER BY c1 DESC, c0"

# data.edn: Paul Verhoeven's 1987 film is RoboCop.
show "Paul Verhoeven's 1987 film, as one JSON document (scalar edn_q, find-scalar \`.\`)" '{"result":"RoboCop"}' \
"SELECT edn_q('$DB', '[:find ?title . :where [?m :movie/title ?title] [?m :movie/year 1987]
                                            [?m :movie/director ?d] [?d :person/name \"Paul Verhoeven\"]]')"

echo
if [ "$fails" -ne 0 ]; then
  echo "demo: $fails answer(s) differ from the expected ones" >&2
  exit 1
fi
echo "demo: all checked answers match (store kept at $DB)"
