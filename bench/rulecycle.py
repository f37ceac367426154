#!/usr/bin/python3
"""A cycle of n mutually recursive rules called with bound arguments (issue 19, B6), timed
against one self-recursive rule (n = 1) on the same graph and queries.

Usage: /usr/bin/python3 bench/rulecycle.py EXTENSION.so OUTDIR [N ...] [--nodes K] [--edges D]
       [--reps R] [--max-s S]

Loads a graph of K nodes (default 100), each with D random out-edges (default 5, seeded, so
every run has the same graph; :node/id i, :node/follow refs) into a fresh OUTDIR/rulecycle.db,
then for each N (default 1 4 8 16 32) runs two rule families, each with the start bound (a
pattern), the end bound, and both:
- edge: (rI ?a ?b) is an edge, or an edge then r(I+1 mod N); every rI is then the transitive
  closure, so the answer is what one rule gives;
- mod: only r0 has the edge alone; rI is an edge then r(I+1 mod N), so r0 is the walks of
  length 1 mod N: which head a seed is for decides the answer;
- distinct: as edge, each definition with a [(!= ?c -I)] of its own (always true), so no two
  bodies are alike and the seeds' CTE keeps one branch per definition.
Each answer is checked against the same relation worked out here in Python (a walk over the
states (node, head)); the time printed is the best of R runs (wall, one process), with its
ratio to the N = 1 query of the same family and form. Speed is only measured here, never
asserted in a unit test. A query slower than S seconds (default 30) is run once and the larger
N of its family and form are skipped. Writes OUTDIR/rulecycle.json; exits 1 when an answer is
wrong.
"""
import json
import os
import random
import sqlite3
import sys
import time

SCHEMA = """[{:db/ident :node/id :db/valueType :db.type/long :db/cardinality :db.cardinality/one :db/unique :db.unique/identity}
 {:db/ident :node/follow :db/valueType :db.type/ref :db/cardinality :db.cardinality/many}]"""


def rules(family, n):
    out = []
    for i in range(n):
        j = (i + 1) % n
        if family == 'distinct':
            # bodies that differ (a constant of their own), so no two compile alike
            out.append('[(r%d ?a ?b) [?a :node/follow ?b] [(!= ?b -%d)]]' % (i, i + 1))
            out.append('[(r%d ?a ?b) [?a :node/follow ?c] [(!= ?c -%d)] (r%d ?c ?b)]' % (i, i + 1, j))
            continue
        if family == 'edge' or i == 0:
            out.append('[(r%d ?a ?b) [?a :node/follow ?b]]' % i)
        out.append('[(r%d ?a ?b) [?a :node/follow ?c] (r%d ?c ?b)]' % (i, j))
    return '[' + ' '.join(out) + ']'


def answers(family, n, edges, start):
    """r0(start, ?b): the states (node, head) the calls reach, then the base edges of the heads
    that have one."""
    seen = {(start, 0)}
    todo = [(start, 0)]
    out = set()
    while todo:
        a, i = todo.pop()
        for c in edges[a]:
            if family != 'mod' or i == 0:
                out.add(c)
            s = (c, (i + 1) % n)
            if s not in seen:
                seen.add(s)
                todo.append(s)
    return out


def remove_db(path):
    for suffix in ('', '-wal', '-shm'):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)


def main():
    args = sys.argv[1:]
    opt = {'--nodes': 100, '--edges': 5, '--reps': 3, '--max-s': 30.0}
    ns = []
    pos = []
    i = 0
    while i < len(args):
        if args[i] in opt:
            opt[args[i]] = type(opt[args[i]])(args[i + 1])
            i += 2
        else:
            pos.append(args[i])
            i += 1
    ext = os.path.splitext(pos[0])[0]
    out = pos[1]
    ns = [int(x) for x in pos[2:]] or [1, 4, 8, 16, 32]
    k, d = opt['--nodes'], opt['--edges']
    rnd = random.Random(19)
    edges = {a: sorted(rnd.sample([b for b in range(k) if b != a], d)) for a in range(k)}
    os.makedirs(out, exist_ok=True)
    db = os.path.join(out, 'rulecycle.db')
    remove_db(db)
    con = sqlite3.connect(':memory:', isolation_level=None)
    con.enable_load_extension(True)
    con.load_extension(ext)
    con.execute('SELECT edn_t(?, ?)', (db, SCHEMA)).fetchone()
    con.execute('SELECT edn_t(?, ?)', (db, '[' + ' '.join('{:db/id "n%d" :node/id %d}' % (a, a)
                                                            for a in range(k)) + ']')).fetchone()
    con.execute('SELECT edn_t(?, ?)', (db, '[' + ' '.join(
        '[:db/add [:node/id %d] :node/follow [:node/id %d]]' % (a, b)
        for a in range(k) for b in edges[a]) + ']')).fetchone()
    start, end = 1, 7
    forms = [
        ('start', '[:find ?i :in $ %% :where [?x :node/id %d] (r0 ?x ?y) [?y :node/id ?i]]' % start,
         lambda fam, n: sorted(answers(fam, n, edges, start))),
        ('end', '[:find ?i :in $ %% :where [?y :node/id %d] (r0 ?x ?y) [?x :node/id ?i]]' % end,
         lambda fam, n: sorted(a for a in range(k) if end in answers(fam, n, edges, a))),
        ('both', '[:find ?i :in $ %% :where [?x :node/id %d] [?y :node/id %d] (r0 ?x ?y)'
                 ' [?x :node/id ?i]]' % (start, end),
         lambda fam, n: [start] if end in answers(fam, n, edges, start) else []),
    ]
    results = {'nodes': k, 'edges_per_node': d, 'queries': []}
    base = {}
    bad = 0
    print('%d nodes x %d edges; best of %d (wall, s); x = the ratio to N = 1' % (k, d, opt['--reps']))
    for fam in ('edge', 'mod', 'distinct'):
        for form, q, want_of in forms:
            skip = False
            for n in ns:
                if skip:
                    continue
                o = json.dumps({'inputs': [{'edn': rules(fam, n)}]})
                want = want_of(fam, n)
                best = None
                for rep in range(opt['--reps']):
                    w0 = time.monotonic()
                    got = sorted(json.loads(r[0])[0] for r in con.execute('SELECT value FROM edn_q(?, ?, ?)', (db, q, o)))
                    wall = time.monotonic() - w0
                    best = wall if best is None else min(best, wall)
                    if wall > opt['--max-s']:
                        skip = True
                        break
                ok = got == want
                bad += not ok
                if n == 1:
                    base[(fam, form)] = best
                ratio = best / base[(fam, form)] if (fam, form) in base else None
                results['queries'].append({'family': fam, 'form': form, 'n': n, 'wall_s': round(best, 5),
                                           'ratio': ratio and round(ratio, 2), 'answers': len(want),
                                           'ok': ok})
                print('%-4s %-5s N=%-3d %8.4f s%s  %d answers%s' % (
                    fam, form, n, best, '  x%.2f' % ratio if ratio else '', len(want),
                    '' if ok else '  WRONG: %s, want %s' % (got, want)))
    con.close()
    remove_db(db)
    with open(os.path.join(out, 'rulecycle.json'), 'w') as f:
        json.dump(results, f, indent=1)
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
