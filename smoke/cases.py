#!/usr/bin/python3
"""smoke/cases.py — the cases kept as data in test/cases/*.test, run against the
built .so in Python's sqlite3 module, so every case that the Check driver
(test/test_cases.c) runs in-process also runs in a real host. The format is
the one documented in test/test_cases.c; this reader follows it line for line.

Usage: /usr/bin/python3 smoke/cases.py [--host] /abs/path/libmentat_sqlite.so [dir]
With --host every store is a host store (SPEC §3a): db_path ':main' on a
connection of its own to a fresh host database file.
Prints one FAIL line per mismatch and ends with 'N passed, M failed'.
"""
import atexit
import glob
import os
import shutil
import sqlite3
import sys
import tempfile

TMP = tempfile.mkdtemp(prefix='mentat-cases.')
# the stores go with the run, whatever way it ends
atexit.register(shutil.rmtree, TMP, ignore_errors=True)
# SQLite's own text of a REAL, as sqlite3_column_text gives it in the C driver.
TEXTER = sqlite3.connect(':memory:')
DIRECTIVES = ('tx', 'query', 'pull', 'sql', 'store', 'env')
HOST = '--host' in sys.argv
if HOST:
    sys.argv.remove('--host')


def dbp(store):
    """The db_path a block passes for the store at file path store."""
    return ':main' if HOST else store


def rows_of(con, sql, params):
    """The rows of sql's last statement as text lines (first column only when
    one is asked), or ['error: <message>']."""
    try:
        cur = con.execute(sql, params)
        out = []
        for row in cur.fetchall():
            out.append('|'.join('NULL' if v is None else text(v) for v in row))
        return out
    except sqlite3.Error as e:
        return ['error: ' + str(e)]


def text(v):
    if isinstance(v, bytes):
        return v.decode('utf-8', 'replace')
    if isinstance(v, float):
        return TEXTER.execute('SELECT CAST(? AS TEXT)', (v,)).fetchone()[0]
    return str(v)


def run_sql_script(con, body, store, db=None):
    """Runs each statement of body (':db' bound to the store: db, the db_path the functions
    take, or the file path store in an ATTACH); the last one's rows."""
    rest = body
    last = []
    while rest.strip(' \t\n;'):
        stmt_end = find_statement_end(rest)
        stmt, rest = rest[:stmt_end], rest[stmt_end:]
        if not stmt.strip(' \t\n;'):
            continue
        params = {'db': store if db is None or 'ATTACH' in stmt.upper() else db} if ':db' in stmt else ()
        last = rows_of(con, stmt, params)
        if last and last[0].startswith('error: '):
            return last
    return last


def find_statement_end(s):
    i = 0
    while True:
        j = s.find(';', i)
        if j < 0:
            return len(s)
        if sqlite3.complete_statement(s[:j + 1]):
            return j + 1
        i = j + 1


class Block:
    def __init__(self, kind, flags, line):
        self.kind, self.flags, self.line = kind, flags, line
        self.body, self.opts, self.entity, self.expect = [], [], [], []
        self.has_expect = False


DUMP = ("SELECT 'D', e, a, quote(v), tx, value_type_tag, index_avet, index_vaet, index_fulltext,"
        " unique_value FROM datoms"
        " UNION ALL SELECT 'L', e, a, quote(v), tx, added, value_type_tag, timeline, 0, 0"
        " FROM timelined_transactions"
        " UNION ALL SELECT 'P', part, start, \"end\", idx, allow_excision, 0, 0, 0, 0 FROM known_parts"
        " UNION ALL SELECT 'I', e, a, quote(v), value_type_tag, 0, 0, 0, 0, 0 FROM idents"
        " UNION ALL SELECT 'S', e, a, quote(v), value_type_tag, 0, 0, 0, 0, 0 FROM schema"
        " UNION ALL SELECT 'M', name, a, kind, 0, 0, 0, 0, 0, 0 FROM mentat_managed_indexes"
        " UNION ALL SELECT 'F', rowid, text, 0, 0, 0, 0, 0, 0, 0 FROM fulltext_values"
        " UNION ALL SELECT 'X', name, sql, 0, 0, 0, 0, 0, 0, 0 FROM sqlite_master"
        " ORDER BY 1, 2, 3, 4, 5, 6")


