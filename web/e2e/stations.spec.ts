import { audioTime, expect, test } from './fixtures';
import { Loopback, cornerMp3, live } from './loopback';

// Internet radio: an admin adds a station whose stream is served on loopback (the server relays
// it: it runs with ALLOW_PRIVATE_URLS=true), plays it live (no seek bar, Stop), edits it (a
// refused URL shown at its field) and deletes it.

const stamp = Date.now().toString(36);
const NAME = `Loopback FM ${stamp}`;
const RENAMED = `Loopback FM Jazz ${stamp}`;
let radio: Loopback;

test.beforeAll(async () => {
  radio = await Loopback.start({ '/live.mp3': live(cornerMp3()) });
});

test.afterAll(async () => {
  await radio?.stop();
});

test('add a station, play it live, edit it and delete it', async ({ signedIn: page }) => {
  await page.goto('/');
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Internet radio' }).click();
  await expect(page).toHaveURL(/\/stations$/);
  const main = page.getByRole('main');
  await expect(main.getByRole('heading', { name: 'Internet radio', level: 1 })).toBeVisible();

  // Add.
  await main.getByRole('button', { name: 'Add station' }).click();
  const form = main.getByRole('form', { name: 'Add station' });
  await expect(form.getByLabel('Name')).toBeFocused();
  await form.getByLabel('Name').fill(NAME);
  await form.getByLabel('Stream URL').fill(`${radio.base}/live.mp3`);
  await form.getByLabel('Home page URL (optional)').fill('https://example.com/fm');
  await form.getByRole('button', { name: 'Save' }).click();
  const stations = main.getByRole('list', { name: 'Internet radio' });
  const item = stations.getByRole('listitem', { name: NAME });
  await expect(item).toBeVisible();
  await expect(item.getByRole('link', { name: 'Home page' })).toHaveAttribute('href', 'https://example.com/fm');

  // Play: through the server's relay, live (no seek bar), and it advances.
  await item.getByRole('button', { name: `Play ${NAME}` }).click();
  const bar = page.getByRole('region', { name: 'Now playing' });
  await expect(bar.getByRole('link', { name: NAME })).toBeVisible();
  await expect(bar.getByText('Live')).toBeVisible();
  await expect(bar.getByRole('slider', { name: 'Seek' })).toHaveCount(0);
  await expect.poll(() => audioTime(page), { timeout: 20_000 }).toBeGreaterThan(1);
  expect(await page.evaluate(() => document.querySelector('audio')?.currentSrc ?? '')).toMatch(
    /\/api\/v1\/radio-stations\/[0-9a-f-]{36}\/stream\?token=/,
  );
  await page.mouse.move(0, 0);
  await page.screenshot({ path: 'test-results/desktop-stations-playing.png' });
  await page.setViewportSize({ width: 375, height: 812 });
  await page.screenshot({ path: 'test-results/phone-stations-playing.png' });
  await page.setViewportSize({ width: 1280, height: 800 });

  // Stop: the stream closes (no source left), Play starts it again.
  await bar.getByRole('button', { name: 'Stop' }).click();
  await expect(bar.getByRole('button', { name: 'Play' })).toBeVisible();
  await expect.poll(() => page.evaluate(() => document.querySelector('audio')?.getAttribute('src') ?? null)).toBeNull();

  // Edit: a refused URL is shown at its field; then a new name is saved.
  await item.getByRole('button', { name: `Edit ${NAME}` }).click();
  const edit = main.getByRole('form', { name: 'Edit station' });
  await edit.getByLabel('Stream URL').fill('ftp://example.com/live');
  await edit.getByRole('button', { name: 'Save' }).click();
  const streamField = edit.getByLabel('Stream URL');
  await expect(streamField).toHaveAttribute('aria-invalid', 'true');
  await expect(edit.locator('#station-stream_url-error')).toBeVisible();
  await page.screenshot({ path: 'test-results/desktop-stations-refused.png' });
  await streamField.fill(`${radio.base}/live.mp3`);
  await edit.getByLabel('Name').fill(RENAMED);
  await edit.getByRole('button', { name: 'Save' }).click();
  const renamed = stations.getByRole('listitem', { name: RENAMED });
  await expect(renamed).toBeVisible();
  await expect(stations.getByRole('listitem', { name: NAME, exact: true })).toHaveCount(0);

  // Delete (confirmed).
  await renamed.getByRole('button', { name: `Delete ${RENAMED}`, exact: true }).click();
  await page.getByRole('alertdialog', { name: `Delete ${RENAMED}?` }).getByRole('button', { name: 'Delete' }).click();
  await expect(renamed).toHaveCount(0);
});
