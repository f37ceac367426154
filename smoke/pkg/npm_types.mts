// smoke/pkg/npm_types.mts — the package's .d.ts as a TypeScript user meets it: checked by
// `tsc --noEmit --strict` (no @types/node: it must stand on its own).
import { getLoadablePath, load, type ExtensionHost } from 'mentat-sqlite';
import mentat from 'mentat-sqlite';

const p: string = getLoadablePath();
const db: ExtensionHost = { loadExtension(path: string) { return path; } };
load(db);
mentat.load(db);
const q: string = mentat.getLoadablePath() + p;
// @ts-expect-error a number has no loadExtension
load(42);
// @ts-expect-error getLoadablePath takes no argument
getLoadablePath(1);
export { q };
