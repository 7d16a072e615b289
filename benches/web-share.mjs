// A share's public page as a visitor with no account opens it, in Chromium on loopback: the
// bytes its load transfers (compressed, as sent: bodies and headers), its first contentful
// paint, and the time from clicking the first track's Play to the first sound (the audio's
// currentTime past 0), N times, each in a fresh browser context (empty HTTP cache, no storage,
// no service worker yet); prints the median and the worst. The service worker the page
// registers precaches the app after the load: its bytes are counted apart.
//
//   MUSICLIB_URL=http://127.0.0.1:8000 MUSICLIB_USER=admin MUSICLIB_PASSWORD=… \
//     node benches/web-share.mjs [RUNS=5]
//
// Signs in through the API, shares an album (SHARE_ALBUM, default "Canción de Mañana" of the
// test corpus) with `POST /api/v1/shares`, measures, and revokes the share. Needs
// web/node_modules (.ci/web.sh); uses Debian's Chromium (/usr/bin/chromium, or CHROMIUM).
import { createRequire } from 'node:module';

const require = createRequire(new URL('../web/package.json', import.meta.url));
const { chromium } = require('@playwright/test');

const base = (process.env.MUSICLIB_URL ?? 'http://127.0.0.1:8000').replace(/\/$/, '');
const runs = Number(process.argv[2] ?? 5);
const albumTitle = process.env.SHARE_ALBUM ?? 'Canción de Mañana';

async function call(method, path, token, body) {
  const answer = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      ...(token ? { Authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!answer.ok) throw new Error(`${method} ${path}: ${answer.status} ${await answer.text()}`);
  return answer.status === 204 ? null : answer.json();
}

// Sign in, find the album, share it.
const { access_token: token } = await call('POST', '/auth/login', undefined, {
  username: process.env.MUSICLIB_USER ?? 'admin',
  password: process.env.MUSICLIB_PASSWORD ?? 'admin-password-1',
});
const albums = await call('GET', `/albums?q=${encodeURIComponent(albumTitle)}&limit=50`, token);
const album = albums.items.find((item) => item.title === albumTitle) ?? albums.items[0];
if (!album) throw new Error(`no album "${albumTitle}" on ${base}`);
const share = await call('POST', '/shares', token, { album_id: album.id });
// The share's URL as the server writes it; on the server's own origin when it names another
// (a public URL in front of a scratch server).
const shareUrl = new URL(share.url).origin === new URL(base).origin ? share.url : `${base}${new URL(share.url).pathname}`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--autoplay-policy=no-user-gesture-required'],
});

const loads = []; // bytes of the page's own requests until it is ready and the network is idle
const bodies = []; // the same, bodies only
const requests = [];
const parts = []; // { app, images, api } bytes per run
const precaches = []; // bytes the service worker fetched
const paints = [];
const sounds = [];
try {
  for (let run = 0; run < runs; run++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const pending = [];
    let phase = 'load';
    // Every finished request of the context: the page's and its service worker's.
    context.on('requestfinished', (request) => {
      const when = phase;
      pending.push(
        request.sizes().then((sizes) => ({
          when,
          worker: request.serviceWorker() !== null,
          type: request.resourceType(),
          url: request.url(),
          body: sizes.responseBodySize,
          total: sizes.responseBodySize + sizes.responseHeadersSize,
        })),
      );
    });

    await page.goto(shareUrl);
    const list = page.getByRole('list', { name: 'Tracks' });
    const play = list.getByRole('button').first();
    await play.waitFor();
    await page.getByRole('heading', { level: 1 }).waitFor();
    await page.waitForLoadState('networkidle');
    paints.push(await page.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN));

    // From the click to the audio's time moving past 0 (looked at every frame and on every
    // `timeupdate`, whichever sees it first).
    phase = 'play';
    await page.evaluate(() => {
      window.__sound = undefined;
      document.addEventListener(
        'click',
        () => {
          const clicked = performance.now();
          const heard = () => {
            const audio = document.querySelector('audio');
            if (window.__sound === undefined && audio && audio.currentTime > 0) window.__sound = performance.now() - clicked;
          };
          const frame = () => {
            heard();
            if (window.__sound === undefined) requestAnimationFrame(frame);
          };
          requestAnimationFrame(frame);
          document.addEventListener('timeupdate', heard, { capture: true });
        },
        { capture: true, once: true },
      );
    });
    await play.click();
    await page.waitForFunction(() => window.__sound !== undefined, null, { timeout: 30_000 });
    sounds.push(await page.evaluate(() => window.__sound));
    // Whatever the service worker is still fetching for its precache.
    await page.waitForTimeout(1500);
    const done = await Promise.all(pending);
    await context.close();

    const own = done.filter((r) => !r.worker && r.when === 'load');
    const sum = (items, key = 'total') => items.reduce((total, item) => total + item[key], 0);
    loads.push(sum(own));
    bodies.push(sum(own, 'body'));
    requests.push(own.length);
    parts.push({
      app: sum(own.filter((r) => !new URL(r.url).pathname.startsWith('/api/') && r.type !== 'image')),
      images: sum(own.filter((r) => r.type === 'image')),
      api: sum(own.filter((r) => new URL(r.url).pathname.startsWith('/api/') && r.type !== 'image')),
    });
    precaches.push(sum(done.filter((r) => r.worker)));
  }
} finally {
  await browser.close();
  await call('DELETE', `/shares/${share.id}`, token).catch(() => undefined);
}

const sorted = (values) => [...values].sort((a, b) => a - b);
const median = (values) => sorted(values)[Math.floor(values.length / 2)];
const worst = (values) => sorted(values).at(-1);
const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;
const ms = (value) => `${value.toFixed(0)} ms`;
const summary = (values, unit) => `median ${unit(median(values))}, worst ${unit(worst(values))}`;
const middle = parts[loads.indexOf(median(loads))];

console.log(`share page of "${album.title}" (${album.track_count} tracks) at ${new URL(shareUrl).pathname}, ${runs} cold runs`);
console.log(
  `page load, bytes transferred (compressed, headers included): ${summary(loads, kb)}; bodies only: ${summary(bodies, kb)}; ` +
    `${median(requests)} requests (median run: app ${kb(middle.app)}, images ${kb(middle.images)}, API ${kb(middle.api)})`,
);
console.log(`service worker's precache after the load: ${summary(precaches, kb)}`);
console.log(`first contentful paint: ${summary(paints, ms)}`);
console.log(`first sound after Play on the first track: ${summary(sounds, ms)}`);
