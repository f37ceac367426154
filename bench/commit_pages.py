#!/usr/bin/python3
"""Which B-trees one transaction's commit writes: runs EDN_FILE through edn_t on a copy of STORE
and counts the commit's WAL frames by the table or index that owned each page before it
(dbstat of the copy; "(new page)" for pages the commit added to the file).

Usage: /usr/bin/python3 bench/commit_pages.py EXT STORE EDN_FILE [--no-managed]

--no-managed drops the extension's managed indexes from the copy first (and keeps the store from
building them again before the commit): the commit as a bulk load makes it, its managed indexes
deferred (ext/store/store_tune.c).

A bulk commit's cost grows with the pages it rewrites, not with its datoms (bench/findings.md,
"Bulk load against the floor"): at bench s a 500-issue load file rewrites ~3,400 pages, nearly all
of them leaves of the value indexes the format requires for ref attributes. The copy is
/tmp/commit-pages-<pid>.db, removed at the end; STORE itself is not written.
"""
import collections
import os
import shutil
import sqlite3
import struct
import sys


def main():
    ext, store, edn = sys.argv[1], sys.argv[2], sys.argv[3]
    db = '/tmp/commit-pages-%d.db' % os.getpid()
    shutil.copy(store, db)
    try:
        raw = sqlite3.connect(db, isolation_level=None)
        if '--no-managed' in sys.argv:
            names = [r[0] for r in raw.execute("SELECT name FROM mentat_managed_indexes WHERE kind != 'schema'")]
            for name in names:
                raw.execute('DROP INDEX IF EXISTS "%s"' % name)
            raw.execute("DELETE FROM mentat_managed_indexes WHERE kind != 'schema'")
            os.environ['MENTAT_TUNE_MIN_DATOMS'] = str(1 << 62)   # read at the first store call
        owner = dict((pageno, name) for name, pageno in raw.execute('SELECT name, pageno FROM dbstat'))
        raw.close()
        con = sqlite3.connect(':memory:')
        con.enable_load_extension(True)
        con.load_extension(ext)
        # a read first: the store's deferred tune (if any) is then not this commit's
        con.execute('SELECT count(*) FROM edn_q(?, ?)',
                    (db, '[:find ?e . :where [?e :db/ident :db.part/db]]')).fetchall()
        con.execute('SELECT edn_t(?, ?)', (db, open(edn).read())).fetchone()
        w = open(db + '-wal', 'rb').read()   # read while the store is open: closing checkpoints it
        psz = struct.unpack('>I', w[8:12])[0]
        salt = w[16:24]
        cnt, pages, nFrames = collections.Counter(), set(), 0
        for off in range(32, len(w) - psz - 23, psz + 24):
            if w[off + 8:off + 16] != salt:   # a frame of an earlier WAL generation
                continue
            pg = struct.unpack('>I', w[off:off + 4])[0]
            nFrames += 1
            pages.add(pg)
            cnt[owner.get(pg, '(new page)')] += 1
        print('%d frames, %d distinct pages of %d bytes' % (nFrames, len(pages), psz))
        for k, v in cnt.most_common():
            print('%7d  %s' % (v, k))
        con.close()
    finally:
        for s in ('', '-wal', '-shm'):
            if os.path.exists(db + s):
                os.remove(db + s)
    return 0


if __name__ == '__main__':
    sys.exit(main())
