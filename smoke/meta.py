#!/usr/bin/python3
"""smoke/meta.py — metamorphic tests of edn_q and edn_pull.

For each seed: a random store (a few attributes of several types, refs,
cardinality one and many, one :db.unique/identity attribute; random entities
and values over several transactions with retractions and replacements), then
random Datalog queries (data patterns sharing variables, constants, variable
attributes, ref joins, predicates, not, or, rules, aggregates). Nothing is
compared with a stored answer: each query is run in forms that must agree, as
Datomic's semantics say (a query is a set-valued function of the database,
the order of its clauses does not change its meaning, docs "Query"):

  perm     the data patterns permuted (the clauses that need bound variables —
           predicates, not, or — kept after them, shuffled among themselves)
  dup      one clause written twice
  form     the table rows (value column) vs the scalar document's "result";
           a relation has no duplicate row in either
  asof     {"asOf": the latest tx} vs no opts
  since    {"since": 0} vs no opts (every current datom has a tx > 0)
  split    Q and X, Q and (not X): disjoint on all variables, their union Q
           (X a data pattern or a predicate whose variables Q binds)
  rule     a data pattern replaced by a call to a rule whose body it is
  or1      a data pattern wrapped in a one-branch or, and in (or X X)
  count    (count ?x) :with the other variables vs the number of rows over all
           variables; count-distinct vs the distinct values
  pull     edn_pull(e, [*]) and (pull ?e [*]) in :find vs [?e ?a ?v]
  model    [?e ?a ?v] over the user attributes (now, asOf T, since T, both) vs the
           datoms this script's own model of the transactions gives
  history  the history database's assertions and retractions up to T vs the
           asOf T database

Usage: /usr/bin/python3 smoke/meta.py /abs/path/libmentat_sqlite.so
         [--seeds N] [--first S] [--queries Q]
(META_SEEDS, META_FIRST, META_QUERIES in the environment do the same). The
default is the fixed, fast run of `make smoke`; `make meta` runs many seeds.
A mismatch prints the seed, the relation, the query texts and both results,
and the run fails. Prints 'N checks, M failed' at the end.
"""
import glob
import json
import os
import random
import re
import shutil
import sqlite3
import sys
import tempfile

EXT = None
TMP = tempfile.mkdtemp(prefix='mentat-meta.')
FAILS = []
CHECKS = [0]
QUERIES = [0]

TYPES = ['long', 'string', 'keyword', 'boolean', 'double', 'ref', 'instant']
ORDERED = {'long', 'string', 'double', 'instant', 'keyword'}


class Fail(Exception):
    pass


# ---- values: the model keeps Python values tagged by type; each has an EDN
# literal, the JSON edn_q gives (SPEC 2.3) and the JSON edn_pull gives.

def edn_of(t, v):
    if t in ('long', 'ref'):
        return str(v)
    if t == 'double':
        return repr(v)
    if t == 'string':
        return '"%s"' % v
    if t == 'keyword':
        return v
    if t == 'boolean':
        return 'true' if v else 'false'
    if t == 'instant':
        return '#inst "2020-01-%02dT00:00:00.000Z"' % v
    raise ValueError(t)


def qjson_of(t, v):
    if t == 'instant':
        return '2020-01-%02dT00:00:00.000000Z' % v
    return v


def pjson_of(t, v):
    if t == 'ref':
        return {':db/id': v}
    if t == 'instant':
        return (1577836800 + (v - 1) * 86400) * 1000000
    return v


def domain(t, rnd):
    if t == 'long':
        return rnd.randint(-2, 6)
    if t == 'double':
        return rnd.choice([-1.5, 0.25, 1.5, 2.5, 7.75])
    if t == 'string':
        return 's%d' % rnd.randint(0, 5)
    if t == 'keyword':
        return ':k/v%d' % rnd.randint(0, 4)
    if t == 'boolean':
        return rnd.random() < 0.5
    if t == 'instant':
        return rnd.randint(1, 6)
    raise ValueError(t)


def connect():
    con = sqlite3.connect(':memory:')
    con.enable_load_extension(True)
    con.load_extension(EXT)
    return con


def key(row):
    return json.dumps(row, sort_keys=True)


