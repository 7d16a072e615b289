// ReplayGain in the web player: the mode in the settings (a radio group found by its name),
// and the audio element turned down by the track's gain (or its album's), never past the peak.
// The corpus files carry no ReplayGain tags: the server measures them in the background
// (analyze_loudness, queued by the sweep once the import and its enrichment are done).
import { expect, test } from './fixtures';

const ALBUM = 'Canción de Mañana';
const FIRST = 'Mañana Dorada';

interface Gain {
  track_gain: number | null;
  track_peak: number | null;
  album_gain: number | null;
  album_peak: number | null;
}

/** What the player scales a track by: 10^(gain/20), at most 1/peak, at most 1. */
function factor(gain: number | null, peak: number | null): number {
  if (gain === null) return 1;
  return Math.min(1, 10 ** (gain / 20), peak ? 1 / peak : 1);
}

test('ReplayGain: the mode is a setting, and the player applies the track or album gain', async ({ signedIn: page, api }) => {
  test.setTimeout(240_000);
  const find = async () => {
    const found = await api.get<{ items: { title: string; album: string; replay_gain: Gain }[] }>(
      `/tracks?q=${encodeURIComponent(FIRST)}`,
    );
    return found.items.find((track) => track.title === FIRST && track.album === ALBUM)!;
  };
  await expect
    .poll(async () => (await find()).replay_gain.album_gain, { timeout: 200_000, intervals: [2_000] })
    .not.toBeNull();
  const { replay_gain: gain } = await find();
  const volume = () => page.evaluate(() => document.querySelector('audio')!.volume);
  try {
    await page.goto('/settings');
    const modes = page.getByRole('group', { name: 'ReplayGain' });
    await modes.getByRole('radio', { name: /^Track/ }).check();
    await expect.poll(async () => (await api.get<{ replay_gain: string }>('/settings')).replay_gain).toBe('track');

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Albums' }).click();
    await page.getByRole('link', { name: ALBUM }).first().click();
    await page.getByRole('button', { name: `Play ${FIRST}` }).first().click();
    const bar = page.getByRole('region', { name: 'Now playing' });
    await expect(bar.getByRole('link', { name: FIRST })).toBeVisible();
    await expect.poll(volume).toBeCloseTo(factor(gain.track_gain, gain.track_peak), 4);
    expect(factor(gain.track_gain, gain.track_peak)).toBeLessThan(1);

    // Album mode, chosen while it plays: the album's gain at once; off: full volume.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings' }).click();
    await modes.getByRole('radio', { name: /^Album/ }).check();
    await expect.poll(volume).toBeCloseTo(factor(gain.album_gain, gain.album_peak), 4);
    await modes.getByRole('radio', { name: 'Off' }).check();
    await expect.poll(volume).toBe(1);
    await expect(bar.getByRole('link', { name: FIRST })).toBeVisible();
  } finally {
    await api.send('PATCH', '/settings', { replay_gain: 'off' });
  }
});
