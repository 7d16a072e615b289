import { randomUUID } from 'node:crypto';
import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import { audioTime, expect, login, test, USER } from './fixtures';

// Radio with reasons, editing a track's details and identifying it, a playlist's cover, and
// the settings' scrobbling credentials and Subsonic app password.

const ALBUM = 'Canción de Mañana';
const SEED = 'Corazón en Fuga';

/** No serious or critical accessibility violation on the page as it is now. */
async function axe(page: Page, name: string) {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`);
  expect(bad, `axe on ${name}`).toEqual([]);
}

test('radio from a track: a queue whose items say why, and more fetched at its end', async ({ signedIn: page }) => {
  await page.goto('/albums');
  await page.getByRole('link', { name: ALBUM }).first().click();
  await page.getByRole('button', { name: `More actions for ${SEED}` }).click();
  const asked = page.waitForRequest((request) => new URL(request.url()).pathname === '/api/v1/radio');
  await page.getByRole('button', { name: 'Start radio' }).click();
  expect((await asked).postDataJSON()).toMatchObject({ exclude_ids: expect.arrayContaining([]), count: 20 });

  // The seed plays first; the radio's batch follows it, each item with its reasons.
  const bar = page.getByRole('region', { name: 'Now playing' });
  await expect(bar.getByRole('link', { name: SEED })).toBeVisible();
  await expect.poll(() => audioTime(page), { timeout: 20_000 }).toBeGreaterThan(0.2);
  await bar.getByRole('button', { name: 'Queue' }).click();
  const queue = page.getByRole('complementary', { name: 'Queue' });
  await expect(queue.getByRole('link', { name: `Radio from ${SEED}` })).toBeVisible();
  const entries = queue.getByRole('listitem');
  await expect.poll(() => entries.count()).toBeGreaterThan(5);
  const first = await entries.count();
  await expect(entries.first()).toContainText(SEED);
  await expect(entries.first()).not.toContainText('Because:');
  for (let i = 1; i < first; i++) await expect(entries.nth(i)).toContainText('Because: ');
  // The seed's own artist's other tracks come first, saying so.
  await expect(queue.getByText(/Also by Los Señores del Ritmo/).first()).toBeVisible();
  await axe(page, 'queue with a radio');

  // Near the end of the queue the next batch comes (POST /radio/next, excluding what was seen).
  const next = page.waitForRequest((request) => new URL(request.url()).pathname === '/api/v1/radio/next');
  await entries.nth(first - 2).getByRole('button').first().click();
  const body = (await next).postDataJSON() as { exclude_ids: string[]; seed_track_id: string };
  expect(body.exclude_ids.length).toBeGreaterThanOrEqual(first);
  await expect.poll(() => entries.count()).toBeGreaterThan(first);
  await expect(entries.last()).toContainText('Because: ');

  // Now playing says why the playing track came; /radio lists what comes and why.
  await page.goto('/now-playing');
  const why = page.getByRole('region', { name: 'Why this track' });
  await expect(why.getByRole('listitem').first()).toBeVisible();
  await axe(page, 'now playing with reasons');
  await page.goto('/radio');
  await expect(page.getByRole('heading', { name: 'Radio', level: 1 })).toBeVisible();
  await expect(page.getByText(`Radio from ${SEED}`)).toBeVisible();
  const upNext = page.getByRole('list', { name: 'Up next' });
  await expect(upNext.getByRole('list', { name: 'Why this track' }).first().getByRole('listitem').first()).toBeVisible();
  await axe(page, 'radio');
  await page.screenshot({ path: 'test-results/desktop-radio.png' });

  // The radio survives a reload; Stop radio ends it (the queue stays).
  await page.reload();
  await expect(page.getByText(`Radio from ${SEED}`)).toBeVisible();
  await page.getByRole('button', { name: 'Stop radio' }).click();
  await expect(page.getByText('No radio is playing.', { exact: false })).toBeVisible();
});

test('radio from the liked songs', async ({ signedIn: page, api }) => {
  const found = await api.get<{ items: { id: string; title: string }[] }>(`/tracks?q=${encodeURIComponent('Tidal Hum')}`);
  const liked = found.items[0]!;
  const state = await api.get<{ track_id: string; liked: boolean }[]>(`/likes/state?track_ids=${liked.id}`);
  const wasLiked = state[0]?.liked ?? false;
  const like = (on: boolean) =>
    api.send('POST', '/likes', { client_event_id: randomUUID(), track_id: liked.id, liked: on, event_time: new Date().toISOString() });
  if (!wasLiked) expect((await like(true)).ok()).toBe(true);
  try {
    // Something queued before: the radio replaces it.
    await page.goto('/albums');
    await page.getByRole('link', { name: ALBUM }).first().click();
    await page.getByRole('main').getByRole('button', { name: 'Play', exact: true }).click();
    await expect(page.getByRole('region', { name: 'Now playing' }).getByRole('button', { name: 'Pause' })).toBeVisible();
    await page.getByRole('link', { name: 'Liked songs' }).click();
    const asked = page.waitForRequest((request) => new URL(request.url()).pathname === '/api/v1/radio');
    await page.getByRole('button', { name: 'Start radio' }).click();
    // No seed: the server takes the likes.
    const body = (await asked).postDataJSON() as { exclude_ids: string[] };
    expect(body).not.toHaveProperty('seed_track_id');
    expect(body.exclude_ids).toEqual([]);
    const bar = page.getByRole('region', { name: 'Now playing' });
    await expect(bar.getByRole('button', { name: 'Pause' })).toBeVisible({ timeout: 20_000 });
    await bar.getByRole('button', { name: 'Queue' }).click();
    const queue = page.getByRole('complementary', { name: 'Queue' });
    await expect(queue.getByRole('link', { name: 'Radio from your likes' })).toBeVisible();
    await expect(queue.getByRole('listitem').first()).toContainText('Because: ');
    const count = await queue.getByRole('listitem').count();
    expect(count).toBeLessThanOrEqual(20);
    for (let i = 0; i < count; i++) await expect(queue.getByRole('listitem').nth(i)).toContainText('Because: ');
    await queue.getByRole('button', { name: 'Stop radio' }).click();
    await expect(queue.getByRole('link', { name: 'Radio from your likes' })).toHaveCount(0);
  } finally {
    if (!wasLiked) await like(false);
  }
});

test('edit a track’s details: the album page shows the new title; identify says what the lookup answered', async ({ signedIn: page, api }) => {
  const album = 'Łódź Sessions';
  const title = 'Pierogi o Północy';
  const edited = `Pierogi at Midnight ${Date.now() % 10000}`;
  const found = await api.get<{ items: { id: string; title: string; album: string | null }[] }>(`/tracks?q=${encodeURIComponent(title)}`);
  const track = found.items.find((item) => item.album === album)!;
  const before = await api.get<Record<string, unknown>>(`/tracks/${track.id}`);
  try {
    await page.goto('/albums');
    await page.getByRole('link', { name: album }).first().click();
    await page.getByRole('button', { name: `More actions for ${title}` }).click();
    await page.getByRole('button', { name: 'Edit details' }).click();
    await expect(page.getByRole('heading', { name: title, level: 1 })).toBeVisible();
    const form = page.getByRole('form', { name: 'Edit details' });
    await expect(form.getByRole('textbox', { name: 'Album', exact: true })).toHaveValue(album);
    await axe(page, 'track page');
    await page.screenshot({ path: 'test-results/desktop-track.png' });

    // A wrong value: the server's message is shown, nothing changes.
    await form.getByRole('textbox', { name: 'Year' }).fill('12345');
    await form.getByRole('button', { name: 'Save' }).click();
    await expect(form.getByRole('alert')).toContainText('year');
    await form.getByRole('button', { name: 'Cancel' }).click();

    await form.getByRole('textbox', { name: 'Title' }).fill(edited);
    await form.getByRole('button', { name: 'Save' }).click();
    await expect(page.getByRole('status').filter({ hasText: 'Details saved' })).toBeVisible();
    await expect(page.getByRole('heading', { name: edited, level: 1 })).toBeVisible();
    const after = await api.get<{ title: string; metadata_status: string; album_id: string }>(`/tracks/${track.id}`);
    expect(after).toMatchObject({ title: edited, metadata_status: 'manual', album_id: before.album_id });

    await page.getByRole('link', { name: album }).click();
    const list = page.getByRole('list', { name: album });
    await expect(list.getByText(edited, { exact: true })).toBeVisible();
    await expect(list.getByText(title, { exact: true })).toHaveCount(0);

    // Identify: what the server answers for this track's fingerprint, shown as it is.
    const answer = await page.request.get(`/api/v1/tracks/${track.id}/metadata/candidates`, {
      headers: { authorization: `Bearer ${(await login(page.request)).access_token}` },
    });
    await page.getByRole('button', { name: `More actions for ${edited}` }).click();
    await page.getByRole('button', { name: 'Edit details' }).click();
    const identify = page.getByRole('region', { name: 'Identify' });
    await identify.getByRole('button', { name: 'Identify' }).click();
    const status = identify.getByRole('status');
    if (answer.status() === 200) {
      const candidates = (await answer.json()) as { title: string | null }[];
      if (candidates.length === 0) await expect(status).toHaveText('No match was found for this recording’s fingerprint.');
      else await expect(identify.getByRole('list', { name: 'Matches' }).getByRole('listitem')).toHaveCount(candidates.length);
    } else {
      // The e2e server has no AcoustID key: 503 `unavailable`, its message shown.
      const body = (await answer.json()) as { error: { message: string } };
      expect(answer.status()).toBe(503);
      await expect(status).toHaveText(body.error.message);
    }

    // Back to the title it had, from the form.
    const form2 = page.getByRole('form', { name: 'Edit details' });
    await form2.getByRole('textbox', { name: 'Title' }).fill(title);
    await form2.getByRole('button', { name: 'Save' }).click();
    await expect(page.getByRole('heading', { name: title, level: 1 })).toBeVisible();
  } finally {
    const now = await api.get<{ title: string }>(`/tracks/${track.id}`);
    if (now.title !== title) {
      const restore = Object.fromEntries(
        ['artist', 'album', 'album_artist', 'genre', 'year', 'track_number', 'disc_number', 'musicbrainz_recording_id'].map((k) => [k, before[k] ?? null]),
      );
      await api.send('PUT', `/tracks/${track.id}/metadata`, { title, ...restore });
    }
  }
});

// A 16×16 PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAABlklEQVR42g3LQQEAIQgAQSMQwQhEIIIRjEAEIhjBCETguU8jGMEId/Of1hrS6A1tWGM0ZsMb0ViN3chGNU7jNl6jNUGELqhgwhCm4EIIS9hCCiUc4QpP/tCRTu9oxzqjMzveic7q7E52qnM6t/P6HxRRuqKKKUOZiiuhLGUrqZRylKs8/YMhRjfUMGMY03AjjGVsI40yjnGNZ38YyKAPdGCDMZgDH8RgDfYgBzU4gzt44w8TmfSJTmwyJnPik5isyZ7kpCZncidv/sERpzvqmDOc6bgTznK2k045x7nO8z8EEvRAAwtGMAMPIljBDjKo4AQ3ePGHhSz6Qhe2GIu58EUs1mIvclGLs7iLt/6wkU3f6MY2YzM3vonN2uxNbmpzNnfz9h8SSXqiiSUjmYknkaxkJ5lUcpKbvPxDIUUvtLBiFLPwIopV7CKLKk5xi1d/OMihH/Rgh3GYBz/EYR32IQ91OId7eOcPF7n0i17sMi7z4pe4rMu+5KUu53Iv7/7hIY/+0Ic9xmM+/BGP9diPfNTjPO7jPT6GdLgQ8hjYogAAAABJRU5ErkJggg==',
  'base64',
);

test('a playlist cover: an image is shown, anything else refused with the server’s reason', async ({ signedIn: page, api }) => {
  const name = `Cover check ${Date.now()}`;
  const created = await api.send('POST', '/playlists', { name, track_ids: [] });
  const playlist = (await created.json()) as { id: string };
  try {
    await page.goto(`/playlists/${playlist.id}`);
    await expect(page.getByRole('heading', { name, level: 1 })).toBeVisible();
    await expect(page.getByRole('img', { name: `Cover of ${name}` })).toHaveCount(0);

    // Not an image: the server's 422 message.
    await page.getByLabel('Change cover').setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('not a picture') });
    await expect(page.getByRole('alert')).not.toBeEmpty();
    const refused = (await page.getByRole('alert').textContent())!;
    expect(refused).not.toBe('Something went wrong.');
    await expect(page.getByRole('img', { name: `Cover of ${name}` })).toHaveCount(0);

    await page.getByLabel('Change cover').setInputFiles({ name: 'cover.png', mimeType: 'image/png', buffer: PNG });
    const cover = page.getByRole('img', { name: `Cover of ${name}` });
    await expect(cover).toBeVisible();
    await expect.poll(() => cover.evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(16);
    await expect(page.getByRole('alert')).toHaveCount(0);
    expect((await api.get<{ has_cover: boolean }>(`/playlists/${playlist.id}`)).has_cover).toBe(true);

    // Shown again on a fresh visit.
    await page.reload();
    await expect(page.getByRole('img', { name: `Cover of ${name}` })).toBeVisible();
    await axe(page, 'playlist with a cover');
  } finally {
    await api.send('DELETE', `/playlists/${playlist.id}`);
  }
});

test('scrobbling credentials: saved shows connected, the secret never comes back; disconnect', async ({ signedIn: page, api }) => {
  const secret = `lb-e2e-${Date.now()}`;
  await api.send('PUT', '/settings/scrobbling', { listenbrainz: null });
  await page.goto('/settings');
  const card = page.getByRole('region', { name: 'Scrobbling' });
  const listenbrainz = card.getByRole('group', { name: 'ListenBrainz' });
  await expect(listenbrainz.getByText('Not connected')).toBeVisible();
  await listenbrainz.getByLabel('ListenBrainz user token').fill(secret);
  await listenbrainz.getByRole('button', { name: 'Connect ListenBrainz' }).click();
  await expect(listenbrainz.getByText('Connected', { exact: true })).toBeVisible();
  await expect(listenbrainz.getByLabel('ListenBrainz user token')).toHaveCount(0);
  expect(await page.content()).not.toContain(secret);
  const status = await api.get<{ listenbrainz: { configured: boolean } }>('/settings/scrobbling');
  expect(status.listenbrainz.configured).toBe(true);
  expect(JSON.stringify(status)).not.toContain(secret);

  await page.reload();
  await expect(listenbrainz.getByText('Connected', { exact: true })).toBeVisible();
  expect(await page.content()).not.toContain(secret);
  await axe(page, 'settings');
  await page.screenshot({ path: 'test-results/desktop-settings-features.png', fullPage: true });

  await listenbrainz.getByRole('button', { name: 'Disconnect ListenBrainz' }).click();
  await expect(listenbrainz.getByText('Not connected')).toBeVisible();
  expect((await api.get<{ listenbrainz: { configured: boolean } }>('/settings/scrobbling')).listenbrainz.configured).toBe(false);
});

test('the Subsonic app password: hidden, revealed, rotated (the old one stops working)', async ({ signedIn: page, api, baseURL }) => {
  const ping = async (password: string) => {
    const url = `/rest/ping?u=${encodeURIComponent(USER)}&p=${encodeURIComponent(password)}&v=1.16.1&c=e2e&f=json`;
    const answer = (await (await page.request.get(url)).json()) as { 'subsonic-response': { status: string } };
    return answer['subsonic-response'].status;
  };
  const before = (await api.get<{ password: string }>('/users/me/legacy-password')).password;
  await page.goto('/settings');
  const card = page.getByRole('region', { name: 'Subsonic apps' });
  await expect(card).toContainText(new URL(baseURL!).origin);
  await expect(card).toContainText(USER);
  await expect(card).toContainText('Hidden');
  await expect(card).not.toContainText(before);

  await card.getByRole('button', { name: 'Reveal' }).click();
  await expect(card).toContainText(before);
  expect(await ping(before)).toBe('ok');
  await card.getByRole('button', { name: 'Hide' }).click();
  await expect(card).not.toContainText(before);

  // Rotate asks first; Cancel keeps it.
  await card.getByRole('button', { name: 'Rotate' }).click();
  await card.getByRole('alertdialog').getByRole('button', { name: 'Cancel' }).click();
  expect((await api.get<{ password: string }>('/users/me/legacy-password')).password).toBe(before);
  await card.getByRole('button', { name: 'Rotate' }).click();
  await card.getByRole('alertdialog').getByRole('button', { name: 'Rotate' }).click();
  await expect(page.getByRole('status').filter({ hasText: 'App password rotated' })).toBeVisible();
  const after = (await api.get<{ password: string }>('/users/me/legacy-password')).password;
  expect(after).not.toBe(before);
  await expect(card).toContainText(after);
  expect(await ping(before)).toBe('failed');
  expect(await ping(after)).toBe('ok');
});

test('identify: a candidate is applied to the track (the lookup’s answer stubbed: the e2e server has no AcoustID key)', async ({ signedIn: page, api }) => {
  const title = 'Epilog';
  const found = await api.get<{ items: { id: string; title: string; album: string | null }[] }>(`/tracks?q=${encodeURIComponent(title)}`);
  const track = found.items.find((item) => item.album === 'Łódź Sessions')!;
  const before = await api.get<Record<string, unknown>>(`/tracks/${track.id}`);
  const candidate = {
    score: 0.93,
    acoustid_id: '5d2a1ae2-1c3b-4bd6-8bd1-6d1c2a0f1e11',
    recording_id: 'b1a9c0e4-8d5e-4e8a-9c65-0f7e3b0e4a21',
    title: 'Epilogue (Live)',
    artist: 'Mira Kowalczyk',
    album: 'Łódź Sessions',
    album_artist: 'Mira Kowalczyk',
    releasegroup_id: null,
    year: 2018,
  };
  await page.route(`**/api/v1/tracks/${track.id}/metadata/candidates`, (route) =>
    route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify([candidate]) }),
  );
  try {
    await page.goto(`/tracks/${track.id}`);
    const identify = page.getByRole('region', { name: 'Identify' });
    await identify.getByRole('button', { name: 'Identify' }).click();
    const matches = identify.getByRole('list', { name: 'Matches' });
    await expect(matches.getByRole('listitem')).toHaveCount(1);
    await expect(matches).toContainText('93% match');
    await matches.getByRole('button', { name: `Apply ${candidate.title}` }).click();
    await expect(page.getByRole('heading', { name: candidate.title, level: 1 })).toBeVisible();
    await expect(page.getByRole('status').filter({ hasText: 'Match applied' })).toBeVisible();
    // The candidate's identity, the track's other fields kept.
    const after = await api.get<Record<string, unknown>>(`/tracks/${track.id}`);
    expect(after).toMatchObject({
      title: candidate.title,
      musicbrainz_recording_id: candidate.recording_id,
      metadata_status: 'manual',
      track_number: before.track_number,
      genre: before.genre,
      album_id: before.album_id,
    });
  } finally {
    const restore = Object.fromEntries(
      ['artist', 'album', 'album_artist', 'genre', 'year', 'track_number', 'disc_number', 'musicbrainz_recording_id'].map((k) => [k, before[k] ?? null]),
    );
    await api.send('PUT', `/tracks/${track.id}/metadata`, { title, ...restore });
  }
});
