import { audioTime, expect, test } from './fixtures';
import { Loopback, PNG, cornerMp3, file } from './loopback';

// Podcasts as a listener uses them: subscribe to a feed by its URL (served on loopback by the
// test), see its episode, download it (its progress, then Play), play it in the player bar
// (the place saved on pause), and unsubscribe. A URL that is not a feed shows the server's
// refusal at the field.

const stamp = Date.now().toString(36);
const TITLE = `Loopback Radio Hour ${stamp}`;
const EPISODE = `Episode 1: Night trains ${stamp}`;
const audio = cornerMp3();
let feeds: Loopback;

function rss(base: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd">
  <channel>
    <title>${TITLE}</title>
    <link>https://example.com/show</link>
    <description>A show about &lt;b&gt;trains&lt;/b&gt; &amp; the night.</description>
    <itunes:author>The Loopback Crew</itunes:author>
    <itunes:image href="${base}/cover.png"/>
    <item>
      <title>${EPISODE}</title>
      <guid>ep-1-${stamp}</guid>
      <pubDate>Fri, 27 Nov 2026 08:00:00 GMT</pubDate>
      <itunes:duration>1:31</itunes:duration>
      <description>Notes: &lt;script&gt;alert(1)&lt;/script&gt; stations, timetables.</description>
      <enclosure url="${base}/episode-1.mp3" length="${audio.length}" type="audio/mpeg"/>
    </item>
  </channel>
</rss>`;
}

test.beforeAll(async () => {
  const routes: Record<string, ReturnType<typeof file>> = {};
  feeds = await Loopback.start(routes);
  routes[`/feed-${stamp}.xml`] = file(rss(feeds.base), 'application/rss+xml');
  routes['/cover.png'] = file(PNG, 'image/png');
  routes['/episode-1.mp3'] = file(audio, 'audio/mpeg');
  routes['/about.html'] = file('<!doctype html><html><head><title>Not a feed</title></head><body><p>Hello</p></body></html>', 'text/html');
});

test.afterAll(async () => {
  await feeds?.stop();
});

test('subscribe to a feed, download an episode, play it, unsubscribe', async ({ signedIn: page, api }) => {
  await page.goto('/');
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Podcasts' }).click();
  await expect(page).toHaveURL(/\/podcasts$/);
  const main = page.getByRole('main');
  await expect(main.getByRole('heading', { name: 'Podcasts', level: 1 })).toBeVisible();

  // Subscribe: the podcast's page opens.
  await main.getByLabel('Feed URL').fill(`${feeds.base}/feed-${stamp}.xml`);
  await main.getByRole('button', { name: 'Subscribe' }).click();
  await expect(page).toHaveURL(/\/podcasts\/[0-9a-f-]{36}$/);
  const id = page.url().split('/').pop()!;
  await expect(main.getByRole('heading', { name: TITLE, level: 1 })).toBeVisible();
  await expect(main.getByText('The Loopback Crew')).toBeVisible();
  await expect(main.getByRole('link', { name: 'Website' })).toHaveAttribute('href', 'https://example.com/show');
  // The image comes from the server's copy (with the token), and it loads.
  const image = main.locator('.hero-art img');
  await expect(image).toHaveAttribute('src', new RegExp(`^/api/v1/podcasts/${id}/cover\\?.*token=`));
  await expect.poll(() => image.evaluate((img: HTMLImageElement) => img.naturalWidth)).toBeGreaterThan(0);

  // The episode, as text (the feed's markup is text, never markup).
  const episodes = main.getByRole('list', { name: 'Episodes' });
  const item = episodes.getByRole('listitem', { name: EPISODE });
  await expect(item).toBeVisible();
  await expect(item.getByText('Not downloaded')).toBeVisible();
  await expect(item.getByText('1:31')).toBeVisible();
  await item.getByText('Episode notes').click();
  // The server sends the notes as text (markup removed); they are shown as text.
  await expect(item.getByText('stations, timetables.')).toBeVisible();
  await expect(item.locator('script, b')).toHaveCount(0);
  await expect(page.locator('script:not([src])')).toHaveCount(0);
  await page.mouse.move(0, 0);
  await page.screenshot({ path: 'test-results/desktop-podcast.png' });

  // Download: its progress is followed until Play appears.
  await item.getByRole('button', { name: `Download ${EPISODE}` }).click();
  await expect(item.getByRole('button', { name: `Play ${EPISODE}` })).toBeVisible({ timeout: 30_000 });
  await expect(item.getByText('Downloaded', { exact: true })).toBeVisible();

  // Play: the player bar shows the episode and its podcast, and the audio advances.
  await item.getByRole('button', { name: `Play ${EPISODE}` }).click();
  const bar = page.getByRole('region', { name: 'Now playing' });
  await expect(bar.getByRole('link', { name: EPISODE })).toBeVisible();
  await expect(bar.getByRole('link', { name: TITLE })).toBeVisible();
  await expect(bar.getByRole('button', { name: 'Pause' })).toBeVisible();
  await expect.poll(() => audioTime(page), { timeout: 20_000 }).toBeGreaterThan(1.5);
  expect(await page.evaluate(() => document.querySelector('audio')?.currentSrc ?? '')).toMatch(
    new RegExp(`/api/v1/podcast-episodes/${(await api.get(`/podcasts/${id}/episodes`)).items[0].id}/stream\\?.*token=`),
  );
  await expect(bar.getByRole('button', { name: 'Like' })).toHaveCount(0);
  await page.mouse.move(0, 0);
  await page.screenshot({ path: 'test-results/desktop-podcast-playing.png' });

  // Pause: the place is saved on the server; no play is recorded for an episode.
  await bar.getByRole('button', { name: 'Pause' }).click();
  const episodeId = (await api.get(`/podcasts/${id}/episodes`)).items[0].id as string;
  await expect.poll(async () => (await api.get(`/podcast-episodes/${episodeId}`)).position_ms ?? 0).toBeGreaterThan(1000);
  const history = await api.get('/history?limit=5');
  expect(JSON.stringify(history)).not.toContain(episodeId);

  // Resumes from the saved place after a reload of the page and a new Play.
  const saved = (await api.get(`/podcast-episodes/${episodeId}`)).position_ms as number;
  await page.reload();
  const again = page.getByRole('main').getByRole('list', { name: 'Episodes' }).getByRole('listitem', { name: EPISODE });
  await again.getByRole('button', { name: `Play ${EPISODE}` }).click();
  await expect.poll(() => audioTime(page)).toBeGreaterThan(saved / 1000 - 0.5);
  await bar.getByRole('button', { name: 'Pause' }).click();

  // The phone's layout of the page.
  await page.setViewportSize({ width: 375, height: 812 });
  await page.screenshot({ path: 'test-results/phone-podcast.png' });
  await page.setViewportSize({ width: 1280, height: 800 });

  // The list: its image, title, author and counts; its link leads back.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Podcasts' }).click();
  const listed = page.getByRole('main').getByRole('list', { name: 'Podcasts' }).getByRole('listitem').filter({ hasText: TITLE });
  await expect(listed).toContainText('The Loopback Crew');
  await expect(listed).toContainText('1 episode · 1 downloaded');
  await page.mouse.move(0, 0);
  await page.screenshot({ path: 'test-results/desktop-podcasts.png' });
  await listed.getByRole('link', { name: TITLE }).click();
  await expect(page).toHaveURL(new RegExp(`/podcasts/${id}$`));

  // Keep newest N: a bad number is refused at the field; a good one is saved; empty is off.
  const keepForm = page.getByRole('main').getByRole('form', { name: 'Keep the newest episodes downloaded' });
  const keep = keepForm.getByLabel('Keep the newest episodes downloaded');
  await keep.fill('500');
  await keepForm.getByRole('button', { name: 'Save' }).click();
  await expect(keepForm.getByRole('alert')).toHaveText('A number from 1 to 100, or empty for off.');
  await keep.fill('3');
  await keep.press('Enter');
  await expect(keepForm.getByRole('alert')).toHaveCount(0);
  await expect.poll(async () => (await api.get(`/podcasts/${id}`)).keep_newest).toBe(3);
  await keep.fill('');
  await keep.press('Enter');
  await expect.poll(async () => (await api.get(`/podcasts/${id}`)).keep_newest ?? null).toBeNull();

  // Unsubscribe (confirmed): back to the list, which no longer has it.
  await page.getByRole('main').getByRole('button', { name: 'Unsubscribe' }).click();
  const dialog = page.getByRole('alertdialog', { name: `Unsubscribe from ${TITLE}?` });
  await dialog.getByRole('button', { name: 'Unsubscribe' }).click();
  await expect(page).toHaveURL(/\/podcasts$/);
  await expect(page.getByRole('main').getByRole('link', { name: TITLE })).toHaveCount(0);
  const left = (await api.get('/podcasts')) as { id: string }[];
  expect(left.some((podcast) => podcast.id === id)).toBe(false);
});

test('a URL that is not a feed shows the server’s refusal at the field', async ({ signedIn: page, api }) => {
  const url = `${feeds.base}/about.html`;
  // The server's own words, to find them on the page (this server allows loopback feeds, so
  // the refusal is "not a feed").
  const answer = await api.send('POST', '/podcasts', { url });
  expect(answer.status()).toBe(422);
  const { error } = (await answer.json()) as { error: { message: string; field?: string } };
  expect(error.field).toBe('url');

  await page.goto('/podcasts');
  const main = page.getByRole('main');
  const field = main.getByLabel('Feed URL');
  await field.fill(url);
  await field.press('Enter');
  const alert = main.getByRole('alert');
  await expect(alert).toHaveText(error.message);
  await expect(field).toHaveAttribute('aria-invalid', 'true');
  await expect(field).toHaveAttribute('aria-describedby', 'feed-url-error');
  await page.screenshot({ path: 'test-results/desktop-podcasts-refused.png' });
  await page.setViewportSize({ width: 375, height: 812 });
  await page.screenshot({ path: 'test-results/phone-podcasts-refused.png' });
});

test('a listener who did not subscribe sees no Unsubscribe, Keep newest or Delete; the server refuses them', async ({
  browser,
  api,
}, info) => {
  // The admin subscribes (through the API) and downloads the episode.
  const created = await api.send('POST', '/podcasts', { url: `${feeds.base}/feed-${stamp}.xml` });
  expect([200, 201]).toContain(created.status());
  const podcast = (await created.json()) as { id: string };
  const episodeId = (await api.get(`/podcasts/${podcast.id}/episodes`)).items[0].id as string;
  await api.send('POST', `/podcast-episodes/${episodeId}/download`);
  await expect.poll(async () => (await api.get(`/podcast-episodes/${episodeId}`)).status, { timeout: 30_000 }).toBe('downloaded');

  // A listener of their own.
  const name = `listener-${stamp}`;
  const password = 'listener-password-1';
  const made = await api.send('POST', '/admin/users', { username: name, password });
  expect(made.status(), await made.text()).toBe(201);
  const context = await browser.newContext({ baseURL: String(info.project.use.baseURL), viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  try {
    await page.goto('/login');
    await page.getByLabel('User name').fill(name);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('heading', { name: 'Home', level: 1 })).toBeVisible();
    await page.goto(`/podcasts/${podcast.id}`);
    const main = page.getByRole('main');
    await expect(main.getByRole('heading', { name: TITLE, level: 1 })).toBeVisible();
    const item = main.getByRole('list', { name: 'Episodes' }).getByRole('listitem', { name: EPISODE });
    // They may play it, not delete it nor unsubscribe.
    await expect(item.getByRole('button', { name: `Play ${EPISODE}` })).toBeVisible();
    await expect(item.getByRole('button', { name: /^Delete/ })).toHaveCount(0);
    await expect(main.getByRole('button', { name: 'Unsubscribe' })).toHaveCount(0);
    await expect(main.getByLabel('Keep the newest episodes downloaded')).toHaveCount(0);
    // The stations page has no admin controls for them either.
    await page.goto('/stations');
    await expect(page.getByRole('main').getByRole('heading', { name: 'Internet radio', level: 1 })).toBeVisible();
    await expect(page.getByRole('button', { name: 'Add station' })).toHaveCount(0);
    // And the server refuses them anyway.
    const token = await page.evaluate(() => JSON.parse(localStorage.getItem('musiclib.auth') ?? '{}').token as string);
    const refused = await page.request.delete(`/api/v1/podcasts/${podcast.id}`, { headers: { authorization: `Bearer ${token}` } });
    expect(refused.status()).toBe(403);
  } finally {
    await context.close();
    await api.send('DELETE', `/podcasts/${podcast.id}`);
  }
});
