import { audioTime, expect, test } from './fixtures';

// The corpus has no lyrics: .ci/web-e2e.sh and scripts/dev-server.sh point LRCLIB_BASE_URL at
// e2e/lrclib-mock.mjs, whose synced lyrics start a line every 2 seconds.
test('synced lyrics: the current line is highlighted in time, and a click on a line seeks', async ({ signedIn: page, api }) => {
  const tracks = await api.get<{ items: { id: string }[] }>(`/tracks?q=${encodeURIComponent('Mañana Dorada')}`);
  const lyrics = await api.get<{ synced: boolean; lines: unknown[] }>(`/tracks/${tracks.items[0]!.id}/lyrics`);
  expect(lyrics.synced, 'the server must find synced lyrics (LRCLIB_BASE_URL: e2e/lrclib-mock.mjs)').toBe(true);
  expect(lyrics.lines.length).toBeGreaterThan(0);

  await page.goto('/albums');
  await page.getByRole('link', { name: 'Canción de Mañana' }).first().click();
  await page.getByRole('button', { name: 'Play Mañana Dorada' }).click();
  await page.getByRole('region', { name: 'Now playing' }).getByRole('link', { name: 'Mañana Dorada' }).click();
  await expect(page.getByRole('heading', { name: 'Mañana Dorada', level: 1 })).toBeVisible();

  const lines = page.getByRole('list', { name: 'Lyrics' });
  const current = lines.locator('li[aria-current="true"]');
  await expect(current).toHaveCount(1);
  await expect.poll(() => audioTime(page), { timeout: 20_000 }).toBeGreaterThan(2.5);
  // Line i starts at 2·i seconds.
  await expect
    .poll(async () => {
      const index = await current.evaluate((li) => [...li.parentElement!.children].indexOf(li));
      const time = await audioTime(page);
      return Math.abs(index - Math.floor(time / 2)) <= 1;
    })
    .toBe(true);

  // A click on line 20 seeks to 40 s and highlights it.
  await lines.getByRole('listitem').nth(20).getByRole('button').click();
  await expect.poll(() => audioTime(page)).toBeGreaterThanOrEqual(40);
  await expect(lines.getByRole('listitem').nth(20)).toHaveAttribute('aria-current', 'true');
  await page.screenshot({ path: 'test-results/desktop-now-playing.png' });
});
