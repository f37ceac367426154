#!/usr/bin/python3
"""Deterministic generator of the issue-tracker workload of ../shared/BENCH.md.

Usage: /usr/bin/python3 bench/gen.py SCALE OUTDIR
Writes OUTDIR/schema.edn; OUTDIR/load-NNNNN.edn, the initial load (users and
labels in txs of 2,000 entities, issues in txs of 500, issues named by tempids
"i<n>" so the loader learns their entids from the tx reports);
OUTDIR/history-NNNNN.json, the later state changes as [issue position, state]
pairs (the loader turns them into [:db/add e :issue/state s] txs of 500); and
OUTDIR/expect.json, the answers the checks compare against; and OUTDIR/ds.json, the
same data as JSON for the DataScript runner (bench/ds.js), so Node never parses EDN.

Same seed, same output on every machine: Python's Mersenne Twister with an
integer seed is stable across platforms and versions.
"""
import json
import os
import random
import sys

SCALES = {'xs': (200, 13000, 50), 's': (1600, 130000, 200), 'm': (16000, 1300000, 500)}
STATES = [':state/open', ':state/in-progress', ':state/closed', ':state/resolved', ':state/reopened']
WORDS = ['crash', 'ui glitch', 'perf regression', 'typo', 'feature request']
SCHEMA = '''[
 {:db/ident :user/email :db/valueType :db.type/string :db/cardinality :db.cardinality/one :db/unique :db.unique/identity :db/index true}
 {:db/ident :user/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one}
 {:db/ident :label/name :db/valueType :db.type/string :db/cardinality :db.cardinality/one :db/unique :db.unique/identity :db/index true}
 {:db/ident :issue/title :db/valueType :db.type/string :db/cardinality :db.cardinality/one}
 {:db/ident :issue/state :db/valueType :db.type/keyword :db/cardinality :db.cardinality/one :db/index true}
 {:db/ident :issue/priority :db/valueType :db.type/long :db/cardinality :db.cardinality/one :db/index true}
 {:db/ident :issue/assignee :db/valueType :db.type/ref :db/cardinality :db.cardinality/one :db/index true}
 {:db/ident :issue/reporter :db/valueType :db.type/ref :db/cardinality :db.cardinality/one :db/index true}
 {:db/ident :issue/created-at :db/valueType :db.type/instant :db/cardinality :db.cardinality/one}
 {:db/ident :issue/label :db/valueType :db.type/ref :db/cardinality :db.cardinality/many :db/index true}
]'''


def minutes_to_inst(m):
    # 2025-01-01T00:00Z plus m minutes
    import datetime
    t = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(minutes=m)
    return t.strftime('%Y-%m-%dT%H:%M:%S.000Z')


def main():
    scale, out = sys.argv[1], sys.argv[2]
    n_users, n_issues, n_labels = SCALES[scale]
    rnd = random.Random(20251130)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, 'schema.edn'), 'w') as f:
        f.write(SCHEMA)
    files = []
    ents = ['{:db/id "u%d" :user/email "user%d@example.com" :user/name "User %d"}' % (u, u, u)
            for u in range(n_users)]
    ents += ['{:db/id "l%d" :label/name "label-%d"}' % (l, l) for l in range(n_labels)]
    for i in range(0, len(ents), 2000):
        files.append(('load', '[' + '\n'.join(ents[i:i + 2000]) + ']'))
    state = []
    prio = []
    assignee = []
    batch = []
    ds_issues = []
    for n in range(n_issues):
        s = rnd.randrange(5)
        p = rnd.randint(1, 5)
        a = rnd.randrange(n_users)
        r = rnd.randrange(n_users)
        labels = rnd.sample(range(n_labels), rnd.randint(0, 3))
        created = rnd.randrange(525601)
        state.append(s)
        prio.append(p)
        assignee.append(a)
        word = WORDS[rnd.randrange(5)]
        ds_issues.append([n, 'Issue %d: %s' % (n, word), STATES[s], p, a, r, labels, minutes_to_inst(created)])
        lab = ' '.join('[:label/name "label-%d"]' % l for l in labels)
        batch.append('{:db/id "i%d" :issue/title "Issue %d: %s" :issue/state %s :issue/priority %d '
                     ':issue/assignee [:user/email "user%d@example.com"] :issue/reporter [:user/email "user%d@example.com"] '
                     '%s:issue/created-at #inst "%s"}' % (
                         n, n, word, STATES[s], p, a, r,
                         (':issue/label [%s] ' % lab) if labels else '', minutes_to_inst(created)))
        if len(batch) == 500:
            files.append(('load', '[' + '\n'.join(batch) + ']'))
            batch = []
    if batch:
        files.append(('load', '[' + '\n'.join(batch) + ']'))
    initial = list(state)
    # History: each issue with probability 0.05 gets one later change to a different state.
    changes = []
    for n in range(n_issues):
        if rnd.random() < 0.05:
            s = (state[n] + rnd.randint(1, 4)) % 5
            changes.append((n, s))
            state[n] = s
    history = [changes[i:i + 500] for i in range(0, len(changes), 500)]
    for k, f in enumerate(files):
        with open(os.path.join(out, '%s-%05d.edn' % (f[0], k)), 'w') as fh:
            fh.write(f[1])
    for k, h in enumerate(history):
        # issue positions, resolved to entids by the loader from the load reports ("i<n>" tempids)
        with open(os.path.join(out, 'history-%05d.json' % k), 'w') as fh:
            json.dump([[n, STATES[s]] for n, s in h], fh)
    per_state = {STATES[i]: state.count(i) for i in range(5)}
    expect = {
        'scale': scale, 'users': n_users, 'issues': n_issues, 'labels': n_labels,
        'per_state': per_state,
        'open_prio_ge4': sum(1 for n in range(n_issues) if state[n] == 0 and prio[n] >= 4),
        'last_history': sorted(n for n, _ in history[-1]) if history else [],
        'assignee': assignee, 'priority': prio, 'initial_state': [STATES[s] for s in initial],
        'final_state': [STATES[s] for s in state],
    }
    with open(os.path.join(out, 'expect.json'), 'w') as fh:
        json.dump(expect, fh)
    # issues as [n, title, state, priority, assignee, reporter, [labels], created-at]
    with open(os.path.join(out, 'ds.json'), 'w') as fh:
        json.dump({'users': n_users, 'labels': n_labels, 'issues': ds_issues,
                   'history': [[[n, STATES[s]] for n, s in h] for h in history]}, fh)
    print('%s: %d load txs, %d history txs, %d changes' % (scale, len(files), len(history), len(changes)))


if __name__ == '__main__':
    main()