class Store:
    """A store file, the schema the seed chose and a model of its log."""

    def __init__(self, con, seed):
        self.con = con
        self.rnd = random.Random(seed)
        self.path = os.path.join(TMP, 'meta-%d.db' % seed)
        self.attrs = {}          # ident -> (type, many)
        self.ids = {}            # ident -> entid
        self.log = []            # (e, ident, value, tx, added)
        self.cur = {}            # (e, ident) -> set of values
        self.ents = []
        self.txs = []
        self.texts = []
        self.build()

    def t(self, edn):
        rep = json.loads(self.con.execute('SELECT edn_t(?, ?)', (self.path, edn)).fetchone()[0])
        self.txs.append(rep['tx_id'])
        self.texts.append(edn)
        return rep

    def build(self):
        rnd = self.rnd
        self.attrs[':a/id'] = ('string', False)
        types = ['ref', 'long'] + [rnd.choice(TYPES) for _ in range(rnd.randint(2, 4))]
        for i, t in enumerate(types):
            self.attrs[':a/%s%d' % (t, i)] = (t, rnd.random() < 0.4)
        forms = []
        for ident, (t, many) in self.attrs.items():
            forms.append('{:db/ident %s :db/valueType :db.type/%s :db/cardinality :db.cardinality/%s%s}'
                         % (ident, t, 'many' if many else 'one',
                            ' :db/unique :db.unique/identity' if ident == ':a/id' else ''))
        self.t('[%s]' % ' '.join(forms))
        rows = self.con.execute(
            "SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM edn_q(?, ?)",
            (self.path, '[:find ?i ?a :where [?a :db/ident ?i] [?a :db/valueType _]]')).fetchall()
        self.ids = {i: a for i, a in rows}
        for n in range(rnd.randint(4, 6)):
            self.transact(n)

    def value(self, ident):
        t = self.attrs[ident][0]
        if t == 'ref':
            return self.rnd.choice(self.ents)
        return domain(t, self.rnd)

    def transact(self, n):
        rnd = self.rnd
        ops = []        # (op, e, ident, value) with e an entid or a tempid
        new = []
        for k in range(rnd.randint(2, 5) if n < 2 else rnd.randint(0, 2)):
            tid = 't%d' % k
            new.append(tid)
            ops.append(('add', tid, ':a/id', 'id%d-%d' % (n, k)))
        if not self.ents and not new:
            return
        pool = self.ents + new
        users = [a for a in self.attrs if a != ':a/id']
        # a new entity gets most attributes, so joins find something
        for tid in new:
            for a in users:
                if rnd.random() < 0.7:
                    t = self.attrs[a][0]
                    ops.append(('add', tid, a, rnd.choice(pool) if t == 'ref' else domain(t, rnd)))
        for _ in range(rnd.randint(3, 10)):
            e = rnd.choice(pool)
            a = rnd.choice(users)
            if self.attrs[a][0] == 'ref':
                v = rnd.choice(pool)
            else:
                v = domain(self.attrs[a][0], rnd)
            ops.append(('add', e, a, v))
        cur = [(e, a, v) for (e, a), vs in self.cur.items() if a != ':a/id' for v in vs]
        for _ in range(min(len(cur), rnd.randint(0, 3))):
            e, a, v = rnd.choice(cur)
            if not any(o[1] == e and o[2] == a for o in ops):
                ops.append(('retract', e, a, v))
        # A datom asserted and retracted in one tx is an error in Datomic; a
        # cardinality-one attribute takes one value per entity per tx.
        seen, kept = set(), []
        for op in ops:
            k = (op[1], op[2]) if not self.attrs[op[2]][1] or op[0] == 'retract' else (op[1], op[2], op[3])
            if k in seen:
                continue
            seen.add(k)
            kept.append(op)
        # whole retractions: an attribute of an entity, or the entity (with
        # the refs that point at it), touching nothing else in the tx
        whole = []
        for _ in range(rnd.randint(0, 1) if n >= 2 and self.ents else 0):
            e = rnd.choice(self.ents)
            if rnd.random() < 0.5:
                a = rnd.choice(users)
                kept = [o for o in kept if (o[1], o[2]) != (e, a)]
                whole.append(('retractAttr', e, a))
            else:
                kept = [o for o in kept if o[1] != e and not (self.attrs[o[2]][0] == 'ref' and o[3] == e)]
                # Datomic retracts the refs pointing at it in the same tx
                kept = [o for o in kept if not (self.attrs[o[2]][0] == 'ref' and e in self.cur.get((o[1], o[2]), ()))
                        or o[0] == 'add']
                whole.append(('retractEntity', e, None))
        def ent(e):
            return '"%s"' % e if isinstance(e, str) else str(e)
        def val(a, v):
            t = self.attrs[a][0]
            return ent(v) if t == 'ref' else edn_of(t, v)
        def form(op, e, a, v):
            ids = self.cur.get((e, ':a/id')) if isinstance(e, int) else None
            if op == 'add' and ids and rnd.random() < 0.3:
                # an upsert on the identity attribute, or a lookup ref
                i = next(iter(ids))
                if rnd.random() < 0.5:
                    return '{:a/id "%s" %s %s}' % (i, a, val(a, v))
                return '[:db/add [:a/id "%s"] %s %s]' % (i, a, val(a, v))
            return '[:db/%s %s %s %s]' % (op, ent(e), a, val(a, v))
        forms = [form(*op) for op in kept]
        for op, e, a in whole:
            forms.append('[:db/retract %d %s]' % (e, a) if op == 'retractAttr' else '[:db/retractEntity %d]' % e)
        edn = '[%s]' % ' '.join(forms)
        rep = self.t(edn)
        tx = rep['tx_id']
        tmp = rep['tempids']
        def res(e):
            return tmp[e] if isinstance(e, str) else e
        for op, e, a, v in kept:
            e = res(e)
            if self.attrs[a][0] == 'ref':
                v = res(v)
            vs = self.cur.setdefault((e, a), set())
            if op == 'add':
                if v in vs:
                    continue
                if not self.attrs[a][1]:
                    for old in list(vs):
                        self.log.append((e, a, old, tx, False))
                    vs.clear()
                vs.add(v)
                self.log.append((e, a, v, tx, True))
            elif v in vs:
                vs.discard(v)
                self.log.append((e, a, v, tx, False))
        for op, e, a in whole:
            for (x, b), vs in self.cur.items():
                if (op == 'retractAttr' and (x, b) == (e, a)) or \
                        (op == 'retractEntity' and (x == e or (self.attrs[b][0] == 'ref' and e in vs))):
                    for v in sorted(vs, key=key) if x == e else [e]:
                        if v in vs:
                            self.log.append((x, b, v, tx, False))
                    if x == e:
                        vs.clear()
                    else:
                        vs.discard(e)
        self.ents.extend(tmp[t] for t in new)

    # ---- queries

    def record(self, form, query, opts):
        # the queries of the current database, for asOf T vs the replayed store
        rec = getattr(self, 'recent', None)
        if rec is not None and not (opts and ({'asOf', 'since', 'history'} & set(opts))):
            rec.append((form, query, opts))

    def q(self, query, opts=None):
        QUERIES[0] += 1
        self.record('table', query, opts)
        try:
            rows = self.con.execute('SELECT value FROM edn_q(?, ?, ?)',
                                    (self.path, query, json.dumps(opts) if opts else None)).fetchall()
        except sqlite3.Error as e:
            raise Fail('table form failed: %s\n  query: %s\n  opts: %s' % (e, query, opts))
        return [json.loads(r[0]) for r in rows]

    def qs(self, query, opts=None):
        QUERIES[0] += 1
        if query.startswith('[:find ('):
            self.record('scalar', query, opts)
        try:
            doc = self.con.execute('SELECT edn_q(?, ?, ?)',
                                   (self.path, query, json.dumps(opts) if opts else None)).fetchone()[0]
        except sqlite3.Error as e:
            raise Fail('scalar form failed: %s\n  query: %s\n  opts: %s' % (e, query, opts))
        return json.loads(doc)['result']

    def pull(self, e):
        QUERIES[0] += 1
        return json.loads(self.con.execute('SELECT edn_pull(?, ?, ?)', (self.path, '[*]', e)).fetchone()[0])

    # The model: every user datom of the database now, as of T, or since T.
    def model(self, as_of=None, since=None):
        out = {}
        for e, a, v, tx, added in self.log:
            if as_of is not None and tx > as_of:
                continue
            if added:
                out[(e, a, key(v))] = tx
            else:
                out.pop((e, a, key(v)), None)
        return {k for k, tx in out.items() if since is None or tx > since}


def check(seed, rel, a, b, *texts):
    CHECKS[0] += 1
    if a != b:
        FAILS.append(seed)
        print('FAIL seed %d %s' % (seed, rel))
        for t in texts:
            print('  ' + t)
        if isinstance(a, set) and isinstance(b, set):
            print('  only in the first: %s' % sorted(a - b, key=str)[:8])
            print('  only in the second: %s' % sorted(b - a, key=str)[:8])
        else:
            print('  first: %s' % repr(a)[:800])
            print('  second: %s' % repr(b)[:800])
        return False
    return True


def rows_set(rows):
    return {key(r) for r in rows}


# ---- the query generator. A query is a list of clauses, each a dict with its
# text, the variables it binds (data patterns, rule calls) or needs bound
# (predicates, not, or), and its kind.

