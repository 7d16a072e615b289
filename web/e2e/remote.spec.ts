import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import { audioTime, expect, test, type Api } from './fixtures';

// Remote search in the search box, against a real remote source: the tested server's
// `subsonic` source is a second musiclib on loopback (e2e/friend-server.sh), whose audio comes
// through a slow link so a download shows progress and can be cancelled.

const ARTIST = 'The Far Friends';
const PLAY = 'Borrowed Birdsong';
const DOWNLOAD = 'Borrowed Summer';
const CANCEL = 'Borrowed Heart';

interface TrackRow {
  id: string;
  title: string;
  source: string;
  availability: string;
}

/** The tracks the friend's hits made in the tested library (deleted before and after). */
async function friendTracks(api: Api): Promise<TrackRow[]> {
  const page = await api.get<{ items: TrackRow[] }>(`/tracks?q=${encodeURIComponent('Borrowed')}&limit=50`);
  return page.items.filter((track) => track.source === 'subsonic');
}

async function forget(api: Api) {
  for (const track of await friendTracks(api)) await api.send('DELETE', `/tracks/${track.id}`);
}

async function search(page: Page, text: string) {
  await page.goto('/');
  await expect(page.getByRole('heading', { name: 'Home', level: 1 })).toBeVisible();
  await page.getByRole('searchbox', { name: 'Search' }).fill(text);
  await expect(page).toHaveURL(`/search?q=${encodeURIComponent(text)}`);
  await expect(page.getByRole('heading', { name: 'From other sources', level: 2 })).toBeVisible();
}

test('remote search: hits in their own section; save, play (fetched on demand), download with progress, cancel', async ({ signedIn: page, api }) => {
  test.setTimeout(180_000);
  const sources = await api.get<{ name: string; enabled: boolean; available: boolean | null }[]>('/sources');
  const subsonic = sources.find((source) => source.name === 'subsonic');
  test.skip(
    !subsonic?.enabled,
    'no remote source on the tested server: start web/e2e/friend-server.sh and give the server the SUBSONIC_SOURCE_* it prints',
  );
  expect(subsonic!.available, 'the friend’s server answers').toBe(true);
  await forget(api);
  try {
    await search(page, 'Borrowed');
    // The library has none of it; the other source has all three.
    await expect(page.getByText('No results for “Borrowed”.')).toBeVisible();
    const hits = page.getByRole('list', { name: 'Results from other sources' });
    await expect(hits.getByRole('listitem')).toHaveCount(3);
    await expect(hits.getByRole('listitem').first()).toContainText(ARTIST);
    await expect(hits.getByRole('listitem').first()).toContainText('Subsonic server');
    await page.screenshot({ path: 'test-results/desktop-remote-search.png' });
    const axe = await new AxeBuilder({ page }).analyze();
    expect(axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id)).toEqual([]);

    // Save: a placeholder in the library, no audio yet.
    const played = hits.getByRole('listitem').filter({ hasText: PLAY });
    await played.getByRole('button', { name: `Save ${PLAY} to the library` }).click();
    await expect(played.getByRole('status')).toHaveText('Saved to the library');
    await expect(played).toContainText('Saved, not downloaded');
    await expect(played.getByRole('button', { name: `Save ${PLAY} to the library` })).toHaveCount(0);
    const saved = (await friendTracks(api)).find((track) => track.title === PLAY)!;
    expect(saved.availability).toBe('placeholder');

    // Play: its audio is fetched on demand (a pending state meanwhile), then it plays.
    await played.getByRole('button', { name: `Play ${PLAY}` }).click();
    await expect(played.getByRole('status')).toHaveText(`Fetching ${PLAY} from its source…`);
    await expect(played).toHaveAttribute('aria-busy', 'true');
    const bar = page.getByRole('region', { name: 'Now playing' });
    await expect(bar.getByRole('link', { name: PLAY })).toBeVisible({ timeout: 60_000 });
    await expect.poll(() => audioTime(page), { timeout: 20_000 }).toBeGreaterThan(0.5);
    await expect(played).toContainText('In your library');
    await bar.getByRole('button', { name: 'Pause' }).click();

    // Download: progress as it comes, then done; the track is in the library with its audio.
    const downloaded = hits.getByRole('listitem').filter({ hasText: DOWNLOAD });
    await downloaded.getByRole('button', { name: `Download ${DOWNLOAD}` }).click();
    const progress = downloaded.getByRole('progressbar', { name: `Downloading ${DOWNLOAD}` });
    await expect(progress).toBeVisible();
    await expect.poll(() => progress.evaluate((bar: HTMLProgressElement) => bar.value), { timeout: 30_000 }).toBeGreaterThan(0);
    await page.screenshot({ path: 'test-results/desktop-remote-download.png' });
    await expect(downloaded.getByRole('status')).toHaveText('Downloaded', { timeout: 60_000 });
    await expect(progress).toHaveCount(0);
    await expect(downloaded).toContainText('In your library');
    await expect(downloaded.getByRole('button', { name: `Download ${DOWNLOAD}` })).toHaveCount(0);
    expect((await friendTracks(api)).find((track) => track.title === DOWNLOAD)?.availability).toBe('available');

    // Cancel a download while it runs.
    const cancelled = hits.getByRole('listitem').filter({ hasText: CANCEL });
    await cancelled.getByRole('button', { name: `Download ${CANCEL}` }).click();
    await expect(cancelled.getByRole('progressbar', { name: `Downloading ${CANCEL}` })).toBeVisible();
    await cancelled.getByRole('button', { name: `Cancel download of ${CANCEL}` }).click();
    await expect(cancelled.getByRole('status')).toHaveText('Download cancelled');
    const downloads = await api.get<{ items: { source_id: string; state: string; track_id: string }[] }>('/downloads?limit=5');
    const heart = (await friendTracks(api)).find((track) => track.title === CANCEL)!;
    expect(downloads.items.find((download) => download.track_id === heart.id)?.state).toBe('cancelled');
    expect(heart.availability).toBe('placeholder');

    // A new search shows what the library has now.
    await search(page, 'Far Friends');
    const again = page.getByRole('list', { name: 'Results from other sources' });
    await expect(again.getByRole('listitem').filter({ hasText: DOWNLOAD })).toContainText('In your library');
    await expect(again.getByRole('listitem').filter({ hasText: CANCEL })).toContainText('Saved, not downloaded');
    // The library's own section lists the saved tracks too.
    await expect(page.getByRole('list', { name: 'Tracks' }).getByText(DOWNLOAD)).toBeVisible();
  } finally {
    await forget(api);
  }
});

test('without a remote source the search box shows the library only', async ({ signedIn: page, api }) => {
  const sources = await api.get<{ name: string; enabled: boolean; searchable: boolean }[]>('/sources');
  test.skip(
    sources.some((source) => source.enabled && source.searchable),
    'a remote source is configured on the tested server: the remote test above covers the search box',
  );
  await page.goto('/');
  await page.getByRole('searchbox', { name: 'Search' }).fill('mañana');
  await expect(page.getByRole('list', { name: 'Tracks' }).getByText('Mañana Dorada')).toBeVisible();
  await expect(page.getByRole('heading', { name: 'From other sources' })).toHaveCount(0);
});
