import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import { audioTime, expect, test, USER } from './fixtures';

// Sharing: a link to an album made from the album page, opened with no account in a browser
// with no storage (it plays, shows lyrics and download links, and never sends a token), its
// Open Graph tags, the Shares page, and revoking it.
const ALBUM = 'Canción de Mañana';

/** Fails on CSP violations and uncaught errors of a page the fixtures do not watch. */
function watch(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy|CSP violation/i.test(message.text())) problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(`uncaught: ${error.message}`));
  return problems;
}

async function axe(page: Page, name: string) {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`);
  expect(bad, `axe on ${name}`).toEqual([]);
}

test('share an album: the public page plays it without an account, then the link is revoked', async ({ signedIn: page, browser, request }) => {
  test.setTimeout(150_000);
  await page.goto('/albums');
  await page.getByRole('link', { name: ALBUM }).first().click();
  await page.getByRole('button', { name: 'Share' }).click();
  const stamp = `run ${Date.now()}`;

  const dialog = page.getByRole('dialog', { name: `Share ${ALBUM}` });
  await dialog.getByLabel('Description').fill(`For the road <b>trip</b>\n${stamp}`);
  await dialog.getByLabel('Link expires').selectOption('date');
  const later = new Date(Date.now() + 30 * 24 * 3600 * 1000);
  await dialog.getByLabel('Expiry date').fill(later.toISOString().slice(0, 10));
  await dialog.getByLabel('Allow downloads').check();
  await page.screenshot({ path: 'test-results/share-dialog.png' });
  await dialog.getByRole('button', { name: 'Create link' }).click();

  const link = dialog.getByRole('textbox', { name: 'Link' });
  await expect(link).toHaveValue(/\/s\/[A-Za-z0-9_-]{22}$/);
  const url = await link.inputValue();
  const id = url.split('/s/')[1]!;
  await dialog.getByRole('button', { name: `Copy the link to ${ALBUM}` }).click();
  await expect(dialog.getByRole('status')).toHaveText(/Link copied|selected/);
  await page.screenshot({ path: 'test-results/share-dialog-link.png' });
  await dialog.getByRole('button', { name: 'Done' }).click();
  await expect(dialog).toBeHidden();

  // The page's HTML carries the share's Open Graph tags (for a chat app's preview card).
  const html = await request.get(`/s/${id}`);
  expect(html.status()).toBe(200);
  const text = await html.text();
  expect(text).toContain(`<meta property="og:title" content="${ALBUM}" />`);
  expect(text).toContain(`<meta property="og:url" content="${url}" />`);
  // (og:image too, once a track has a cover: right after the import, enrichment may not have run.)
  expect(text).toContain('og:description');

  // Opened by the signed-in owner: the page stands alone and sends no token.
  const sent: string[] = [];
  page.on('request', (r) => {
    if (r.url().includes('/api/v1/shared/') && (r.headers()['authorization'] || r.url().includes('token='))) sent.push(r.url());
  });
  await page.goto(`/s/${id}`);
  await expect(page.getByRole('heading', { level: 1, name: ALBUM })).toBeVisible();
  await expect(page.getByRole('navigation', { name: 'Main' })).toHaveCount(0);

  // A visitor with no account and nothing stored.
  const visitor = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const guest = await visitor.newPage();
  const guestProblems = watch(guest);
  guest.on('request', (r) => {
    if (r.headers()['authorization'] || r.url().includes('token=')) sent.push(r.url());
  });
  await guest.goto(url);
  await expect(guest.getByRole('heading', { level: 1, name: ALBUM })).toBeVisible();
  expect(new URL(guest.url()).pathname).toBe(`/s/${id}`);
  await expect(guest.getByText(`Shared by ${USER}`)).toBeVisible();
  // The description is text: the tag shows as written.
  await expect(guest.getByText('For the road <b>trip</b>')).toBeVisible();
  const tracks = guest.getByRole('list', { name: 'Tracks' });
  await expect(tracks.getByRole('listitem')).toHaveCount(4);
  await expect(tracks.getByRole('listitem').first()).toContainText('Mañana Dorada');
  await expect(guest.getByRole('link', { name: 'Download Mañana Dorada' })).toHaveAttribute('href', new RegExp(`/api/v1/shared/${id}/tracks/.+/download$`));
  await expect(guest.getByRole('link', { name: /^Download / })).toHaveCount(4);
  await guest.screenshot({ path: 'test-results/share-desktop.png' });

  await guest.getByRole('button', { name: 'Play Mañana Dorada' }).click();
  await expect.poll(() => audioTime(guest), { timeout: 20_000 }).toBeGreaterThan(0.5);
  const player = guest.getByRole('region', { name: 'Player' });
  await expect(player.getByRole('button', { name: 'Pause' })).toBeVisible();
  await expect(player).toContainText('Mañana Dorada');
  // The mock LRCLIB (.ci/web-e2e.sh) has synced lyrics for every track: a line is highlighted.
  const lyrics = guest.getByRole('list', { name: 'Lyrics' });
  await expect(lyrics.locator('li[aria-current="true"]')).toHaveCount(1);
  // Next goes to the second track.
  await player.getByRole('button', { name: 'Next' }).click();
  await expect(player).toContainText('Corazón en Fuga');
  await expect.poll(() => audioTime(guest), { timeout: 20_000 }).toBeGreaterThan(0.3);
  await guest.screenshot({ path: 'test-results/share-desktop-playing.png' });
  await player.getByRole('button', { name: 'Pause' }).click();
  await axe(guest, 'share page');

  // The phone layout: nothing scrolls sideways.
  const phoneContext = await browser.newContext({ viewport: { width: 375, height: 812 }, isMobile: true, hasTouch: true });
  const phone = await phoneContext.newPage();
  const phoneProblems = watch(phone);
  await phone.goto(url);
  await expect(phone.getByRole('heading', { level: 1, name: ALBUM })).toBeVisible();
  await phone.getByRole('button', { name: 'Play Ñandú Bailarín' }).click();
  await expect.poll(() => audioTime(phone), { timeout: 20_000 }).toBeGreaterThan(0.3);
  await phone.getByRole('region', { name: 'Player' }).getByRole('button', { name: 'Pause' }).click();
  expect(await phone.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBe(0);
  await phone.screenshot({ path: 'test-results/share-phone.png' });
  await phone.screenshot({ path: 'test-results/share-phone-full.png', fullPage: true });
  await axe(phone, 'share page (phone)');

  // An unknown link.
  await guest.goto('/s/AAAAAAAAAAAAAAAAAAAAAA');
  await expect(guest.getByRole('heading', { level: 1, name: 'No such share.' })).toBeVisible();

  // The owner's Shares page: the link with its visits and plays; then revoked.
  await page.goto('/shares');
  const item = page.getByRole('list', { name: 'Shares' }).getByRole('listitem').filter({ hasText: stamp });
  await expect(item.getByRole('heading', { name: ALBUM })).toBeVisible();
  await expect(item).toContainText(/[1-9]\d* visits?/);
  await expect(item).toContainText(/[1-9]\d* plays?/);
  await expect(item).toContainText('Downloads allowed');
  await page.screenshot({ path: 'test-results/shares-desktop.png' });
  // An admin may list every user's links (`all=true`): each then says whose it is.
  await page.getByRole('checkbox', { name: /Every user.s links/ }).check();
  await expect(item).toContainText(`by ${USER}`);
  await page.getByRole('checkbox', { name: /Every user.s links/ }).uncheck();
  await expect(item).not.toContainText(`by ${USER}`);

  // Edit: no downloads any more, and a new description.
  await item.getByRole('button', { name: `Edit the link to ${ALBUM}` }).click();
  const form = item.getByRole('form', { name: `Edit the link to ${ALBUM}` });
  await form.getByLabel('Description').fill(`Edited ${stamp}`);
  await form.getByLabel('Allow downloads').uncheck();
  await form.getByRole('button', { name: 'Save' }).click();
  await expect(item.getByText(`Edited ${stamp}`)).toBeVisible();
  await expect(item).not.toContainText('Downloads allowed');
  await guest.goto(url);
  await expect(guest.getByText(`Edited ${stamp}`)).toBeVisible();
  await expect(guest.getByRole('link', { name: /^Download / })).toHaveCount(0);

  await item.getByRole('button', { name: `Revoke the link to ${ALBUM}` }).click();
  await page.getByRole('alertdialog').getByRole('button', { name: 'Revoke' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'Link revoked' })).toBeVisible();
  await expect(item).toHaveCount(0);

  await guest.reload();
  await expect(guest.getByRole('heading', { level: 1, name: 'This share has expired or was revoked.' })).toBeVisible();
  await guest.screenshot({ path: 'test-results/share-revoked.png' });
  expect((await request.get(`/api/v1/shared/${id}`)).status()).toBe(410);

  expect(sent, 'requests of the share page that carried a token').toEqual([]);
  expect(guestProblems).toEqual([]);
  expect(phoneProblems).toEqual([]);
  await visitor.close();
  await phoneContext.close();
});

test('share a track from its row menu, and a playlist', async ({ signedIn: page, api }) => {
  await page.goto('/albums');
  await page.getByRole('link', { name: ALBUM }).first().click();
  const row = page.getByRole('listitem').filter({ hasText: 'Adiós, Verano' });
  await row.getByRole('button', { name: 'More actions for Adiós, Verano' }).click();
  await row.getByRole('button', { name: 'Share' }).click();
  const dialog = page.getByRole('dialog', { name: 'Share Adiós, Verano' });
  await dialog.getByRole('button', { name: 'Create link' }).click();
  await expect(dialog.getByRole('textbox', { name: 'Link' })).toHaveValue(/\/s\//);
  await dialog.getByRole('button', { name: 'Close' }).click();

  const tracks = await api.get<{ items: { id: string }[] }>(`/tracks?q=${encodeURIComponent('Mañana Dorada')}`);
  const made = await api.send('POST', '/playlists', { name: `Shared list ${Date.now()}`, track_ids: [tracks.items[0]!.id] });
  const playlist = (await made.json()) as { id: string; name: string };
  await page.goto(`/playlists/${playlist.id}`);
  await page.getByRole('button', { name: 'Share' }).click();
  const second = page.getByRole('dialog', { name: `Share ${playlist.name}` });
  await second.getByLabel('Link expires').selectOption('day');
  await second.getByRole('button', { name: 'Create link' }).click();
  await expect(second.getByRole('textbox', { name: 'Link' })).toHaveValue(/\/s\//);
  await second.getByRole('link', { name: 'All your links' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Shares' })).toBeVisible();
  await expect(page.getByRole('heading', { name: playlist.name })).toBeVisible();
  await expect(page.getByRole('heading', { name: 'Adiós, Verano' }).first()).toBeVisible();
  await api.send('DELETE', `/playlists/${playlist.id}`);
});
