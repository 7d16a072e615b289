// Offline: the installable app (manifest, service worker), an album kept offline that opens and
// plays with the server stopped, and a like made meanwhile that reaches the server exactly once
// when it is back, and then shows on a second browser; playlists and liked songs kept offline
// following the changes made elsewhere.
import { randomUUID } from 'node:crypto';
import AxeBuilder from '@axe-core/playwright';
import type { APIRequestContext, Page } from '@playwright/test';
import { Api, PASSWORD, USER, audioTime, expect, screenshot, test } from './fixtures';
import { OwnServer } from './own-server';

const ALBUM = '夜明けの歌';
const LIKED = 'さよなら、夏';
/** The album's folder in the corpus library (the server of the album flow imports only it). */
const ALBUM_FOLDER = '月光オーケストラ/夜明けの歌 (2020)';

interface Changes {
  likes: { client_event_id: string; track_id: string; liked: boolean }[];
  cursor: string;
  has_more: boolean;
}

/** Every like event after `since` (all pages), and the cursor after them. */
async function changesSince(api: Api, since: string): Promise<{ likes: Changes['likes']; cursor: string }> {
  const likes: Changes['likes'] = [];
  for (;;) {
    const page = await api.get<Changes>(`/sync/changes?since=${since}&limit=5000`);
    likes.push(...page.likes);
    since = page.cursor;
    if (!page.has_more) return { likes, cursor: since };
  }
}

async function likedOnServer(api: Api, trackId: string): Promise<boolean> {
  const [state] = await api.get<{ liked: boolean }[]>(`/likes/state?track_ids=${trackId}`);
  return state?.liked ?? false;
}

function setLike(api: Api, trackId: string, liked: boolean) {
  return api.send('POST', '/likes', { client_event_id: randomUUID(), track_id: trackId, liked, event_time: new Date().toISOString() });
}

/** One store of the page's offline database, read whole: its values, or its keys. */
function readStore<T>(page: Page, store: string, what: 'values' | 'keys' = 'values'): Promise<T[]> {
  return page.evaluate(
    ([store, what]) =>
      new Promise<T[]>((resolve, reject) => {
        const request = indexedDB.open('musiclib-offline');
        request.onerror = () => reject(request.error);
        request.onsuccess = () => {
          const db = request.result;
          const objects = db.transaction(store).objectStore(store);
          const read = what === 'keys' ? objects.getAllKeys() : objects.getAll();
          read.onsuccess = () => {
            db.close();
            resolve(read.result as T[]);
          };
        };
      }),
    [store, what] as const,
  );
}

interface LikeIn {
  client_event_id: string;
  track_id: string;
  liked: boolean;
  event_time: string;
}

/** The like events waiting in the page's outbox (IndexedDB). */
async function outboxLikes(page: Page): Promise<{ id: string; track: string; body: LikeIn }[]> {
  const events = await readStore<{ kind: string; body: LikeIn }>(page, 'outbox');
  return events.filter((e) => e.kind === 'like').map((e) => ({ id: e.body.client_event_id, track: e.body.track_id, body: e.body }));
}

async function controlled(page: Page) {
  await page.evaluate(() => navigator.serviceWorker.ready.then(() => undefined));
  await expect.poll(() => page.evaluate(() => navigator.serviceWorker.controller !== null)).toBe(true);
}

test('the app is installable: the manifest and its icons are served, the service worker takes control', async ({ signedIn: page, request }) => {
  const manifest = await request.get('/manifest.webmanifest');
  expect(manifest.status()).toBe(200);
  const body = (await manifest.json()) as { name: string; start_url: string; display: string; icons: { src: string; sizes: string }[] };
  expect(body).toMatchObject({ name: 'musiclib', start_url: '/', display: 'standalone' });
  for (const size of ['192x192', '512x512']) {
    const icon = body.icons.find((candidate) => candidate.sizes === size)!;
    const answer = await request.get(icon.src);
    expect(answer.status(), icon.src).toBe(200);
    expect(answer.headers()['content-type']).toBe('image/png');
  }
  const worker = await request.get('/sw.js');
  expect(worker.status()).toBe(200);
  expect(worker.headers()['cache-control']).toBe('no-cache');
  expect(worker.headers()['content-type']).toMatch(/javascript/);

  await page.goto('/');
  await expect(page.locator('link[rel="manifest"]')).toHaveAttribute('href', '/manifest.webmanifest');
  await controlled(page);
  // The shell is cached: index.html and the build's files, lazy pages included.
  const cached = await page.evaluate(async () => {
    const names = await caches.keys();
    const cache = await caches.open(names.find((name) => name.startsWith('musiclib-shell-'))!);
    return (await cache.keys()).map((request) => new URL(request.url).pathname);
  });
  expect(cached).toContain('/');
  expect(cached.filter((path) => path.startsWith('/assets/') && path.endsWith('.js')).length).toBeGreaterThan(10);
  // No answer of the API is ever cached.
  expect(cached.filter((path) => path.startsWith('/api/'))).toEqual([]);
});

