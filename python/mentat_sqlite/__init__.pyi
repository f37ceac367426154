import sqlite3

__version__: str

def loadable_path() -> str: ...
def load(conn: sqlite3.Connection) -> None: ...  # sqlite3.NotSupportedError without extension loading
