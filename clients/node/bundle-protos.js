// `npm pack` runs this first (prepack): it copies the protocol, ../../proto/kozel/v1/*.proto,
// into proto/ so that the package works wherever it is installed; afterwards (postpack, with
// --clean) it removes that copy again, so that a checkout never reads a stale one. In a copy
// that has no ../../proto (an installed package) there is nothing to do.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const from = path.join(here, '../../proto/kozel/v1');
const to = path.join(here, 'proto/kozel/v1');
if (fs.existsSync(from)) {
  fs.rmSync(path.join(here, 'proto'), { recursive: true, force: true });
  if (!process.argv.includes('--clean')) {
    fs.mkdirSync(to, { recursive: true });
    for (const name of fs.readdirSync(from).filter((n) => n.endsWith('.proto'))) {
      fs.copyFileSync(path.join(from, name), path.join(to, name));
    }
  }
}
