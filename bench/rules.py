#!/usr/bin/python3
"""Recursion through rules at scale: the figures test_qlang.c's rule tests leave out.

Usage: /usr/bin/python3 bench/rules.py EXTENSION.so OUTDIR [CHAIN_NODES]

Loads, through edn_t into a fresh OUTDIR/rules.db, a chain of CHAIN_NODES nodes (default
100,000; :chain/id i, :chain/next -> i+1, in transactions of 25,000 written tail first so each
batch's last node refers to the next batch's first through a lookup ref), a 1,000-node cycle
and a 100-node and a 1,000-node ring; then runs each query once, checks its answer (worked out
by hand: the chain's head reaches every other node, a bound start near the tail only the
nodes after it; a cycle's node reaches all of it, itself included; a ring's whole closure is
n * n pairs) and prints its CPU and wall time. test_qlang.c asserts the same shapes on a
1,000-node chain; speed is only measured here, never asserted in a unit test.
Writes OUTDIR/rules.json; exits 1 when an answer is wrong.
"""
import json
import os
import sqlite3
import sys
import time

SCHEMA = """[{:db/ident :chain/id :db/valueType :db.type/long :db/cardinality :db.cardinality/one :db/unique :db.unique/identity}
 {:db/ident :chain/next :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}
 {:db/ident :cyc/id :db/valueType :db.type/long :db/cardinality :db.cardinality/one :db/unique :db.unique/identity}
 {:db/ident :cyc/next :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}
 {:db/ident :ring/id :db/valueType :db.type/long :db/cardinality :db.cardinality/one :db/unique :db.unique/identity}
 {:db/ident :ring/next :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}
 {:db/ident :ring2/id :db/valueType :db.type/long :db/cardinality :db.cardinality/one :db/unique :db.unique/identity}
 {:db/ident :ring2/next :db/valueType :db.type/ref :db/cardinality :db.cardinality/one}]"""

REACH = '[[(reach ?x ?y) [?x :chain/next ?y]] [(reach ?x ?y) [?x :chain/next ?z] (reach ?z ?y)]]'
NEXT_ID = ('[[(next-id ?i ?j) [?x :chain/id ?i] [?x :chain/next ?y] [?y :chain/id ?j]]'
           ' [(next-id ?i ?j) [?x :chain/id ?i] [?x :chain/next ?y] [?y :chain/id ?k] (next-id ?k ?j)]]')


def rule(attr):
    return '[[(r ?x ?y) [?x %s ?y]] [(r ?x ?y) [?x %s ?z] (r ?z ?y)]]' % (attr, attr)


def remove_db(path):
    for suffix in ('', '-wal', '-shm'):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)


def load_chain(con, db, n, batch=25000):
    start = ((n - 1) // batch) * batch
    while start >= 0:
        end = min(start + batch, n)
        parts = []
        for i in range(start, end):
            if i + 1 >= n:
                parts.append('{:db/id "c%d" :chain/id %d}' % (i, i))
            elif i + 1 < end:
                parts.append('{:db/id "c%d" :chain/id %d :chain/next "c%d"}' % (i, i, i + 1))
            else:
                parts.append('{:db/id "c%d" :chain/id %d :chain/next [:chain/id %d]}' % (i, i, i + 1))
        con.execute('SELECT edn_t(?, ?)', (db, '[' + ' '.join(parts) + ']')).fetchone()
        start -= batch


def load_ring(con, db, ns, n):
    parts = ['{:db/id "%s%d" :%s/id %d :%s/next "%s%d"}' % (ns, i, ns, i, ns, ns, (i + 1) % n)
             for i in range(n)]
    con.execute('SELECT edn_t(?, ?)', (db, '[' + ' '.join(parts) + ']')).fetchone()


def main():
    ext = os.path.splitext(sys.argv[1])[0]
    out = sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 100000
    os.makedirs(out, exist_ok=True)
    db = os.path.join(out, 'rules.db')
    remove_db(db)
    con = sqlite3.connect(':memory:', isolation_level=None)
    con.enable_load_extension(True)
    con.load_extension(ext)
    con.execute('SELECT edn_t(?, ?)', (db, SCHEMA)).fetchone()
    t0 = time.monotonic()
    load_chain(con, db, n)
    results = {'chain_nodes': n, 'chain_load_s': round(time.monotonic() - t0, 3), 'queries': []}
    print('chain: %d nodes loaded in %.2f s' % (n, results['chain_load_s']))
    load_ring(con, db, 'cyc', 1000)
    load_ring(con, db, 'ring', 100)
    load_ring(con, db, 'ring2', 1000)
    tail = con.execute('SELECT edn_q(?, ?)', (db, '[:find ?b . :where [?b :chain/id %d]]' % (n - 1))).fetchone()[0]
    tail = str(json.loads(tail)['result'])

    def opts(rules, *more):
        return json.dumps({'inputs': [{'edn': rules}] + list(more)})

    cases = [
        ('chain: reach from the head (%d answers)' % (n - 1),
         '[:find (count ?b) . :in $ % :where [?a :chain/id 0] (reach ?a ?b)]', opts(REACH), [str(n - 1)]),
        ('chain: head reaches the tail',
         '[:find ?b . :in $ %% :where [?a :chain/id 0] [?b :chain/id %d] (reach ?a ?b)]' % (n - 1),
         opts(REACH), [tail]),
        ('chain: reach from node %d (3 answers)' % (n - 4),
         '[:find [?i ...] :in $ % ?s :where [?a :chain/id ?s] (reach ?a ?b) [?b :chain/id ?i]]',
         opts(REACH, n - 4), [str(n - 3), str(n - 2), str(n - 1)]),
        ('chain: constant id %d (2 answers)' % (n - 3),
         '[:find [?j ...] :in $ %% :where (next-id %d ?j)]' % (n - 3), opts(NEXT_ID), [str(n - 2), str(n - 1)]),
        ('cycle: reach from one node (1,000 answers)',
         '[:find (count ?b) . :in $ % :where [?a :cyc/id 0] (r ?a ?b)]', opts(rule(':cyc/next')), ['1000']),
        ('ring: whole closure of 100 nodes (10,000 pairs)',
         '[:find (count ?b) . :with ?a :in $ % :where (r ?a ?b)]', opts(rule(':ring/next')), ['10000']),
        ('ring: whole closure of 1,000 nodes (1,000,000 pairs)',
         '[:find (count ?b) . :with ?a :in $ % :where (r ?a ?b)]', opts(rule(':ring2/next')), ['1000000']),
    ]
    bad = 0
    for name, q, o, want in cases:
        w0, c0 = time.monotonic(), time.process_time()
        got = sorted(r[0] for r in con.execute('SELECT value FROM edn_q(?, ?, ?)', (db, q, o)))
        cpu, wall = time.process_time() - c0, time.monotonic() - w0
        ok = got == sorted(want)
        bad += not ok
        results['queries'].append({'name': name, 'cpu_s': round(cpu, 4), 'wall_s': round(wall, 4), 'ok': ok})
        print('%s: %.4f s CPU, %.4f s wall%s' % (name, cpu, wall, '' if ok else '  WRONG: %s, want %s' % (got, want)))
    con.close()
    remove_db(db)
    with open(os.path.join(out, 'rules.json'), 'w') as f:
        json.dump(results, f, indent=1)
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