// The album flow runs on a server of its own (e2e/own-server.ts), which it stops and starts
// again: the shared server must stay up for the other tests, and a stopped server is unreachable
// for every fetch of the browser, the service worker's included (which Playwright's offline
// switch is not documented to reach).
const withOwnServer = test.extend<{ server: OwnServer }>({
  server: [
    async ({}, use, testInfo) => {
      const server = await OwnServer.create({ albums: [ALBUM_FOLDER], user: USER, password: PASSWORD });
      try {
        await use(server);
      } finally {
        if (testInfo.status !== testInfo.expectedStatus) await testInfo.attach('server.log', { body: await server.log() });
        await server.dispose();
      }
    },
    { timeout: 120_000 },
  ],
  baseURL: async ({ server }, use) => use(server.base),
});

/** An API client for set-up and checks, signed in as the admin (not cached: the server is the test's own). */
async function apiOf(request: APIRequestContext): Promise<Api> {
  const answer = await request.post('/api/v1/auth/login', { data: { username: USER, password: PASSWORD } });
  expect(answer.status(), await answer.text()).toBe(200);
  return new Api(request, ((await answer.json()) as { access_token: string }).access_token);
}

/** Signs in through the sign-in page (the visit to `path` leads there first). */
async function signIn(page: Page, path: string) {
  await page.goto(path);
  await expect(page).toHaveURL(/\/login\?next=/);
  await page.getByLabel('User name').fill(USER);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(new RegExp(`${path}$`));
}

