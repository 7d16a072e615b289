// Renders the app's PNG icons from public/favicon.svg with the e2e tests' Chromium, once; the
// PNGs are committed (run again only when the icon changes): node scripts/icons.mjs
// The maskable one has the note inside the safe zone on a full square of the same colour.
import { readFileSync } from 'node:fs';
import { chromium } from '@playwright/test';

const svg = readFileSync('public/favicon.svg', 'utf8');
const maskable = svg
  .replace('rx="14"', 'rx="0"')
  .replace('<path ', '<path transform="translate(32 32) scale(0.72) translate(-32 -32)" ');
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium' });
const page = await browser.newPage();
for (const [file, source, size] of [
  ['icon-192.png', svg, 192],
  ['icon-512.png', svg, 512],
  ['icon-maskable-512.png', maskable, 512],
]) {
  await page.setViewportSize({ width: size, height: size });
  const sized = source.replace('<svg ', `<svg width="${size}" height="${size}" `);
  await page.setContent(`<body style="margin:0;background:transparent">${sized}</body>`);
  await page.locator('svg').screenshot({ path: `public/${file}`, omitBackground: true });
  console.log(file);
}
await browser.close();
