import AxeBuilder from '@axe-core/playwright';
import { expect, test, type Api } from './fixtures';
import type { Page } from '@playwright/test';

// Every page: no serious or critical accessibility violation, no CSP violation (the fixture),
// no sideways scrolling on a phone, and a screenshot of each to look at.

async function routes(api: Api): Promise<[string, string][]> {
  const albums = await api.get<{ items: { id: string; title: string; artist_id: string | null }[] }>('/albums?sort=title&limit=50');
  const album = albums.items.find((a) => a.title === 'Canción de Mañana') ?? albums.items[0]!;
  let playlists = await api.get<{ items: { id: string; name: string }[] }>('/playlists?limit=200');
  let playlist = playlists.items.find((p) => p.name === 'Layout check');
  if (!playlist) {
    const tracks = await api.get<{ items: { id: string }[] }>(`/albums/${album.id}/tracks`);
    const created = await api.send('POST', '/playlists', { name: 'Layout check', track_ids: tracks.items.map((t) => t.id) });
    playlist = (await created.json()) as { id: string; name: string };
  }
  return [
    ['home', '/'],
    ['albums', '/albums'],
    ['album', `/albums/${album.id}`],
    ['artists', '/artists'],
    ['artist', `/artists/${album.artist_id}`],
    ['genres', '/genres'],
    ['folders', '/folders/music'],
    ['folder', `/folders/music/${encodeURIComponent('Los Señores del Ritmo')}/${encodeURIComponent('Canción de Mañana (2021)')}`],
    ['tracks', '/tracks'],
    ['search', '/search?q=a'],
    ['liked', '/liked'],
    ['history', '/history'],
    ['playlists', '/playlists'],
    ['playlist', `/playlists/${playlist.id}`],
    ['smart-editor', '/playlists/smart'],
    ['shares', '/shares'],
    ['now-playing', '/now-playing'],
    ['settings', '/settings'],
    ['upload', '/upload'],
    ['admin', '/admin'],
    ['offline', '/offline'],
    ['radio', '/radio'],
    ['podcasts', '/podcasts'],
    ['stations', '/stations'],
  ];
}

async function check(page: Page, name: string, viewport: string) {
  await expect(page.getByRole('heading', { level: 1 })).toBeVisible();
  await expect(page.getByText('Loading…')).toHaveCount(0);
  await page.waitForLoadState('networkidle');
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`);
  expect(bad, `axe on ${name}`).toEqual([]);
  const overflow = await page.evaluate(() => {
    const main = document.querySelector('main');
    return {
      page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
      main: main ? main.scrollWidth - main.clientWidth : 0,
    };
  });
  expect(overflow, `sideways scrolling on ${name}`).toEqual({ page: 0, main: 0 });
  await page.screenshot({ path: `test-results/${viewport}-${name}.png` });
}

test('every page passes axe without sideways scrolling', { tag: '@ui' }, async ({ signedIn: page, api }, info) => {
  test.setTimeout(300_000);
  const viewport = info.project.name;
  // Something in the queue, so the player bar and the now-playing page have content.
  await page.goto('/albums');
  await page.getByRole('link', { name: 'Canción de Mañana' }).first().click();
  await page.getByRole('button', { name: 'Play Corazón en Fuga' }).click();
  await page.getByRole('region', { name: 'Now playing' }).getByRole('button', { name: 'Pause' }).click();

  for (const [name, path] of await routes(api)) {
    await page.goto(path);
    await check(page, name, viewport);
  }
  // The queue panel open, and the dark theme.
  await page.goto('/');
  await page.getByRole('region', { name: 'Now playing' }).getByRole('button', { name: 'Queue' }).click();
  await expect(page.getByRole('complementary', { name: 'Queue' })).toBeVisible();
  await check(page, 'queue', viewport);
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.goto('/');
  await check(page, 'home-dark', viewport);
  await page.goto('/now-playing');
  await check(page, 'now-playing-dark', viewport);
});

test('the sign-in page passes axe', async ({ page, problems }, info) => {
  void problems;
  await page.goto('/login');
  await check(page, 'login', info.project.name);
});