class Gen:
    def __init__(self, st, rnd):
        self.st = st
        self.rnd = rnd
        self.n = 0
        self.types = {}   # variable -> type ('ref' for entities, None unknown)

    def var(self, t):
        self.n += 1
        v = ('?e%d' if t == 'ref' else '?tx%d' if t == 'tx' else '?v%d') % self.n
        self.types[v] = t
        return v

    def vars_of(self, t):
        return [v for v, vt in self.types.items() if vt == t]

    def const(self, ident):
        t = self.st.attrs[ident][0]
        # Mostly a value the store holds, so constants select something.
        held = [v for (e, a), vs in self.st.cur.items() if a == ident for v in vs]
        if held and self.rnd.random() < 0.8:
            v = self.rnd.choice(held)
        elif t == 'ref':
            v = self.rnd.choice(self.st.ents)
        elif ident == ':a/id':
            v = 'id0-%d' % self.rnd.randint(0, 3)
        else:
            v = domain(t, self.rnd)
        return edn_of(t, v)

    def pattern(self, e):
        st, rnd = self.st, self.rnd
        r = rnd.random()
        if r < 0.08:
            # a variable attribute; its value may join a typed variable (a
            # boolean true is not the long 1, a keyword not the string)
            a = self.var(None)
            self.types[a] = 'attr'
            old = [w for w, t in self.types.items() if t not in ('ref', 'attr', 'tx')]
            v = rnd.choice(old) if old and rnd.random() < 0.3 else self.var(None)
            return {'kind': 'data', 'text': '[%s %s %s]' % (e, a, v), 'parts': (e, a, v), 'binds': {e, a, v}}
        if r < 0.1:
            # an attribute the store does not have: the pattern is empty
            v = self.var(None)
            return {'kind': 'data', 'text': '[%s :a/nope %s]' % (e, v), 'binds': {e, v}, 'parts': (e, ':a/nope', v)}
        ident = rnd.choice(list(st.attrs))
        t = st.attrs[ident][0]
        if r < 0.25:
            c = self.const(ident)
            return {'kind': 'data', 'text': '[%s %s %s]' % (e, ident, c), 'parts': (e, ident, c), 'binds': {e},
                    'const': True}
        if r < 0.3:
            return {'kind': 'data', 'text': '[%s %s _]' % (e, ident), 'binds': {e}, 'parts': (e, ident, '_')}
        same = self.vars_of(t) + self.vars_of(None)
        anyv = [w for w, wt in self.types.items() if wt != 'attr']
        if anyv and rnd.random() < 0.08:
            # a variable of another type: a long and a double, a ref and a
            # long, a string and a keyword; the clauses' order must not matter
            v = rnd.choice(anyv)
        elif same and rnd.random() < 0.3:
            v = rnd.choice(same)
        else:
            v = self.var(t)
        if rnd.random() < 0.15:
            # the tx that asserted the datom, maybe the same tx as another's
            txs = self.vars_of('tx')
            tx = rnd.choice(txs) if txs and rnd.random() < 0.5 else self.var('tx')
            return {'kind': 'data', 'text': '[%s %s %s %s]' % (e, ident, v, tx), 'binds': {e, v, tx},
                    'parts': (e, ident, v), 'tx': tx}
        return {'kind': 'data', 'text': '[%s %s %s]' % (e, ident, v), 'parts': (e, ident, v), 'binds': {e, v}}

    def query(self):
        rnd = self.rnd
        clauses = []
        e0 = self.var('ref')
        clauses.append(self.pattern(e0))
        for _ in range(rnd.randint(0, 4)):
            ents = self.vars_of('ref')
            if rnd.random() < 0.2:
                # a new entity reached by a ref attribute
                refs = [a for a, (t, _) in self.st.attrs.items() if t == 'ref']
                e1 = self.var('ref')
                src = rnd.choice(ents)
                if rnd.random() < 0.5:
                    p = (src, rnd.choice(refs), e1)
                    clauses.append({'kind': 'data', 'text': '[%s %s %s]' % p, 'parts': p,
                                    'binds': {src, e1}})
                else:
                    p = (e1, rnd.choice(refs), src)
                    clauses.append({'kind': 'data', 'text': '[%s %s %s]' % p, 'parts': p,
                                    'binds': {src, e1}})
            else:
                clauses.append(self.pattern(rnd.choice(ents)))
        return clauses

    def bound(self, clauses):
        out = set()
        for c in clauses:
            if c['kind'] in ('data', 'rule'):
                out |= c['binds']
        return out

    def typed(self, clauses, t=None):
        b = self.bound(clauses)
        return [v for v in sorted(b) if self.types.get(v) in (ORDERED if t is None else {t})]

    def predicate(self, clauses, negate=False):
        """A comparison on a bound variable of an ordered type; None if none."""
        vs = self.typed(clauses)
        if not vs:
            return None
        v = self.rnd.choice(vs)
        t = self.types[v]
        num = ('long', 'double')
        same = [w for w in vs if w != v and (self.types[w] == t or (t in num and self.types[w] in num))]
        if same and self.rnd.random() < 0.3:
            other = self.rnd.choice(same)
        elif t in num and self.rnd.random() < 0.3:
            ot = 'double' if t == 'long' else 'long'
            other = edn_of(ot, domain(ot, self.rnd))
        else:
            other = edn_of(t, domain(t, self.rnd))
        op = self.rnd.choice(['<', '<=', '>', '>=', '=', '!='])
        return {'kind': 'pred', 'text': '[(%s %s %s)]' % (op, v, other), 'needs': {v} | ({other} if other.startswith('?') else set())}

    def extra(self, clauses):
        """A clause over variables the data patterns bind: a predicate, not or or."""
        rnd = self.rnd
        r = rnd.random()
        ents = [v for v in self.bound(clauses) if self.types.get(v) == 'ref']
        if r < 0.4 or not ents:
            return self.predicate(clauses)
        e = rnd.choice(sorted(ents))
        idents = list(self.st.attrs)
        if r < 0.55:
            a = rnd.choice(idents)
            return {'kind': 'not', 'text': '(not [%s %s %s])' % (e, a, self.const(a)), 'needs': {e}}
        if r < 0.7:
            # a not with a variable of its own and a predicate on it
            a = rnd.choice([i for i, (t, _) in self.st.attrs.items() if t in ORDERED])
            t = self.st.attrs[a][0]
            self.n += 1
            return {'kind': 'not', 'needs': {e},
                    'text': '(not [%s %s ?n%d] [(%s ?n%d %s)])' % (e, a, self.n, rnd.choice(['<', '>=', '=']),
                                                                   self.n, edn_of(t, domain(t, rnd)))}
        a, b = rnd.choice(idents), rnd.choice(idents)
        return {'kind': 'or', 'text': '(or [%s %s %s] [%s %s %s])' % (e, a, self.const(a), e, b, self.const(b)),
                'needs': {e}}


def text(find, clauses, rules=None, with_=None):
    q = '[:find %s' % find
    if with_:
        q += ' :with %s' % ' '.join(with_)
    if rules:
        q += ' :in $ %'
    return q + ' :where ' + ' '.join(c['text'] for c in clauses) + ']'


def run_query(st, gen, seed, clauses, rnd):
    bound = sorted(gen.bound(clauses))
    extras = []
    for _ in range(rnd.choice([0, 0, 1, 1, 2])):
        x = gen.extra(clauses)
        if x:
            extras.append(x)
    allc = clauses + extras
    find_vars = [v for v in bound if rnd.random() < 0.7] or [bound[0]]
    rnd.shuffle(find_vars)
    find = ' '.join(find_vars)
    base_q = text(find, allc)
    base = st.q(base_q)
    base_set = rows_set(base)
    check(seed, 'form (no duplicate rows)', len(base), len(base_set), base_q)
    check(seed, 'form', base_set, rows_set(st.qs(base_q)), base_q)

    # perm: data patterns in any order, the others after them in any order
    d, x = clauses[:], extras[:]
    rnd.shuffle(d)
    rnd.shuffle(x)
    q2 = text(find, d + x)
    check(seed, 'perm', base_set, rows_set(st.q(q2)), base_q, q2)

    # dup: one clause twice, the copy anywhere its variables are bound
    i = rnd.randrange(len(allc))
    c = allc[i]
    copy = allc[:]
    if c['kind'] == 'data':
        copy.insert(rnd.randrange(len(clauses) + 1), c)
    else:
        copy.append(c)
    q3 = text(find, copy)
    check(seed, 'dup', base_set, rows_set(st.q(q3)), base_q, q3)

    check(seed, 'asof', base_set, rows_set(st.q(base_q, {'asOf': st.txs[-1]})), base_q, 'opts asOf %d' % st.txs[-1])
    check(seed, 'since', base_set, rows_set(st.q(base_q, {'since': 0})), base_q, 'opts since 0')
    # the history database: clause order, asOf the latest tx, since 0
    hist = rows_set(st.q(base_q, {'history': True}))
    check(seed, 'history perm', hist, rows_set(st.q(q2, {'history': True})), base_q, q2, 'opts history')
    check(seed, 'history dup', hist, rows_set(st.q(q3, {'history': True})), base_q, q3, 'opts history')
    check(seed, 'history asof', hist, rows_set(st.q(base_q, {'history': True, 'asOf': st.txs[-1]})), base_q,
          'opts history, asOf %d' % st.txs[-1])
    check(seed, 'history since', hist, rows_set(st.q(base_q, {'history': True, 'since': 0})), base_q,
          'opts history, since 0')
    check(seed, 'history holds now', set(), base_set - hist, base_q, 'opts history') if not extras else None

    # split: Q with X and Q with (not X), over every variable
    allv = ' '.join(bound)
    full_q = text(allv, allc)
    full = rows_set(st.q(full_q))
    if rnd.random() < 0.5:
        ents = [v for v in bound if gen.types.get(v) == 'ref']
        a = rnd.choice(list(st.attrs))
        xc = {'kind': 'data', 'text': '[%s %s %s]' % (rnd.choice(ents), a, gen.const(a))}
    else:
        xc = gen.predicate(clauses)
    if xc:
        yes_q = text(allv, allc + [xc])
        no_q = text(allv, allc + [{'kind': 'not', 'text': '(not %s)' % xc['text']}])
        yes, no = rows_set(st.q(yes_q)), rows_set(st.q(no_q))
        check(seed, 'split (disjoint)', set(), yes & no, yes_q, no_q)
        check(seed, 'split (union)', full, yes | no, full_q, yes_q, no_q)

    # rule: a data pattern as a rule's body
    j = rnd.randrange(len(clauses))
    pat = clauses[j]
    args = sorted(pat['binds'])
    rule = '[[(r %s) %s]]' % (' '.join(args), pat['text'])
    call = {'kind': 'rule', 'text': '(r %s)' % ' '.join(args), 'binds': pat['binds']}
    rq = text(find, clauses[:j] + [call] + clauses[j + 1:] + extras, rules=True)
    QUERIES[0] += 1
    try:
        got = {key(json.loads(r[0])) for r in st.con.execute(
            'SELECT value FROM edn_q(?, ?, ?)',
            (st.path, rq, json.dumps({'inputs': [{'edn': rule}]})))}
    except sqlite3.Error as e:
        got = 'error: %s' % e
    check(seed, 'rule', base_set, got, base_q, rq, 'rules ' + rule)

    # or1: a data pattern in a one-branch or, and in (or X X)
    k = rnd.randrange(len(clauses))
    p = clauses[k]
    if len(p['binds']) and rnd.random() < 0.5:
        w = {'kind': 'or', 'text': '(or %s)' % p['text']}
    else:
        w = {'kind': 'or', 'text': '(or %s %s)' % (p['text'], p['text'])}
    # an or's variables must be bound where Datomic requires it only for or-join;
    # a plain or unifies with the query: it may come first.
    oq = text(find, clauses[:k] + [w] + clauses[k + 1:] + extras)
    check(seed, 'or1', base_set, rows_set(st.q(oq)), base_q, oq)

    # count: (count ?x) :with the rest vs the rows over every variable
    if full:
        xv = rnd.choice(bound)
        rest = [v for v in bound if v != xv]
        cq = text('(count %s)' % xv, allc, with_=rest)
        check(seed, 'count', len(full), st.qs(cq), full_q, cq)
        dq = text('(count-distinct %s)' % xv, allc)
        vq = text(xv, allc)
        check(seed, 'count-distinct', len(rows_set(st.q(vq))), st.qs(dq), vq, dq)