def open_store_file(store):
    """A plain connection to the store's file (no extension), or None when the file is not
    there yet (never created here)."""
    if not os.path.exists(store):
        return None
    return sqlite3.connect('file:%s?mode=rw' % store, uri=True, isolation_level=None)


def store_sql(store, body):
    """'sql store': body's last statement's rows on a connection of its own to the store."""
    raw = open_store_file(store)
    if raw is None:
        return ["error: the store's file does not exist"]
    try:
        return run_sql_script(raw, body, store)
    finally:
        raw.close()


def store_dump(store):
    """Everything a transaction may change, as rows of text; None when there is no store yet."""
    raw = open_store_file(store)
    if raw is None:
        return None
    try:
        return rows_of(raw, DUMP, ())
    finally:
        raw.close()


def run_tx(con, b, body, store, want):
    """A tx block's (got, want, problem): problem names a failed transaction that changed the
    store, else None."""
    if want and want[0].startswith('tempids '):
        got = rows_of(con, "SELECT coalesce(json_extract(edn_t(?1, ?2), '$.tempids'), 'NULL')",
                      (dbp(store), body))
        return got, [want[0][8:]] + want[1:], None
    if want and want[0] == 'report':
        rep = rows_of(con, 'SELECT edn_t(?1, ?2)', (dbp(store), body))
        want = want[1:]
        if rep and rep[0].startswith('error: '):
            return rep, want, None
        got = []
        for line in want:
            path = line.partition(' ')[0]
            got += ['%s %s' % (path, v) for v in
                    rows_of(con, "SELECT coalesce(json_extract(?1, ?2), 'NULL')", (rep[0], path))]
        return got, want, None
    failing = bool(want) and want[0].startswith('error: ')
    before = store_dump(store) if failing else None
    got = rows_of(con, "SELECT CASE WHEN edn_t(?1, ?2) IS NOT NULL THEN 'ok' END", (dbp(store), body))
    if before is not None and store_dump(store) != before:
        return got, want, 'the failed transaction changed the store'
    return got, want, None


def subst_stores(text, stores):
    """text with every %store:NAME% replaced by the path of this file's store NAME, as the
    C driver's tcSubstStores."""
    out, rest = [], text
    while True:
        at = rest.find('%store:')
        end = rest.find('%', at + 7) if at >= 0 else -1
        if end < 0:
            out.append(rest)
            return ''.join(out)
        out.append(rest[:at])
        out.append(stores(rest[at + 7:end]))
        rest = rest[end + 1:]


def run_block(con, b, store, stores):
    """(got, want, problem); a query or pull block whose opts hold "with" must leave the
    store as it was, as a failed transaction must."""
    opts = '\n'.join(b.opts) if b.opts else None
    if b.kind in ('query', 'pull') and opts and '"with"' in opts:
        before = store_dump(store)
        got, want, problem = run_block_once(con, b, store, stores)
        if before is not None and store_dump(store) != before:
            problem = problem or '"with": the store changed'
        return got, want, problem
    return run_block_once(con, b, store, stores)


def run_block_once(con, b, store, stores):
    body = '\n'.join(b.body)
    opts = '\n'.join(b.opts) if b.opts else None
    if opts and '%store:' in opts:
        opts = subst_stores(opts, stores)
    want = [subst_stores(w, stores) if '%store:' in w else w for w in b.expect]
    if b.kind == 'sql' and '$STORE' in body:
        # text that takes no parameter (edn_view's arguments) names the store itself
        body = body.replace('$STORE', dbp(store))
    if b.kind == 'sql' and '%store:' in body:
        body = subst_stores(body, stores)
    if b.kind == 'tx':
        return run_tx(con, b, body, store, want)
    elif b.kind == 'query':
        if 'scalar' in b.flags:
            got = rows_of(con, 'SELECT edn_q(?1, ?2, ?3)', (dbp(store), body, opts))
        else:
            got = rows_of(con, 'SELECT value FROM edn_q(?1, ?2, ?3)', (dbp(store), body, opts))
            if 'ordered' not in b.flags and not (want and want[0].startswith('error: ')):
                got, want = sorted(got), sorted(want)
    elif b.kind == 'pull':
        entity = '\n'.join(b.entity) if b.entity else 'NULL'
        sql = 'SELECT edn_pull(?1, ?2, %s%s)' % (entity, ', ?3' if opts else '')
        got = rows_of(con, sql, (dbp(store), body, opts) if opts else (dbp(store), body))
    elif 'store' in b.flags.split():
        got = store_sql(store, body)
    else:
        got = run_sql_script(con, body, store, dbp(store))
    return got, want, None


