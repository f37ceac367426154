/** Any database object that loads SQLite extensions by path: better-sqlite3's and libsql's
 * Database, node:sqlite's DatabaseSync (opened with { allowExtension: true }), bun:sqlite's
 * Database. */
export interface ExtensionHost {
  loadExtension(path: string): unknown;
}

/** The absolute path of libmentat_sqlite.so in the installed platform package
 * (mentat-sqlite-linux-x64). Throws when there is no build for this platform. */
export declare function getLoadablePath(): string;

/** Loads the extension into db: edn_t, edn_q, edn_pull and mentat_version. */
export declare function load(db: ExtensionHost): void;

declare const _default: { getLoadablePath: typeof getLoadablePath; load: typeof load };
export default _default;