def q_inputs(st, query, inputs, extra=None):
    opts = {'inputs': inputs}
    if extra:
        opts.update(extra)
    try:
        return rows_set(st.q(query, opts))
    except Fail as e:
        return 'error: %s' % e


def run_more(st, gen, seed, clauses, rnd):
    """The relations over inputs, or-join, not-join, aggregates, limits, maps."""
    bound = sorted(gen.bound(clauses))
    allv = ' '.join(bound)
    full_q = text(allv, clauses)
    full = rows_set(st.q(full_q))
    ents = [v for v in bound if gen.types.get(v) == 'ref']

    # input: a constant of a data pattern given as a scalar input, a pair of
    # them as a collection input (the union of the two), a relation input
    consts = [(i, c) for i, c in enumerate(clauses) if c.get('const')]
    if consts:
        i, c = rnd.choice(consts)
        parts = c['text'][1:-1].split(' ', 2)
        attr = parts[1]
        x = '?in'
        q1 = text(allv, clauses[:i] + [{'kind': 'data', 'text': '[%s %s %s]' % (parts[0], attr, x)}] + clauses[i + 1:])
        q1 = q1.replace(' :where', ' :in $ %s :where' % x, 1)
        check(seed, 'input scalar', full, q_inputs(st, q1, [{'edn': parts[2]}]), full_q, q1, 'input ' + parts[2])
        other = gen.const(attr)
        alt = text(allv, clauses[:i] + [{'kind': 'data', 'text': '[%s %s %s]' % (parts[0], attr, other)}] + clauses[i + 1:])
        both = full | rows_set(st.q(alt))
        qc = q1.replace(':in $ %s' % x, ':in $ [%s ...]' % x, 1)
        check(seed, 'input collection', both, q_inputs(st, qc, [[{'edn': parts[2]}, {'edn': other}]]), full_q, alt, qc)

    # or-join / not-join over a ref: Q and (or-join [?e] (and [?e r ?f] P1) P2)
    # is the union of Q with each branch
    refs = [a for a, (t, _) in st.attrs.items() if t == 'ref']
    if ents:
        e = rnd.choice(ents)
        a1, a2 = rnd.choice(list(st.attrs)), rnd.choice(list(st.attrs))
        b1 = '(and [%s %s ?oj1] [?oj1 %s %s])' % (e, rnd.choice(refs), a1, gen.const(a1))
        b2 = '[%s %s ?oj2]' % (e, a2)
        oj = text(allv, clauses + [{'kind': 'or', 'text': '(or-join [%s] %s %s)' % (e, b1, b2)}])
        u1 = text(allv, clauses + [{'kind': 'not', 'text': '(not-join [%s] (not-join [%s] %s))' % (e, e, b1[5:-1])}])
        u2 = text(allv, clauses + [{'kind': 'not', 'text': '(not-join [%s] (not %s))' % (e, b2)}])
        r1, r2 = rows_set(st.q(u1)), rows_set(st.q(u2))
        check(seed, 'or-join vs double not-join', r1 | r2, rows_set(st.q(oj)), u1, u2, oj)
        nj = text(allv, clauses + [{'kind': 'not', 'text': '(not-join [%s] %s)' % (e, b1[5:-1])}])
        check(seed, 'not-join partition', full, r1 | rows_set(st.q(nj)), full_q, u1, nj)
        check(seed, 'not-join disjoint', set(), r1 & rows_set(st.q(nj)), u1, nj)
        # a two-definition rule is the or-join of its bodies
        rules = '[[(two %s) %s] [(two %s) %s]]' % (e, b1[5:-1], e, b2)
        rq = text(allv, clauses + [{'kind': 'rule', 'text': '(two %s)' % e}], rules=True)
        check(seed, 'two-definition rule vs or-join', rows_set(st.q(oj)),
              q_inputs(st, rq, [{'edn': rules}]), oj, rq, 'rules ' + rules)

    if not full:
        return
    cols = [list(json.loads(r)) for r in full]

    # grouped aggregates: [:find ?g (count ?x) :with rest] per group of the rows
    if len(bound) >= 2:
        g, xv = rnd.sample(bound, 2)
        rest = [v for v in bound if v not in (g, xv)]
        gi, xi = bound.index(g), bound.index(xv)
        want = {}
        for r in cols:
            want.setdefault(key(r[gi]), []).append(r[xi])
        aq = text('%s (count %s)' % (g, xv), clauses, with_=rest)
        got = {key([json.loads(k), len(v)]) for k, v in want.items()}
        check(seed, 'grouped count', got, rows_set(st.q(aq)), full_q, aq)
        t = gen.types.get(xv)
        if t in ('long', 'double'):
            fn = rnd.choice(['min', 'max', 'sum'])
            f = {'min': min, 'max': max, 'sum': sum}[fn]
            aq = text('%s (%s %s)' % (g, fn, xv), clauses, with_=rest)
            got = {key([json.loads(k), f(v)]) for k, v in want.items()}
            res = {key([r[0], float(r[1]) if t == 'double' else r[1]]) for r in st.q(aq)}
            check(seed, 'grouped ' + fn, got, res, full_q, aq)

    # :limit and :order: the first N rows in the order asked
    if gen.types.get(bound[0]) in ('long', 'string', 'ref'):
        n = rnd.randint(1, 4)
        d = rnd.choice(['asc', 'desc'])
        lq = '[:find %s :where %s :order [(%s %s)] :limit %d]' % (allv, ' '.join(c['text'] for c in clauses), d, bound[0], n)
        try:
            rows = st.con.execute('SELECT value FROM edn_q(?, ?)', (st.path, lq)).fetchall()
            got = [json.loads(r[0]) for r in rows]
        except sqlite3.Error as e:
            got = 'error: %s' % e
        QUERIES[0] += 1
        if not isinstance(got, str):
            firsts = sorted((r[0] for r in cols), reverse=(d == 'desc'))[:n]
            check(seed, 'order limit (keys)', firsts, [r[0] for r in got], full_q, lq)
            check(seed, 'order limit (rows)', True, all(key(r) in full for r in got), full_q, lq)
        else:
            check(seed, 'order limit', 'rows', got, lq)

    # :keys: the same rows as maps
    names = [v[1:] for v in bound]
    kq = '[:find %s :keys %s :where %s]' % (allv, ' '.join(names), ' '.join(c['text'] for c in clauses))
    maps = st.q(kq)
    check(seed, ':keys', full, {key([m[':' + k] for k in names]) for m in maps}, full_q, kq)


