import { expect, test } from './fixtures';

const TRACK = 'Corazón en Fuga';
const ALBUM = 'Canción de Mañana';

test('like a track and find it on the liked page; unlike it', async ({ signedIn: page }) => {
  await page.goto('/albums');
  await page.getByRole('link', { name: ALBUM }).first().click();
  const row = page.getByRole('listitem').filter({ hasText: TRACK });
  const like = row.getByRole('button', { name: 'Like', exact: true });
  await expect(like).toHaveAttribute('aria-pressed', 'false');
  // A like is shown at once and reaches the server through the outbox (/sync/push): a reload
  // before it got there would read the old state, so each reload below waits for it.
  let pushed = page.waitForResponse((r) => r.url().endsWith('/api/v1/sync/push') && r.ok());
  await like.click();
  await pushed;
  const unlike = row.getByRole('button', { name: 'Unlike' });
  await expect(unlike).toHaveAttribute('aria-pressed', 'true');

  await page.getByRole('link', { name: 'Liked songs' }).click();
  await expect(page.getByRole('heading', { name: 'Liked songs', level: 1 })).toBeVisible();
  const liked = page.getByRole('list', { name: 'Liked songs' }).getByRole('listitem').filter({ hasText: TRACK });
  await expect(liked).toBeVisible();

  // The state comes from the server: a reload shows it too; unliking removes it.
  await page.reload();
  pushed = page.waitForResponse((r) => r.url().endsWith('/api/v1/sync/push') && r.ok());
  await liked.getByRole('button', { name: 'Unlike' }).click();
  await pushed;
  await page.reload();
  await expect(page.getByRole('list', { name: 'Liked songs' }).getByRole('listitem').filter({ hasText: TRACK })).toHaveCount(0);
});

test('genres: each with its counts, leading to its albums', async ({ signedIn: page, api }) => {
  const genres = await api.get<{ name: string; album_count: number; track_count: number }[]>('/genres');
  const latin = genres.find((genre) => genre.name === 'Latin')!;
  expect(latin, 'the corpus tags its Spanish album Latin').toBeTruthy();
  await page.goto('/');
  await page.getByRole('navigation').getByRole('link', { name: 'Genres' }).first().click();
  await expect(page.getByRole('heading', { name: 'Genres', level: 1 })).toBeVisible();
  const list = page.getByRole('list', { name: 'Genres' });
  await expect(list.getByRole('listitem')).toHaveCount(genres.length);
  const link = list.getByRole('link', { name: /^Latin/ });
  await expect(link).toContainText(`${latin.album_count} album`);
  await link.click();
  await expect(page).toHaveURL(/\/albums\?genre=Latin$/);
  await expect(page.getByRole('heading', { name: 'Latin albums', level: 1 })).toBeVisible();
  const albums = await api.get<{ total: number }>('/albums?genre=Latin&limit=1');
  const grid = page.getByRole('list', { name: 'Latin albums' });
  await expect(grid.getByRole('link', { name: ALBUM })).toBeVisible();
  await expect(grid.getByRole('listitem')).toHaveCount(albums.total);
  await page.getByRole('link', { name: 'All albums' }).click();
  await expect(page.getByRole('heading', { name: 'Albums', level: 1 })).toBeVisible();
});

test('search as you type shows tracks, albums and artists', async ({ signedIn: page }) => {
  await page.goto('/');
  const search = page.getByRole('searchbox', { name: 'Search' });
  await search.pressSequentially('mañana', { delay: 60 });
  await expect(page).toHaveURL(/\/search\?q=ma%C3%B1ana/);
  await expect(page.getByRole('heading', { name: 'Albums', level: 2 })).toBeVisible();
  await expect(page.getByRole('list', { name: 'Albums' }).getByRole('link', { name: ALBUM })).toBeVisible();
  await expect(page.getByRole('heading', { name: 'Tracks', level: 2 })).toBeVisible();
  await expect(page.getByRole('list', { name: 'Tracks' }).getByText('Mañana Dorada')).toBeVisible();

  await search.fill('zzzz-no-such-thing');
  await expect(page.getByText('No results for “zzzz-no-such-thing”.')).toBeVisible();

  await search.fill('Señores');
  await expect(page.getByRole('list', { name: 'Artists' }).getByRole('link', { name: 'Los Señores del Ritmo' })).toBeVisible();
  await page.getByRole('list', { name: 'Artists' }).getByRole('link', { name: 'Los Señores del Ritmo' }).click();
  await expect(page.getByRole('heading', { name: 'Los Señores del Ritmo', level: 1 })).toBeVisible();
  await expect(page.getByRole('heading', { name: 'Top tracks' })).toBeVisible();
  await expect(page.getByRole('list', { name: 'Albums' }).getByRole('link', { name: ALBUM })).toBeVisible();
});

