"""mentat_sqlite.load() in a Python whose sqlite3 cannot load extensions.

Usage: python no_load_ext.py [stand-in]
With this Python's own sqlite3 connection, or with "stand-in" a connection object without
enable_load_extension (for a Python that has it). Prints one PASS/FAIL line; exits 1 on FAIL.
"""
import os
import sqlite3
import sys

import mentat_sqlite


class StandIn:
    """A connection as pyenv's and macOS's sqlite3 builds give it: no enable_load_extension."""


con = StandIn() if sys.argv[1:] == ["stand-in"] else sqlite3.connect(":memory:")
want = ("mentat_sqlite.load: this Python's sqlite3 module cannot load extensions (%s was built "
        "without enable_load_extension); use Debian's /usr/bin/python3, or a venv made with "
        "/usr/bin/python3 -m venv" % os.path.realpath(sys.executable))
try:
    mentat_sqlite.load(con)
    got = "no error"
except sqlite3.NotSupportedError as e:
    got = str(e)
except Exception as e:  # the bare AttributeError this replaces
    got = "%s: %s" % (type(e).__name__, e)
ok = got == want
print(("PASS " if ok else "FAIL ") + "load() without extension loading (%s)" % (sys.argv[1:] or ["real"])[0]
      + ("" if ok else ":\n  got:  %s\n  want: %s" % (got, want)))
sys.exit(0 if ok else 1)