def check_rules(st, seed, rnd):
    """Transitive closure over a ref attribute, four ways, against the model."""
    refs = [a for a, (t, _) in st.attrs.items() if t == 'ref']
    r = rnd.choice(refs)
    edges = {(e, v) for (e, a), vs in st.cur.items() if a == r for v in vs}
    closure = set(edges)
    while True:
        more = {(a, d) for a, b in closure for c, d in edges if b == c} - closure
        if not more:
            break
        closure |= more
    want = {key([a, b]) for a, b in closure}
    right = '[[(reach ?a ?b) [?a %s ?b]] [(reach ?a ?b) [?a %s ?x] (reach ?x ?b)]]' % (r, r)
    left = '[[(reach ?a ?b) [?a %s ?b]] [(reach ?a ?b) (reach ?a ?x) [?x %s ?b]]]' % (r, r)
    both = '[[(reach ?a ?b) [?a %s ?b]] [(reach ?a ?b) (reach ?a ?x) (reach ?x ?b)]]' % r
    for name, rules in (('right', right), ('left', left), ('both', both)):
        q = '[:find ?a ?b :in $ % :where (reach ?a ?b)]'
        check(seed, 'closure %s' % name, want, q_inputs(st, q, [{'edn': rules}]), 'rules ' + rules)
        for e in rnd.sample(st.ents, min(3, len(st.ents))):
            fwd = {key([b]) for a, b in closure if a == e}
            q = '[:find ?b :in $ % ?a :where (reach ?a ?b)]'
            check(seed, 'closure %s from %d' % (name, e), fwd, q_inputs(st, q, [{'edn': rules}, e]), q, 'rules ' + rules)
            bwd = {key([a]) for a, b in closure if b == e}
            q = '[:find ?a :in $ % ?b :where (reach ?a ?b)]'
            check(seed, 'closure %s to %d' % (name, e), bwd, q_inputs(st, q, [{'edn': rules}, e]), q, 'rules ' + rules)
            q = '[:find ?b :in $ %% :where (reach %d ?b)]' % e
            check(seed, 'closure %s from constant %d' % (name, e), fwd, q_inputs(st, q, [{'edn': rules}]), q, 'rules ' + rules)


def run_extra_forms(st, gen, seed, clauses, rnd, prefixes):
    """Lookup refs for entids, pull in :find, get-else, and asOf T vs a store
    that holds only the transactions up to T."""
    bound = sorted(gen.bound(clauses))
    allv = ' '.join(bound)
    full_q = text(allv, clauses)
    full = rows_set(st.q(full_q))
    ents = [v for v in bound if gen.types.get(v) == 'ref']

    # a lookup ref [:a/id "..."] where the query has an entid (Datomic docs
    # "Entity identifiers": lookup refs go wherever an entity id goes)
    for i, c in enumerate(clauses):
        if not c.get('const'):
            continue
        e, a, v = c['text'][1:-1].split(' ', 2)
        if st.attrs[a][0] != 'ref':
            continue
        ids = st.cur.get((int(v), ':a/id'))
        if not ids:
            continue
        lr = '[%s %s [:a/id "%s"]]' % (e, a, next(iter(ids)))
        lq = text(allv, clauses[:i] + [{'kind': 'data', 'text': lr}] + clauses[i + 1:])
        check(seed, 'lookup ref', full, rows_set(st.q(lq)), full_q, lq)
        break

    # (pull ?e [*]) in :find: one row per ?e, each the entity edn_pull gives
    if ents:
        e = rnd.choice(ents)
        pq = text('%s (pull %s [*])' % (e, e), clauses)
        rows = st.q(pq)
        check(seed, 'pull in find (entities)', rows_set(st.q(text(e, clauses))), {key([r[0]]) for r in rows}, pq)
        for r in rows[:3]:
            check(seed, 'pull in find (maps)', key(st.pull(r[0])), key(r[1]), pq, 'edn_pull %d [*]' % r[0])

    # get-else on a cardinality-one attribute: the value where there is one,
    # the default where missing? says there is none
    ones = [a for a, (t, many) in st.attrs.items() if not many and t != 'ref']
    if ents and ones:
        e, a = rnd.choice(ents), rnd.choice(ones)
        d = edn_of(st.attrs[a][0], domain(st.attrs[a][0], rnd))
        gv = allv + ' ?ge'
        gq = text(gv, clauses + [{'kind': 'fn', 'text': '[(get-else $ %s %s %s) ?ge]' % (e, a, d)}])
        hq = text(gv, clauses + [{'kind': 'data', 'text': '[%s %s ?ge]' % (e, a)}])
        mq = text(gv, clauses + [{'kind': 'fn', 'text': '[(missing? $ %s %s)] [(ground %s) ?ge]' % (e, a, d)}])
        check(seed, 'get-else', rows_set(st.q(hq)) | rows_set(st.q(mq)), rows_set(st.q(gq)), hq, mq, gq)

    # asOf T on the whole store vs the store of the transactions up to T (the
    # tx instants differ: no variable attribute, which would reach them)
    if any(gen.types.get(v) == 'attr' for v in bound):
        return
    k = rnd.randrange(1, len(st.txs))
    pre = prefixes[k]
    extras = [x for x in (gen.extra(clauses) for _ in range(rnd.randint(0, 2))) if x]
    q = text(' '.join(bound), clauses + extras)
    check(seed, 'asOf %d vs the store up to it' % st.txs[k], rows_set(pre.q(q)), rows_set(st.q(q, {'asOf': st.txs[k]})),
          q, 'asOf %d' % st.txs[k])


class Prefix:
    """A store that replays the first k transactions of another."""

    def __init__(self, st, k):
        self.con = st.con
        self.path = st.path + '.%d' % k
        for edn in st.texts[:k + 1]:
            self.con.execute('SELECT edn_t(?, ?)', (self.path, edn)).fetchone()

    def q(self, query, opts=None):
        return Store.q(self, query, opts)

    def qs(self, query, opts=None):
        return Store.qs(self, query, opts)

    def record(self, form, query, opts):
        pass


def run_functions(st, gen, seed, clauses, rnd):
    """ground for a constant, a relation input of the query's own rows, the
    tautology (or X (not X)), whole-result aggregates, rule calls with a
    constant argument."""
    bound = sorted(gen.bound(clauses))
    allv = ' '.join(bound)
    full_q = text(allv, clauses)
    full_rows = st.q(full_q)
    full = rows_set(full_rows)
    ents = [v for v in bound if gen.types.get(v) == 'ref']
    consts = [(i, c) for i, c in enumerate(clauses) if c.get('const')]
    if consts:
        i, c = rnd.choice(consts)
        e, a, v = c['text'][1:-1].split(' ', 2)
        g = [{'kind': 'fn', 'text': '[(ground %s) ?gr]' % v}, {'kind': 'data', 'text': '[%s %s ?gr]' % (e, a)}]
        if rnd.random() < 0.5:
            g.reverse()
        gq = text(allv, clauses[:i] + g + clauses[i + 1:])
        check(seed, 'ground', full, rows_set(st.q(gq)), full_q, gq)
        # a rule whose second argument is the constant
        rules = '[[(rc ?x ?y) [?x %s ?y]]]' % a
        rq = text(allv, clauses[:i] + [{'kind': 'rule', 'text': '(rc %s %s)' % (e, v)}] + clauses[i + 1:], rules=True)
        check(seed, 'rule constant argument', full, q_inputs(st, rq, [{'edn': rules}]), full_q, rq, 'rules ' + rules)

    # the query's own rows as a relation input over some of its variables
    if full_rows and len(bound) >= 2:
        sub = sorted(rnd.sample(range(len(bound)), rnd.randint(1, len(bound) - 1)))
        names = ['?r%d' % j for j in sub]
        rel = [[r[j] for j in sub] for r in full_rows]
        # instants and keywords come back as text: give them back as EDN
        def lit(j, x):
            t = gen.types.get(bound[j])
            if t == 'instant':
                return {'edn': '#inst "%s"' % x}
            return x
        rel = [[lit(j, x) for j, x in zip(sub, r)] for r in rel]
        eqs = [{'kind': 'pred', 'text': '[(= %s %s)]' % (n, bound[j])} for n, j in zip(names, sub)]
        if all(gen.types.get(bound[j]) not in (None, 'attr', 'boolean', 'double') for j in sub):
            rq = text(allv, clauses + eqs).replace(' :where', ' :in $ [[%s]] :where' % ' '.join(names), 1)
            check(seed, 'relation input of its own rows', full, q_inputs(st, rq, [rel]), full_q, rq)

    # (or X (not X)) holds for every row
    if ents:
        e = rnd.choice(ents)
        a = rnd.choice(list(st.attrs))
        x = '[%s %s %s]' % (e, a, gen.const(a))
        tq = text(allv, clauses + [{'kind': 'or', 'text': '(or %s (not %s))' % (x, x)}])
        check(seed, 'or X (not X)', full, rows_set(st.q(tq)), full_q, tq)

    if not full_rows:
        return
    # whole-result aggregates over the rows (one group)
    j = rnd.randrange(len(bound))
    xv = bound[j]
    t = gen.types.get(xv)
    vals = [r[j] for r in full_rows]
    rest = [v for v in bound if v != xv]
    if t in ORDERED:
        for fn, f in (('min', min), ('max', max)):
            aq = text('(%s %s)' % (fn, xv), clauses, with_=rest)
            check(seed, 'whole ' + fn, f(vals), st.qs(aq), full_q, aq)
    aq = text('(distinct %s)' % xv, clauses)
    got = st.qs(aq)
    check(seed, 'whole distinct', {key(v) for v in vals}, {key(v) for v in got} if isinstance(got, list) else got,
          full_q, aq)
    if t == 'long':
        aq = text('(avg %s)' % xv, clauses, with_=rest)
        got = st.qs(aq)
        check(seed, 'whole avg', True, abs(got - sum(vals) / len(vals)) < 1e-9, full_q, aq, 'got %r' % got)
        aq = text('(sum %s)' % xv, clauses, with_=rest)
        check(seed, 'whole sum', sum(vals), st.qs(aq), full_q, aq)


