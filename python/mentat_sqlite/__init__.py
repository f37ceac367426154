"""libmentat_sqlite for Python's sqlite3 module.

    import sqlite3, mentat_sqlite
    con = sqlite3.connect("app.db")
    mentat_sqlite.load(con)
    con.execute("SELECT mentat_version()").fetchone()

The package carries the extension and the shared libraries it needs beside it, so it does
not depend on the system's libcjson.
"""
import os
import sqlite3
import sys

__all__ = ["loadable_path", "load", "__version__"]

_HERE = os.path.dirname(os.path.abspath(__file__))

with open(os.path.join(_HERE, "VERSION")) as _f:
    __version__ = _f.read().strip()


def loadable_path():
    """The extension's path without the ".so" suffix, for load_extension()."""
    return os.path.join(_HERE, "libmentat_sqlite")


def load(conn):
    """Loads the extension into the sqlite3 connection `conn`.

    Extension loading is switched on for the call and off again afterwards. Needs a Python
    whose sqlite3 module can load extensions (Debian's /usr/bin/python3 can; pyenv's and
    macOS's builds often lack enable_load_extension): without it, raises
    sqlite3.NotSupportedError saying so, instead of the bare AttributeError."""
    if not hasattr(conn, "enable_load_extension"):
        raise sqlite3.NotSupportedError(
            "mentat_sqlite.load: this Python's sqlite3 module cannot load extensions (%s "
            "was built without enable_load_extension); use Debian's /usr/bin/python3, or a "
            "venv made with /usr/bin/python3 -m venv" % os.path.realpath(sys.executable))
    conn.enable_load_extension(True)
    try:
        conn.load_extension(loadable_path())
    finally:
        conn.enable_load_extension(False)