def run_file(path, ext):
    name = os.path.basename(path)
    # Autocommit, as the C driver's connection: Python's implicit BEGIN before DML would hold
    # an ATTACHed store's write lock across blocks.
    counter = [0]
    cons = []

    def connect(path):
        c = sqlite3.connect(path, isolation_level=None)
        c.enable_load_extension(True)
        c.load_extension(ext)
        cons.append(c)
        return c

    paths = {}        # label -> the path of that store (or reserved for it by %store:)
    started = set()   # labels whose 'store' block has run

    def reserve(label):
        counter[0] += 1
        paths[label] = os.path.join(TMP, '%s-%s-%d.db' % (name, label, counter[0]))
        return paths[label]

    def new_store(label):
        # a label named by %store: before its 'store' block keeps the path it was given
        if label in started or label not in paths:
            reserve(label)
        started.add(label)
        return paths[label]

    def stores(label):
        return paths[label] if label in paths else reserve(label)

    store = new_store('default')
    # --host: each store is the main database of a connection of its own.
    con = connect(store if HOST else ':memory:')
    env_set = []
    passed = failed = skipped = 0
    block = None
    lines = open(path, encoding='utf-8').read().split('\n')

    def finish(b):
        nonlocal passed, failed, skipped
        body = '\n'.join(b.body)
        if HOST and (any('%store:' in o for o in b.opts) or (b.kind == 'sql' and '%store:' in body)
                     or (b.kind == 'sql' and '"sources"' in body and ':db' in body)):
            # another store file as a source: a query on a host store refuses those
            # (README "Several sources"), so the block is for file stores only
            skipped += 1
            return
        if not b.has_expect:
            print('FAIL %s:%d: %s block has no => line' % (name, b.line, b.kind))
            failed += 1
            return
        got, want, problem = run_block(con, b, store, stores)
        if problem:
            failed += 1
            print('FAIL %s:%d: %s block: %s' % (name, b.line, b.kind, problem))
        elif got == want:
            passed += 1
        else:
            failed += 1
            print('FAIL %s:%d: %s block\n  expected: %s\n  got:      %s'
                  % (name, b.line, b.kind, '\n'.join(want), '\n'.join(got)))

    for no, line in enumerate(lines, 1):
        line = line.rstrip('\r')
        if block is None:
            if not line or line.startswith('#'):
                continue
            word, _, flags = line.partition(' ')
            if word not in DIRECTIVES:
                print('FAIL %s:%d: not a directive: %s' % (name, no, line))
                failed += 1
                continue
            if word == 'store':
                store = new_store(flags.strip() or 'default')
                if HOST:
                    con = connect(store)
                continue
            if word == 'env':
                # a MENTAT_* setting for the rest of the file (read per call where the
                # extension allows it, as the C driver's setenv)
                name, _, value = flags.strip().partition('=')
                env_set.append(name)
                os.environ[name] = value
                continue
            block = Block(word, flags, no)
            continue
        if not line:
            finish(block)
            block = None
            continue
        if block.has_expect:
            block.expect.append(line)
        elif line.startswith('=>'):
            block.has_expect = True
            rest = line[2:].lstrip(' ')
            if rest:
                block.expect.append(rest)
        elif line.startswith('opts ') and block.kind not in ('sql', 'tx'):
            block.opts.append(line[5:])
        elif line.startswith('entity ') and block.kind == 'pull':
            block.entity.append(line[7:])
        else:
            block.body.append(line)
    if block is not None:
        finish(block)
    for c in cons:
        c.close()
    for name in env_set:
        os.environ.pop(name, None)
    return passed, failed, skipped


def main():
    ext = os.path.splitext(sys.argv[1])[0]
    here = os.path.dirname(os.path.abspath(__file__))
    folder = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, '..', 'test', 'cases')
    passed = failed = skipped = 0
    files = sorted(glob.glob(os.path.join(folder, '*.test')))
    for path in files:
        p, f, k = run_file(path, ext)
        passed += p
        failed += f
        skipped += k
    print('cases: %d files' % len(files))
    if skipped:
        print('%d skipped (another store file as a source: file stores only)' % skipped)
    print('%d passed, %d failed' % (passed, failed))
    sys.exit(1 if failed or not passed else 0)


if __name__ == '__main__':
    main()