def run_since(st, gen, seed, clauses, rnd):
    """since T vs the current database with every data pattern's tx > T: the
    since database holds the current datoms a transaction after T asserted
    (Datomic docs "Filters": since is a filter of the database)."""
    T = rnd.choice(st.txs[:-1])
    out = []
    for c in clauses:
        if c['parts'][1] == ':a/nope':
            out.append(c)
            continue
        tx = c.get('tx')
        if tx:
            out.append(c)
        else:
            gen.n += 1
            tx = '?st%d' % gen.n
            out.append({'kind': 'data', 'text': '[%s %s]' % (' '.join(c['parts']), tx)})
        out.append({'kind': 'pred', 'text': '[(> %s %d)]' % (tx, T)})
    preds = []
    for _ in range(rnd.randint(0, 2)):
        p = gen.predicate(clauses)
        if p:
            preds.append(p)
    bound = sorted(gen.bound(clauses))
    q1 = text(' '.join(bound), clauses + preds)
    q2 = text(' '.join(bound), out + preds)
    check(seed, 'since %d vs tx > %d' % (T, T), rows_set(st.q(q2)), rows_set(st.q(q1, {'since': T})),
          q1, 'since %d' % T, q2)


def check_pull_patterns(st, seed, rnd):
    """Pull patterns other than [*]: attribute lists are [*] cut down,
    reverse refs the entities whose ref points here, a nested pattern the
    pull of each referenced entity (Datomic docs "Pull")."""
    users = list(st.attrs)
    refs = [a for a, (t, _) in st.attrs.items() if t == 'ref']
    for e in rnd.sample(st.ents, min(3, len(st.ents))):
        star = st.pull(e)
        some = rnd.sample(users, rnd.randint(1, len(users)))
        pat = '[%s]' % ' '.join(some)
        got = json.loads(st.con.execute('SELECT edn_pull(?, ?, ?)', (st.path, pat, e)).fetchone()[0])
        want = {k: v for k, v in star.items() if k in some or k == ':db/id'}
        norm = lambda m: {k: (sorted(map(key, x)) if isinstance(x, list) else key(x)) for k, x in m.items()}
        check(seed, 'pull list', norm(want), norm(got), 'edn_pull %d %s' % (e, pat))
        r = rnd.choice(refs)
        back = sorted(x for (x, a), vs in st.cur.items() if a == r and e in vs)
        rp = '[:%s/_%s]' % tuple(r[1:].split('/'))
        got = json.loads(st.con.execute('SELECT edn_pull(?, ?, ?)', (st.path, rp, e)).fetchone()[0])
        want = {':db/id': e}
        if back:
            want[rp[1:-1]] = [{':db/id': x} for x in back]
        check(seed, 'pull reverse', norm(want), norm(got), 'edn_pull %d %s' % (e, rp))
        np_ = '[{%s [:a/id]}]' % r
        got = json.loads(st.con.execute('SELECT edn_pull(?, ?, ?)', (st.path, np_, e)).fetchone()[0])
        want = {':db/id': e}
        tos = sorted(st.cur.get((e, r), ()))
        def sub(x):
            # Datomic's nested maps hold the attributes asked for, no :db/id;
            # an entity with none of them is its :db/id (DataScript's
            # pull_api tests: a ref is never dropped)
            ids = st.cur.get((x, ':a/id'))
            return {':a/id': next(iter(ids))} if ids else {':db/id': x}
        if tos:
            want[r] = [sub(x) for x in tos] if st.attrs[r][1] else sub(tos[0])
        check(seed, 'pull nested', norm(want), norm(got), 'edn_pull %d %s' % (e, np_))


def run_shapes(st, gen, seed, clauses, rnd, prefixes):
    """Find shapes vs the relation (collection, tuple, scalar, :with as a
    bag), nested or/not, a rule calling a rule, and recursion under asOf."""
    bound = sorted(gen.bound(clauses))
    allv = ' '.join(bound)
    full_q = text(allv, clauses)
    full_rows = st.q(full_q)
    full = rows_set(full_rows)
    x = rnd.choice(bound)
    j = bound.index(x)
    col = {key(r[j]) for r in full_rows}
    cq = text('[%s ...]' % x, clauses)
    got = st.qs(cq)
    check(seed, 'collection find', col, {key(v) for v in got}, full_q, cq)
    check(seed, 'collection find (distinct)', len(got), len(col), cq)
    sq = text('%s .' % x, clauses)
    got = st.qs(sq)
    check(seed, 'scalar find', True, (key(got) in col) if full_rows else got is None, full_q, sq, 'got %r' % (got,))
    tq = text('[%s]' % allv, clauses)
    got = st.qs(tq)
    check(seed, 'tuple find', True, (key(got) in full) if full_rows else got is None, full_q, tq, 'got %r' % (got,))
    # :with keeps one row per distinct (x, rest): a bag of x
    rest = [v for v in bound if v != x]
    if rest:
        wq = text(x, clauses, with_=rest)
        rows = st.q(wq)
        check(seed, ':with bag', sorted(key([r[j]]) for r in full_rows), sorted(key(r) for r in rows), full_q, wq)

    ents = [v for v in bound if gen.types.get(v) == 'ref']
    if ents:
        e = rnd.choice(ents)
        a, b = rnd.choice(list(st.attrs)), rnd.choice(list(st.attrs))
        X = '[%s %s %s]' % (e, a, gen.const(a))
        Y = '[%s %s %s]' % (e, b, gen.const(b))
        # (not (or X Y)) == (not X) (not Y); (or (not X) (not Y)) == (not (and X Y))
        q1 = text(allv, clauses + [{'kind': 'not', 'text': '(not (or %s %s))' % (X, Y)}])
        q2 = text(allv, clauses + [{'kind': 'not', 'text': '(not %s)' % X}, {'kind': 'not', 'text': '(not %s)' % Y}])
        check(seed, 'not-or vs two nots', rows_set(st.q(q2)), rows_set(st.q(q1)), q2, q1)
        q3 = text(allv, clauses + [{'kind': 'or', 'text': '(or (not %s) (not %s))' % (X, Y)}])
        q4 = text(allv, clauses + [{'kind': 'not', 'text': '(not %s %s)' % (X, Y)}])
        check(seed, 'or of nots vs not-and', rows_set(st.q(q4)), rows_set(st.q(q3)), q4, q3)
        # a rule calling a rule, with a not in its body, vs the same inline
        rules = '[[(outer %s) (inner %s) (not %s)] [(inner %s) %s]]' % (e, e, Y, e, X)
        rq = text(allv, clauses + [{'kind': 'rule', 'text': '(outer %s)' % e}], rules=True)
        iq = text(allv, clauses + [{'kind': 'data', 'text': X}, {'kind': 'not', 'text': '(not %s)' % Y}])
        check(seed, 'rule calling a rule', rows_set(st.q(iq)), q_inputs(st, rq, [{'edn': rules}]), iq, rq, 'rules ' + rules)

    # a recursive rule under asOf T vs the store up to T, and negated
    refs = [a for a, (t, _) in st.attrs.items() if t == 'ref']
    r = rnd.choice(refs)
    rules = '[[(reach ?a ?b) [?a %s ?b]] [(reach ?a ?b) [?a %s ?x] (reach ?x ?b)]]' % (r, r)
    k = rnd.randrange(1, len(st.txs))
    if ents and len(ents) >= 1:
        e = rnd.choice(ents)
        other = rnd.choice(ents)
        call = '(reach %s %s)' % (e, other) if rnd.random() < 0.5 else '(reach %s ?rr)' % e
        rq = text(allv, clauses + [{'kind': 'rule', 'text': call}], rules=True)
        pre = prefixes[k]
        try:
            want = rows_set(pre.q(rq, {'inputs': [{'edn': rules}]}))
        except Fail as err:
            want = str(err)
        check(seed, 'recursive rule asOf vs the store up to it', want,
              q_inputs(st, rq, [{'edn': rules}], {'asOf': st.txs[k]}), rq, 'rules ' + rules, 'asOf %d' % st.txs[k])
        if '?rr' not in call:
            nq = text(allv, clauses + [{'kind': 'not', 'text': '(not %s)' % call}], rules=True)
            yes = q_inputs(st, rq, [{'edn': rules}])
            no = q_inputs(st, nq, [{'edn': rules}])
            if isinstance(yes, set) and isinstance(no, set):
                check(seed, 'recursive rule split (union)', full, yes | no, full_q, rq, nq, 'rules ' + rules)
                check(seed, 'recursive rule split (disjoint)', set(), yes & no, rq, nq, 'rules ' + rules)
            else:
                check(seed, 'recursive rule split', 'sets', (yes, no), rq, nq)


