#!/usr/bin/python3
"""smoke/qplan.py — summarises the query plans of the public acceptance queries.

Reads the report test_qlang prints with QPLAN_REPORT=1 (CK_RUN_CASE=qplan): for each case
"== <id>", the compiled SQL, then "   | <EXPLAIN QUERY PLAN detail>" lines. Classifies every
loop over a datoms alias dN: SEARCH (an index with a bound prefix), SCAN of an alias whose
attribute the SQL fixes (a defect: the (a, e) and (a, v) indexes serve it), or SCAN of an
alias whose attribute is a variable (expected: nothing is bound to search by). An automatic
(transient) index built over a datoms alias is a defect too: the store's indexes should serve
it. Also counts the plans whose joins the compiler fixed (CROSS JOIN) and those that sort for
DISTINCT. Prints the totals and the defects; exits 1 when there is one or when the report is
missing.

Usage: QPLAN_REPORT=1 CK_RUN_CASE=qplan build/test_qlang | /usr/bin/python3 smoke/qplan.py
"""
import re, sys

def main():
    cases, cur, sql = [], None, None
    for line in sys.stdin:
        line = line.rstrip('\n')
        if line.startswith('== '):
            cur = {'id': line[3:], 'sql': '', 'plan': []}
            cases.append(cur)
        elif cur is not None and line.startswith('   | '):
            cur['plan'].append(line[5:])
        elif cur is not None and line.startswith('   ') and not cur['sql']:
            cur['sql'] = line.strip()
        elif line.startswith('acceptance plans:'):
            print(line)
    if not cases:
        print('qplan: no report (is test_qlang built, and the acceptance cases beside the clone?)')
        return 1
    search = scan_var = 0
    bad = []
    for c in cases:
        for d in c['plan']:
            if re.match(r'SEARCH d\d+ USING AUTOMATIC', d):
                bad.append((c['id'], d))
                continue
            m = re.match(r'(SEARCH|SCAN) (d\d+)\b', d)
            if not m:
                if d.startswith('SCAN datoms'):
                    bad.append((c['id'], d))
                continue
            if m.group(1) == 'SEARCH':
                search += 1
                continue
            alias = m.group(2)
            const_attr = re.search(r'(?<![\w.])%s\.a = \d' % alias, c['sql'])
            if const_attr and ' IN ()' not in c['sql']:
                bad.append((c['id'], d))
            else:
                scan_var += 1
    explained = sum(1 for c in cases if c['plan'])
    print('qplan: %d cases, %d explained; datoms loops: %d SEARCH, %d SCAN over a variable'
          ' attribute, %d SCAN of a constant-attribute alias'
          % (len(cases), explained, search, scan_var, len(bad)))
    cross = sum(1 for c in cases if 'CROSS JOIN' in c['sql'])
    distinct = sum(1 for c in cases if any('TEMP B-TREE FOR DISTINCT' in d for d in c['plan']))
    print('qplan: %d plans join in the compiler\'s order (CROSS JOIN), %d sort for DISTINCT'
          % (cross, distinct))
    for cid, d in bad:
        print('  FULL SCAN in %s: %s' % (cid, d))
    return 1 if bad else 0

if __name__ == '__main__':
    sys.exit(main())
