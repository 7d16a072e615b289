// Builds sw/sw.ts into dist/sw.js (at the root: its scope is the whole app) with the list of
// the build's files to precache, and a version from their names and public/'s contents, so
// every new build installs a new worker with a new cache.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { transformWithOxc, type Plugin } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

export function serviceWorker(): Plugin {
  return {
    name: 'musiclib-service-worker',
    apply: 'build',
    async generateBundle(_options, bundle) {
      // Every emitted file but index.html (cached as `/`) and the build's own manifest.
      const built = Object.keys(bundle).filter((name) => name !== 'index.html' && !name.startsWith('.vite/') && !name.endsWith('.map'));
      const publicDir = `${here}../public`;
      const publicFiles = readdirSync(publicDir).filter((name) => !name.startsWith('.'));
      const hash = createHash('sha256');
      for (const name of built.sort()) hash.update(name);
      for (const name of publicFiles.sort()) hash.update(name).update(readFileSync(`${publicDir}/${name}`));
      const files = [...built, ...publicFiles].map((name) => `/${name}`);
      const source = readFileSync(`${here}sw.ts`, 'utf8');
      const { code } = await transformWithOxc(source, 'sw.ts', { lang: 'ts' });
      const body = code
        .replace(/^export \{\s*\};?\s*$/m, '')
        .trim();
      const header = `const PRECACHE = ${JSON.stringify(files)};\nconst VERSION = ${JSON.stringify(hash.digest('hex').slice(0, 16))};\n`;
      this.emitFile({ type: 'asset', fileName: 'sw.js', source: `${header}${body}\n` });
    },
  };
}