test('a title containing HTML is shown as text', async ({ signedIn: page, api }) => {
  const tracks = await api.get<{ items: { id: string; title: string }[] }>(`/tracks?q=${encodeURIComponent('Ñandú')}`);
  const track = tracks.items[0]!;
  const html = '<b>x</b><img src=x onerror=alert(1)>';
  expect((await api.send('PATCH', `/tracks/${track.id}`, { title: html })).status()).toBe(200);
  try {
    await page.goto('/albums');
    await page.getByRole('link', { name: ALBUM }).first().click();
    const list = page.getByRole('list', { name: ALBUM });
    await expect(list.getByText(html, { exact: true })).toBeVisible();
    expect(await list.locator('b, img[src="x"]').count()).toBe(0);
    await list.getByRole('button', { name: `Play ${html}` }).click();
    await expect(page.getByRole('region', { name: 'Now playing' }).getByRole('link', { name: html })).toBeVisible();
  } finally {
    await api.send('PATCH', `/tracks/${track.id}`, { title: track.title });
  }
});

test('the tracks table keeps only the visible rows in the page and sorts', async ({ signedIn: page, api }) => {
  const { total } = await api.get<{ total: number }>('/tracks?limit=1');
  await page.goto('/tracks');
  const table = page.getByRole('table', { name: 'Tracks' });
  await expect(table).toHaveAttribute('aria-rowcount', String(total + 1));
  await expect(table.getByRole('row').nth(1)).toBeVisible();
  const rows = await table.getByRole('row').count();
  expect(rows).toBeGreaterThan(1);
  expect(rows).toBeLessThan(200);
  // Sorting by title descending puts the title sorting last first.
  const first = await table.getByRole('row').nth(1).getByRole('cell').nth(1).textContent();
  await table.getByRole('button', { name: 'Title' }).click();
  await expect(table.getByRole('columnheader', { name: 'Title' })).toHaveAttribute('aria-sort', 'descending');
  await expect(table.getByRole('row').nth(1).getByRole('cell').nth(1)).not.toHaveText(first!);
  await page.mouse.wheel(0, 5000);
  expect(await table.getByRole('row').count()).toBeLessThan(200);
});

test('the tracks table scrolls through 100,000 rows with few in the page', async ({ signedIn: page }) => {
  // The corpus is small: answer /tracks with a synthetic library of 100,000 tracks.
  const TOTAL = 100_000;
  const asked: number[] = [];
  await page.route(/\/api\/v1\/tracks\?/, async (route) => {
    const url = new URL(route.request().url());
    const offset = Number(url.searchParams.get('offset') ?? 0);
    const limit = Number(url.searchParams.get('limit') ?? 50);
    asked.push(offset);
    const items = Array.from({ length: Math.max(0, Math.min(limit, TOTAL - offset)) }, (_, i) => {
      const n = offset + i;
      return {
        id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`, title: `Synthetic ${n}`, artist: 'Load', artist_id: null,
        album: 'Generated', album_id: null, duration_ms: 180_000, has_cover: false, year: 2024, storage_uri: '', source: 'upload',
        source_id: String(n), metadata_status: 'manual', availability: 'available', created_at: '', updated_at: '',
      };
    });
    await route.fulfill({ json: { items, total: TOTAL, limit, offset } });
  });
  await page.route(/\/api\/v1\/likes\/state/, (route) => route.fulfill({ json: [] }));

  await page.goto('/tracks');
  const table = page.getByRole('table', { name: 'Tracks' });
  await expect(table).toHaveAttribute('aria-rowcount', String(TOTAL + 1));
  await expect(table.getByRole('cell', { name: 'Synthetic 0', exact: true })).toBeVisible();

  // Jump to the middle, then near the end: the rows there load and the DOM stays small.
  const scroller = page.locator('main').locator('..');
  for (const fraction of [0.5, 0.999]) {
    await scroller.evaluate((el, f) => el.scrollTo(0, el.scrollHeight * f), fraction);
    const around = Math.floor(TOTAL * fraction / 100) * 100;
    await expect(table.getByRole('cell', { name: new RegExp(`^Synthetic ${String(around).slice(0, 3)}`) }).first()).toBeVisible();
    const rows = await table.getByRole('row').count();
    expect(rows).toBeLessThan(60);
    console.log(`rows in the DOM at ${fraction * 100}%: ${rows}`);
  }
  // Only the pages in view were asked for, not the 500 pages of the whole list.
  expect(asked.length).toBeLessThan(10);
});