VARATTR = re.compile(r'\[(\?\w+|_|\d+) \?|\(pat4?v? \S+ \?')


def run_recorded_as_of(st, seed, rnd, prefixes):
    """Some of the queries just run, asOf T vs the store up to T: the same
    answer whatever the query holds (aggregates, pull, get-else, rules)."""
    rec = [r for r in st.recent if not VARATTR.search(r[1])]
    st.recent = []
    for form, query, opts in rnd.sample(rec, min(4, len(rec))):
        k = rnd.randrange(1, len(st.txs))
        o = dict(opts or {})
        o['asOf'] = st.txs[k]
        def run(s, oo):
            st.recent = None
            try:
                if form == 'table':
                    return sorted(key(r) for r in s.q(query, oo))
                got = s.qs(query, oo)
                return sorted(key(x) for x in got) if isinstance(got, list) else key(got)
            except Fail as e:
                return 'error: ' + str(e).split('\n')[0]
            finally:
                st.recent = []
        pre = prefixes[k]
        check(seed, 'asOf %d vs the store up to it (%s)' % (st.txs[k], form), run(pre, opts), run(st, o),
              query, 'opts %s' % json.dumps(o))


def run_rename(st, gen, seed, clauses, rnd):
    """A variable copied by a function ((identity ?x), (+ ?x 0), (str ?x))
    right after the clause that binds it, and its later uses renamed: the
    same rows (a function result joins as the value it is)."""
    bound = sorted(gen.bound(clauses))
    cands = [v for v in bound if gen.types.get(v) in ('ref', 'long', 'string', 'double', 'instant', 'boolean', 'tx')]
    if not cands:
        return
    x = rnd.choice(cands)
    t = gen.types[x]
    first = next(i for i, c in enumerate(clauses) if x in c.get('binds', ()))
    later = clauses[first + 1:]
    if not any(re.search(re.escape(x) + r'(?!\w)', c['text']) for c in later):
        return
    x2 = x + 'c'
    fn = '(identity %s)' % x
    if t == 'long' and rnd.random() < 0.5:
        fn = '(+ %s 0)' % x
    elif t == 'string' and rnd.random() < 0.5:
        fn = '(str %s)' % x
    cp = {'kind': 'fn', 'text': '[%s %s]' % (fn, x2)}
    ren = [dict(c, text=re.sub(re.escape(x) + r'(?!\w)', x2, c['text'])) for c in later]
    q1 = text(' '.join(bound), clauses)
    q2 = text(' '.join(bound), clauses[:first + 1] + [cp] + ren)
    check(seed, 'rename by a function', rows_set(st.q(q1)), rows_set(st.q(q2)), q1, q2)


def check_log(st, seed, rnd):
    """tx-ids and tx-data vs the model's log (Datomic's Log API: tx-range
    from start inclusive to end exclusive, each tx's datoms with added)."""
    names = {a: i for i, a in st.ids.items()}
    alltx = [268435456] + st.txs
    for _ in range(3):
        i, j = sorted(rnd.sample(range(len(alltx) + 1), 2))
        lo = alltx[i] if i < len(alltx) else alltx[-1] + 1
        hi = alltx[j] if j < len(alltx) else alltx[-1] + 1
        q = '[:find ?tx :in $ ?lo ?hi :where [(tx-ids $ ?lo ?hi) [?tx ...]]]'
        want = {key([t]) for t in alltx if lo <= t < hi}
        check(seed, 'tx-ids', want, rows_set(st.q(q, {'inputs': [lo, hi]})), q, 'inputs %d %d' % (lo, hi))
    for tx in rnd.sample(st.txs, min(3, len(st.txs))):
        q = '[:find ?e ?a ?v ?op :in $ ?t :where [(tx-data $ ?t) [[?e ?a ?v _ ?op]]]]'
        got = set()
        for e, a, v, op in st.q(q, {'inputs': [tx]}):
            i = names.get(a)
            if i in st.attrs:
                if st.attrs[i][0] == 'instant':
                    v = int(v[8:10])
                got.add((e, i, key(v), op))
        want = {(e, a, key(v), added) for e, a, v, t, added in st.log if t == tx}
        check(seed, 'tx-data %d' % tx, want, got, q)


def check_pull_options(st, seed, rnd):
    """:limit, :default and :as of a pull attribute (Datomic docs "Pull":
    attribute expressions), and [*] with a nested ref."""
    many = [a for a, (t, m) in st.attrs.items() if m]
    ones = [a for a, (t, m) in st.attrs.items() if not m and t not in ('ref', 'instant')]
    norm = lambda m: {k: (sorted(map(key, x)) if isinstance(x, list) else key(x)) for k, x in m.items()}
    for e in rnd.sample(st.ents, min(3, len(st.ents))):
        star = st.pull(e)
        def pull(pat):
            QUERIES[0] += 1
            try:
                return json.loads(st.con.execute('SELECT edn_pull(?, ?, ?)', (st.path, pat, e)).fetchone()[0])
            except sqlite3.Error as err:
                return 'error: %s' % err
        if many:
            a = rnd.choice(many)
            n = rnd.randint(1, 3)
            got = pull('[(%s :limit %d)]' % (a, n))
            vals = star.get(a, [])
            ok = isinstance(got, dict) and len(got.get(a, [])) == min(n, len(vals)) and \
                all(key(v) in {key(w) for w in vals} for v in got.get(a, []))
            check(seed, 'pull :limit', True, ok, 'edn_pull %d [(%s :limit %d)]' % (e, a, n), 'got %r' % (got,),
                  '[*] %r' % (star,))
        if ones:
            a = rnd.choice(ones)
            t = st.attrs[a][0]
            d = domain(t, rnd)
            got = pull('[(%s :default %s)]' % (a, edn_of(t, d)))
            want = {':db/id': e, a: star.get(a, d)}
            check(seed, 'pull :default', norm(want), norm(got) if isinstance(got, dict) else got,
                  'edn_pull %d [(%s :default %s)]' % (e, a, edn_of(t, d)))
            got = pull('[(%s :as "x")]' % a)
            want = {':db/id': e}
            if a in star:
                want['x'] = star[a]
            check(seed, 'pull :as', norm(want), norm(got) if isinstance(got, dict) else got,
                  'edn_pull %d [(%s :as "x")]' % (e, a))


