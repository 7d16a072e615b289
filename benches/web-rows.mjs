// The web player's track table on a large library, in Chromium: how many rows are in the page
// (only the visible ones should be), how long scrolling frames take, and how long a row far
// down takes to fill in after a jump. Run by benches/web-rows.sh on a seeded library; or by
// hand against any server:
//
//   MUSICLIB_URL=http://127.0.0.1:8000 MUSICLIB_USER=bench MUSICLIB_PASSWORD=… \
//     node benches/web-rows.mjs
//
// Prints one line per figure. Needs web/node_modules (.ci/web.sh) and Debian's Chromium
// (/usr/bin/chromium, or CHROMIUM).
import { createRequire } from 'node:module';

const require = createRequire(new URL('../web/package.json', import.meta.url));
const { chromium } = require('@playwright/test');

const base = process.env.MUSICLIB_URL ?? 'http://127.0.0.1:8000';
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium' });
const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
const page = await context.newPage();
await page.goto(`${base}/login`);
await page.getByLabel('User name').fill(process.env.MUSICLIB_USER ?? 'bench');
await page.getByLabel('Password').fill(process.env.MUSICLIB_PASSWORD ?? 'bench-password');
await page.getByRole('button', { name: 'Sign in' }).click();
await page.waitForURL((url) => !url.pathname.startsWith('/login'));

await page.goto(`${base}/tracks`);
const table = page.getByRole('table', { name: 'Tracks' });
await table.getByRole('button', { name: /^Play / }).first().waitFor();
const total = Number(await table.getAttribute('aria-rowcount')) - 1;
const rows = () => table.getByRole('row').count();

const report = [];
report.push(`tracks in the library: ${total}`);
report.push(`rows in the page at the top: ${await rows()}`);

// Scrolling: 120 wheel steps of 400 px, frame durations from requestAnimationFrame.
await page.evaluate(() => {
  window.__frames = [];
  let last = performance.now();
  const tick = (now) => {
    window.__frames.push(now - last);
    last = now;
    if (!window.__stop) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
});
await page.mouse.move(640, 400);
for (let step = 0; step < 120; step++) {
  await page.mouse.wheel(0, 400);
  await page.waitForTimeout(16);
}
const frames = await page.evaluate(() => {
  window.__stop = true;
  return window.__frames.slice(2);
});
frames.sort((a, b) => a - b);
const at = (q) => frames[Math.min(frames.length - 1, Math.floor(q * frames.length))].toFixed(1);
report.push(`scrolling 48,000 px: ${frames.length} frames, p50 ${at(0.5)} ms, p95 ${at(0.95)} ms, worst ${at(1)} ms`);
report.push(`rows in the page while scrolled: ${await rows()}`);

// A jump to the middle: the time until the rows there are filled in.
const started = Date.now();
await page.evaluate(() => {
  // The table's scrolling element: its nearest scrollable ancestor (the content column).
  let scroller = document.querySelector('[role=table]');
  while (scroller && !['auto', 'scroll'].includes(getComputedStyle(scroller).overflowY)) scroller = scroller.parentElement;
  scroller ??= document.scrollingElement;
  scroller.scrollTop = scroller.scrollHeight / 2;
});
const middle = Math.floor(total / 2);
await page.waitForFunction(
  (index) => {
    const rows = [...document.querySelectorAll('[role=row][aria-rowindex]')];
    return rows.some((row) => Math.abs(Number(row.getAttribute('aria-rowindex')) - index) < 40 && row.querySelector('button'));
  },
  middle,
  { timeout: 60_000, polling: 10 },
);
report.push(`jump to row ${middle}: filled in after ${Date.now() - started} ms`);
report.push(`rows in the page in the middle: ${await rows()}`);
await browser.close();
console.log(report.join('\n'));