withOwnServer('an album kept offline plays with the server stopped; a like made meanwhile reaches it once', async ({
  server,
  page,
  problems,
  context,
  browser,
  playwright,
}) => {
  withOwnServer.setTimeout(180_000);
  let request = await playwright.request.newContext({ baseURL: server.base });
  let api = await apiOf(request);

  await signIn(page, '/albums');
  await controlled(page);
  await page.getByRole('link', { name: ALBUM }).first().click();
  await expect(page.getByRole('heading', { name: ALBUM, level: 1 })).toBeVisible();
  const albumId = new URL(page.url()).pathname.split('/').pop()!;
  const tracks = await api.get<{ items: { id: string; title: string }[] }>(`/albums/${albumId}/tracks?limit=200`);
  const liked = tracks.items.find((track) => track.title === LIKED)!;
  expect(await likedOnServer(api, liked.id)).toBe(false);
  const { cursor } = await changesSince(api, '');

  // Make it available offline: progress, then "Available offline".
  const keep = page.getByRole('button', { name: 'Make available offline' });
  await expect(keep).toHaveAttribute('aria-pressed', 'false');
  await keep.click();
  await expect(keep).toHaveAttribute('aria-pressed', 'true');
  await expect(page.getByRole('status').filter({ hasText: `${ALBUM} is available offline` })).toBeVisible({ timeout: 60_000 });
  await expect(keep).toContainText('Available offline');
  await screenshot(page, 'offline-album-kept');

  // The server stops (the browser keeps its network): nothing answers on its port, for the
  // page and for the service worker.
  await request.dispose();
  await server.stop();
  expect(await server.healthy()).toBe(false);
  const [worker] = context.serviceWorkers();
  expect(await worker!.evaluate(() => fetch('/health').then(() => 'reached', () => 'unreachable'))).toBe('unreachable');

  // A reload is answered by the service worker: the app opens; the album's page, which needs
  // the server, says it could not load (with Retry) instead of waiting.
  const reloaded = await page.reload();
  expect(reloaded?.fromServiceWorker()).toBe(true);
  await expect(page.getByRole('navigation', { name: 'Main' })).toBeVisible();
  await expect(page.getByText('Could not load this. Try again.')).toBeVisible();
  await expect(page.getByRole('button', { name: 'Retry' })).toBeVisible();

  // The Offline page lists the album; it plays from the stored audio.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Offline' }).click();
  await expect(page.getByRole('heading', { name: 'Offline', level: 1 })).toBeVisible();
  const entry = page.getByRole('listitem').filter({ has: page.getByRole('link', { name: ALBUM }) });
  await expect(entry).toContainText('4 tracks');
  await entry.getByRole('button', { name: `Play ${ALBUM}` }).click();
  await expect.poll(() => audioTime(page), { timeout: 20_000 }).toBeGreaterThan(1);
  expect(await page.evaluate(() => document.querySelector('audio')!.src)).toMatch(/^blob:/);
  await screenshot(page, 'offline-page-server-stopped');

  // A like made meanwhile waits in the outbox.
  await entry.getByText('Tracks', { exact: true }).click();
  const row = entry.getByRole('listitem').filter({ hasText: LIKED });
  await row.getByRole('button', { name: 'Like', exact: true }).click();
  await expect(row.getByRole('button', { name: 'Unlike' })).toHaveAttribute('aria-pressed', 'true');
  await expect.poll(() => outboxLikes(page)).toHaveLength(1);
  const [waiting] = await outboxLikes(page);
  expect(waiting!.track).toBe(liked.id);
  await expect(page.getByText(/waits? to be sent/)).toBeVisible();
  expect(await server.healthy()).toBe(false);

  // The server is back, on the same port with the same data: the outbox's next try sends the
  // like (no reload, no network event), exactly once, with the id it was made with.
  await server.start();
  request = await playwright.request.newContext({ baseURL: server.base });
  api = await apiOf(request);
  await expect.poll(() => likedOnServer(api, liked.id), { timeout: 60_000 }).toBe(true);
  await expect.poll(() => outboxLikes(page)).toHaveLength(0);
  await expect(page.getByText(/waits? to be sent/)).toBeHidden();
  // Another start of the app (which pushes what waits) sends nothing again; a push sent again
  // (its answer lost on the way) is a duplicate the server ignores.
  await page.reload();
  await expect(page.getByRole('heading', { name: 'Offline', level: 1 })).toBeVisible();
  const again = await api.send('POST', '/sync/push', { likes: [waiting!.body], plays: [] });
  expect(again.status()).toBe(200);
  expect(await again.json()).toMatchObject({ accepted: 0, duplicates: 1 });
  const after = await changesSince(api, cursor);
  const events = after.likes.filter((like) => like.track_id === liked.id);
  expect(events.map((like) => [like.client_event_id, like.liked])).toEqual([[waiting!.id, true]]);

  // A second browser (nothing stored), signed in as the same user, sees the track liked.
  const device = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const other = await device.newPage();
  other.on('pageerror', (error) => problems.push(`uncaught (second browser): ${error.message}`));
  await signIn(other, `/albums/${albumId}`);
  const otherRow = other.getByRole('list', { name: ALBUM }).getByRole('listitem').filter({ hasText: LIKED });
  await expect(otherRow.getByRole('button', { name: 'Unlike' })).toHaveAttribute('aria-pressed', 'true');
  await device.close();

  // The browser's own offline switch (navigator.onLine) is shown as such: a banner, and the
  // pages that need the network say so.
  await context.setOffline(true);
  await page.goto(`/albums/${albumId}`);
  await expect(page.getByRole('status').filter({ hasText: 'You are offline' })).toBeVisible();
  await expect(page.getByText('This page needs the network, and you are offline.')).toBeVisible();
  await context.setOffline(false);
  await expect(page.getByRole('status').filter({ hasText: 'You are offline' })).toBeHidden();

  // Removed from this browser: nothing is kept.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Offline' }).click();
  await entry.getByRole('button', { name: `Remove ${ALBUM} from this device` }).click();
  await expect(page.getByText('Nothing is kept offline yet.', { exact: false })).toBeVisible();
  await request.dispose();
});

/** The track ids whose audio the page keeps (IndexedDB). */
async function storedAudio(page: Page): Promise<string[]> {
  return (await readStore<string>(page, 'audio', 'keys')).sort();
}

