// The first-load budget: the gzip size of what loads before the first page draws (the entry
// chunk, its static imports and their CSS, from dist/.vite/manifest.json, plus the chunks of
// the page opened first, Home) must stay at or under 150 KB. Run after `vite build`.
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const BUDGET = 150 * 1024;
const manifest = JSON.parse(readFileSync('dist/.vite/manifest.json', 'utf8'));
const entry = Object.values(manifest).find((chunk) => chunk.isEntry);
const files = new Set();
function walk(chunk) {
  if (files.has(chunk.file)) return;
  files.add(chunk.file);
  for (const css of chunk.css ?? []) files.add(css);
  for (const key of chunk.imports ?? []) walk(manifest[key]);
}
walk(entry);
walk(manifest['src/pages/Home.svelte']);

let total = 0;
for (const file of [...files].sort()) {
  const size = gzipSync(readFileSync(`dist/${file}`), { level: 9 }).length;
  total += size;
  console.log(`${(size / 1024).toFixed(1).padStart(7)} KB  ${file}`);
}
total += gzipSync(readFileSync('dist/index.html')).length;
console.log(`${(total / 1024).toFixed(1).padStart(7)} KB  first load, gzip (index.html included; budget ${BUDGET / 1024} KB)`);
if (total > BUDGET) {
  console.error('over budget');
  process.exit(1);
}