def run_all_rules(st, gen, seed, clauses, rnd):
    """Every data pattern a call of one generic rule [(pat ?e ?a ?v) [?e ?a
    ?v]] (the attribute, constants and _ passed as arguments), maybe through
    a second rule, plus the extras: the same rows."""
    extras = [x for x in (gen.extra(clauses) for _ in range(rnd.randint(0, 2))) if x]
    bound = sorted(gen.bound(clauses))
    find = ' '.join(v for v in bound if rnd.random() < 0.7) or bound[0]
    calls = []
    via = rnd.random() < 0.5
    for c in clauses:
        args = list(c['parts']) + ([c['tx']] if c.get('tx') else [])
        name = ('pat4' if len(args) == 4 else 'pat') + ('v' if via else '')
        calls.append({'kind': 'rule', 'text': '(%s %s)' % (name, ' '.join(args)), 'binds': c['binds']})
    rules = '[[(pat ?e ?a ?v) [?e ?a ?v]] [(pat4 ?e ?a ?v ?t) [?e ?a ?v ?t]]'
    if via:
        rules += ' [(patv ?e ?a ?v) (pat ?e ?a ?v)] [(pat4v ?e ?a ?v ?t) (pat4 ?e ?a ?v ?t)]'
    rules += ']'
    q1 = text(find, clauses + extras)
    q2 = text(find, calls + extras, rules=True)
    check(seed, 'every pattern a rule call', rows_set(st.q(q1)), q_inputs(st, q2, [{'edn': rules}]),
          q1, q2, 'rules ' + rules)


def check_pull(st, seed, rnd):
    es = rnd.sample(st.ents, min(3, len(st.ents)))
    for e in es:
        rows = st.q('[:find ?i ?v :in $ ?e :where [?e ?a ?v] [?a :db/ident ?i]]'.replace('?e :where', '?e :where'),
                    {'inputs': [e]})
        want = {':db/id': e}
        for i, v in rows:
            t, many = st.attrs.get(i, (None, False))
            if t is None:
                continue
            if t == 'instant':
                # the query's text form; pull gives epoch microseconds
                v = pjson_of(t, int(v[8:10]))
            elif t == 'ref':
                v = {':db/id': v}
            if many:
                want.setdefault(i, []).append(v)
            else:
                want[i] = v
        norm = lambda m: {k: (sorted(map(key, x)) if isinstance(x, list) else key(x)) for k, x in m.items()}
        got = st.pull(e)
        check(seed, 'pull', norm(want), norm(got), 'edn_pull %d [*] vs [?e ?a ?v]' % e)
        if len(got) == 1:
            continue
        found = st.qs('[:find (pull ?e [*]) . :in $ ?e :where [?e _]]', {'inputs': [e]})
        check(seed, 'pull in find', norm(got), norm(found or {}), '(pull ?e [*]) in :find, e = %d' % e)


def check_model(st, seed, rnd):
    names = {a: i for i, a in st.ids.items()}

    def dump(opts):
        # idents resolved here: a since database does not hold the schema's datoms
        names = {a: i for i, a in st.ids.items()}
        rows = st.q('[:find ?e ?a ?v :where [?e ?a ?v]]', opts)
        out = set()
        for e, a, v in rows:
            i = names.get(a)
            if i not in st.attrs:
                continue
            t = st.attrs[i][0]
            if t == 'instant':
                v = int(v[8:10])
            out.add((e, i, key(v)))
        return out
    check(seed, 'model now', st.model(), dump(None), 'current user datoms')
    ever = {(e, a, key(v)) for e, a, v, tx, added in st.log}
    check(seed, 'model history', ever, dump({'history': True}), 'every user datom ever asserted or retracted')
    for tx in rnd.sample(st.txs, min(3, len(st.txs))):
        check(seed, 'model asOf %d' % tx, st.model(as_of=tx), dump({'asOf': tx}), 'asOf %d' % tx)
        check(seed, 'model since %d' % tx, st.model(since=tx), dump({'since': tx}), 'since %d' % tx)
        # history up to T: the last word on each datom is an assertion
        hq = '[:find ?e ?a ?v ?tx ?added :where [?e ?a ?v ?tx ?added]]'
        last = {}
        for e, a, v, t, added in sorted(st.q(hq, {'history': True, 'asOf': tx}), key=lambda r: (r[3], not r[4])):
            i = names.get(a)
            if i not in st.attrs:
                continue
            if st.attrs[i][0] == 'instant':
                v = int(v[8:10])
            last[(e, i, key(v))] = added
        check(seed, 'history asOf %d' % tx, {k for k, a in last.items() if a}, dump({'asOf': tx}), hq)
    # asOf and since together (Datomic's (d/since (d/as-of db t2) t1)): the
    # as-of database's datoms asserted after t1; with history every log datom
    # of t1 < tx <= t2. Their own generator, so the other checks draw as before.
    rspan = random.Random(seed * 31 + 7)
    for _ in range(2 if len(st.txs) > 1 else 0):
        t1, t2 = sorted(rspan.sample(st.txs, 2))
        if rspan.random() < 0.3:
            t1, t2 = t2, t1   # an empty span
        check(seed, 'model asOf %d since %d' % (t2, t1), st.model(as_of=t2, since=t1),
              dump({'asOf': t2, 'since': t1}), 'asOf %d, since %d' % (t2, t1))
        span = {(e, a, key(v)) for e, a, v, tx, added in st.log if t1 < tx <= t2}
        check(seed, 'model history asOf %d since %d' % (t2, t1), span,
              dump({'history': True, 'asOf': t2, 'since': t1}), 'history, asOf %d, since %d' % (t2, t1))


def run_seed(seed, nq):
    con = connect()
    st = Store(con, seed)
    rnd = random.Random(seed * 7919 + 1)
    try:
        check_model(st, seed, rnd)
        check_pull(st, seed, rnd)
        check_pull_patterns(st, seed, rnd)
        check_pull_options(st, seed, rnd)
        check_log(st, seed, rnd)
        check_rules(st, seed, rnd)
        prefixes = {k: Prefix(st, k) for k in range(1, len(st.txs))}
        st.recent = []
        for _ in range(nq):
            gen = Gen(st, rnd)
            clauses = gen.query()
            run_query(st, gen, seed, clauses, rnd)
            run_more(st, gen, seed, clauses, rnd)
            run_extra_forms(st, gen, seed, clauses, rnd, prefixes)
            run_functions(st, gen, seed, clauses, rnd)
            run_since(st, gen, seed, clauses, rnd)
            run_shapes(st, gen, seed, clauses, rnd, prefixes)
            run_rename(st, gen, seed, clauses, rnd)
            run_all_rules(st, gen, seed, clauses, rnd)
            run_recorded_as_of(st, seed, rnd, prefixes)
    except Fail as e:
        FAILS.append(seed)
        print('FAIL seed %d: %s' % (seed, e))
    con.close()
    for f in glob.glob(st.path + '*'):
        os.unlink(f)


def main(argv):
    global EXT
    EXT = argv[1]
    opts = {'seeds': int(os.environ.get('META_SEEDS', 6)), 'first': int(os.environ.get('META_FIRST', 1)),
            'queries': int(os.environ.get('META_QUERIES', 25))}
    i = 2
    while i < len(argv):
        opts[argv[i].lstrip('-')] = int(argv[i + 1])
        i += 2
    try:
        for seed in range(opts['first'], opts['first'] + opts['seeds']):
            run_seed(seed, opts['queries'])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    print('%d seeds, %d queries, %d checks, %d failed (seeds %s)'
          % (opts['seeds'], QUERIES[0], CHECKS[0], len(FAILS), sorted(set(FAILS))[:20]))
    return 1 if FAILS else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
