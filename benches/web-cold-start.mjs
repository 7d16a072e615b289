// The web player's cold start in Chromium on loopback: time to the first contentful paint of
// an album page and to the first sound after "Play", in a fresh browser context (empty HTTP
// cache) that is already signed in, N times; prints the median and the worst.
//
//   MUSICLIB_URL=http://127.0.0.1:8000 MUSICLIB_USER=admin MUSICLIB_PASSWORD=… \
//     node benches/web-cold-start.mjs [RUNS=5]
//
// Needs the test corpus imported (the album "Canción de Mañana") and web/node_modules
// (.ci/web.sh); uses Debian's Chromium (/usr/bin/chromium, or CHROMIUM).
import { createRequire } from 'node:module';

const require = createRequire(new URL('../web/package.json', import.meta.url));
const { chromium } = require('@playwright/test');

const base = process.env.MUSICLIB_URL ?? 'http://127.0.0.1:8000';
const runs = Number(process.argv[2] ?? 5);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--autoplay-policy=no-user-gesture-required'],
});

// Sign in once through the page; later contexts start with its storage, not its cache.
const first = await browser.newContext();
const page = await first.newPage();
await page.goto(`${base}/login`);
await page.getByLabel('User name').fill(process.env.MUSICLIB_USER ?? 'admin');
await page.getByLabel('Password').fill(process.env.MUSICLIB_PASSWORD ?? 'admin-password-1');
await page.getByRole('button', { name: 'Sign in' }).click();
await page.waitForURL((url) => !url.pathname.startsWith('/login'));
await page.goto(`${base}/albums`);
await page.getByRole('link', { name: 'Canción de Mañana' }).first().click();
await page.getByRole('button', { name: 'Play Mañana Dorada' }).waitFor();
const album = page.url();
const storage = await first.storageState();
await first.close();

const paints = [];
const sounds = [];
for (let run = 0; run < runs; run++) {
  const context = await browser.newContext({ storageState: storage });
  const cold = await context.newPage();
  await cold.goto(album);
  const play = cold.getByRole('button', { name: 'Play Mañana Dorada' });
  await play.waitFor();
  paints.push(
    await cold.evaluate(
      () => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN,
    ),
  );
  // From the click to the audio element's first `playing` event.
  await cold.evaluate(() => {
    window.__clicked = 0;
    document.addEventListener(
      'playing',
      () => {
        window.__sound = performance.now() - window.__clicked;
      },
      { capture: true, once: true },
    );
    document.addEventListener('click', () => (window.__clicked = performance.now()), {
      capture: true,
      once: true,
    });
  });
  await play.click();
  await cold.waitForFunction(() => window.__sound !== undefined, null, { timeout: 30_000 });
  sounds.push(await cold.evaluate(() => window.__sound));
  await context.close();
}
await browser.close();

const summary = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return `median ${sorted[Math.floor(sorted.length / 2)].toFixed(0)} ms, worst ${sorted.at(-1).toFixed(0)} ms`;
};
console.log(`first contentful paint of an album page, cold: ${summary(paints)} (${runs} runs)`);
console.log(`first sound after Play, cold: ${summary(sounds)} (${runs} runs)`);