test('a playlist kept offline follows the changes made on another device', async ({ signedIn: page, api }) => {
  const mix = await api.get<{ items: { id: string; title: string; album: string | null }[] }>(
    `/tracks?q=${encodeURIComponent('Summer Mix 2022')}&sort=title&limit=50`,
  );
  const [first, second, third] = mix.items.filter((track) => track.album === 'Summer Mix 2022');
  const name = `Kept offline ${randomUUID().slice(0, 8)}`;
  const created = await api.send('POST', '/playlists', { name, track_ids: [first!.id, second!.id] });
  expect(created.status()).toBe(201);
  const playlist = (await created.json()) as { id: string; version: number };

  try {
    await page.goto(`/playlists/${playlist.id}`);
    await page.getByRole('button', { name: 'Make available offline' }).click();
    await expect(page.getByRole('status').filter({ hasText: `${name} is available offline` })).toBeVisible({ timeout: 60_000 });
    expect(await storedAudio(page)).toEqual([first!.id, second!.id].sort());

    // Another device adds a track and removes the first one.
    const added = await api.send('POST', `/playlists/${playlist.id}/tracks`, { track_ids: [third!.id], version: playlist.version });
    expect(added.status()).toBe(200);
    const now = (await added.json()) as { version: number };
    expect((await api.send('DELETE', `/playlists/${playlist.id}/tracks`, { positions: [0], version: now.version })).status()).toBe(200);

    // The next start pulls the changes: the new track is downloaded, the removed one dropped.
    await page.goto('/offline');
    const entry = page.getByRole('listitem').filter({ has: page.getByRole('link', { name }) });
    await expect(entry).toContainText('2 tracks');
    await expect.poll(() => storedAudio(page)).toEqual([second!.id, third!.id].sort());
    await entry.getByText('Tracks', { exact: true }).click();
    await expect(entry.getByRole('listitem')).toHaveText([new RegExp(second!.title), new RegExp(third!.title)]);

    // Deleted elsewhere: it goes from this device too.
    expect((await api.send('DELETE', `/playlists/${playlist.id}`)).status()).toBe(204);
    await page.reload();
    await expect(page.getByRole('heading', { name: 'Offline', level: 1 })).toBeVisible();
    await expect(page.getByRole('link', { name })).toHaveCount(0);
    await expect.poll(() => storedAudio(page)).toEqual([]);
  } finally {
    await api.send('DELETE', `/playlists/${playlist.id}`);
  }
});

/** What the page keeps in each store of its offline database. */
async function storedCounts(page: Page): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const name of ['collections', 'tracks', 'audio', 'covers', 'outbox']) {
    counts[name] = (await readStore<unknown>(page, name, 'keys')).length;
  }
  return counts;
}

async function axeAndWidth(page: Page, name: string) {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`);
  expect(bad, `axe on ${name}`).toEqual([]);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  expect(overflow, `sideways scrolling on ${name}`).toBe(0);
}

test('liked songs kept offline follow the likes made here and elsewhere; signing out clears it all', async ({
  signedIn: page,
  context,
  api,
}) => {
  const album = 'Field Recordings & Drones';
  const found = await api.get<{ items: { id: string; title: string; album: string | null; album_id: string }[] }>(
    `/tracks?q=${encodeURIComponent('Opus Collective')}&sort=title&limit=50`,
  );
  const [a, b, c] = found.items.filter((track) => track.album === album);
  const initial = await Promise.all([a, b, c].map((track) => likedOnServer(api, track!.id)));
  try {
    await setLike(api, a!.id, true);
    for (const track of [b, c]) if (await likedOnServer(api, track!.id)) await setLike(api, track!.id, false);

    await page.goto('/liked');
    await page.getByRole('button', { name: 'Make available offline' }).click();
    await expect(page.getByRole('status').filter({ hasText: 'Liked songs is available offline' })).toBeVisible({ timeout: 60_000 });
    expect(await storedAudio(page)).toContain(a!.id);

    // Liked here: kept at once.
    await page.goto(`/albums/${a!.album_id}`);
    await page.getByRole('list', { name: album }).getByRole('listitem').filter({ hasText: b!.title })
      .getByRole('button', { name: 'Like', exact: true }).click();
    await expect.poll(() => storedAudio(page)).toContain(b!.id);

    // Liked and unliked on another device: kept and dropped at the next sync (the network
    // coming back is one of its moments).
    await setLike(api, c!.id, true);
    await setLike(api, a!.id, false);
    await context.setOffline(true);
    await context.setOffline(false);
    await expect.poll(() => storedAudio(page), { timeout: 20_000 }).toContain(c!.id);
    await expect.poll(() => storedAudio(page)).not.toContain(a!.id);

    // The Offline page, with something on it, at both sizes: no accessibility problem, no
    // sideways scrolling.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Offline' }).click();
    await expect(page.getByRole('link', { name: 'Liked songs' }).last()).toBeVisible();
    await axeAndWidth(page, 'offline (desktop)');
    await page.setViewportSize({ width: 375, height: 812 });
    await axeAndWidth(page, 'offline (phone)');
    await screenshot(page, 'phone-offline');
    await page.setViewportSize({ width: 1280, height: 800 });

    // Signing out: nothing of the user stays in this browser.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('button', { name: 'Sign out' }).click();
    await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible();
    await expect.poll(() => storedCounts(page)).toEqual({ collections: 0, tracks: 0, audio: 0, covers: 0, outbox: 0 });
  } finally {
    for (const [i, track] of [a, b, c].entries()) {
      if ((await likedOnServer(api, track!.id)) !== initial[i]) await setLike(api, track!.id, initial[i]!);
    }
  }
});
