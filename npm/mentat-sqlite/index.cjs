'use strict';
// mentat-sqlite: where the platform package put libmentat_sqlite, and load(db) for any
// database object with loadExtension(path) (better-sqlite3, libsql, node:sqlite's
// DatabaseSync opened with { allowExtension: true }, bun:sqlite).
const path = require('path');

const PLATFORMS = { 'linux-x64': 'mentat-sqlite-linux-x64' };

function getLoadablePath() {
  const key = process.platform + '-' + process.arch;
  const pkg = PLATFORMS[key];
  if (!pkg) {
    throw new Error('mentat-sqlite: no build for ' + key + ' (there are builds for ' +
                    Object.keys(PLATFORMS).join(', ') + ')');
  }
  let dir;
  try {
    dir = path.dirname(require.resolve(pkg + '/package.json'));
  } catch (e) {
    // The usual cause is a tarball install of mentat-sqlite alone: npm then looks the
    // optional platform package up on the registry and skips it when that fails.
    const v = require('./package.json').version;
    throw new Error('mentat-sqlite: ' + pkg + ' is not installed: install ' + pkg + '-' + v +
                    '.tgz beside it: npm install ./mentat-sqlite-' + v + '.tgz ./' + pkg + '-' +
                    v + '.tgz');
  }
  return path.join(dir, 'lib', 'libmentat_sqlite.so');
}

function load(db) {
  db.loadExtension(getLoadablePath());
}

module.exports = { getLoadablePath, load };
