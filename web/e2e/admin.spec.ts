import type { Browser, Page } from '@playwright/test';
import { expect, login, screenshot, test, USER, wav, type Api } from './fixtures';

// The admin area, as the admin of the scratch server. Every test leaves the library as it
// found it for the other spec files: the users and the track it makes are deleted, and the
// duplicate copies it deletes come back with a rescan of the corpus.

interface Job {
  id: string;
  kind: string;
  state: string;
}
interface TrackOut {
  id: string;
  title: string;
  artist: string | null;
  album: string | null;
  source_id: string;
  metadata_status: string;
}


/** Scans the corpus folder through the API and waits for the job to end. */
async function rescan(api: Api): Promise<Job> {
  const started = await api.send('POST', '/sources/local_folder/scan');
  expect(started.status(), await started.text()).toBe(202);
  const { job_id } = (await started.json()) as { job_id: string };
  let job: Job = { id: job_id, kind: '', state: 'queued' };
  await expect
    .poll(async () => (job = await api.get<Job>(`/jobs/${job_id}`)).state, { timeout: 120_000 })
    .toMatch(/succeeded|failed/);
  return job;
}

/** A second browser context (another person), signed in through the sign-in page. */
async function signInElsewhere(browser: Browser, baseURL: string, username: string, password: string) {
  const context = await browser.newContext({ baseURL, viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.goto('/login');
  await page.getByLabel('User name').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  return { context, page };
}

async function signInAgain(page: Page, username: string, password: string) {
  await page.getByLabel('User name').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

async function deleteUserNamed(api: Api, username: string) {
  const users = await api.get<{ items: { id: string; username: string }[] }>('/admin/users?limit=200');
  for (const user of users.items.filter((u) => u.username === username)) await api.send('DELETE', `/admin/users/${user.id}`);
}

test('users: create, a listener sees no admin area, disable, enable, new app password, delete', async ({ signedIn: page, api, browser }, info) => {
  const name = `e2e-listener-${Date.now()}`;
  const password = 'listener-password-1';
  const baseURL = String(info.project.use.baseURL);
  try {
    await page.goto('/');
    await expect(page.getByRole('heading', { name: 'Home', level: 1 })).toBeVisible();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Admin' }).click();
    await expect(page.getByRole('heading', { name: 'Users', level: 1 })).toBeVisible();
    const sections = page.getByRole('navigation', { name: 'Admin sections' });
    await expect(sections.getByRole('link', { name: 'Users' })).toHaveAttribute('aria-current', 'page');

    // The server's refusal is shown as it words it: the admin's own name is taken.
    const form = page.getByRole('form', { name: 'New user' });
    await form.getByLabel('User name').fill(USER);
    await form.getByLabel('Password').fill('some-password-1');
    await form.getByRole('button', { name: 'Create user' }).click();
    await expect(form.getByRole('alert')).toContainText('is taken');

    await form.getByLabel('User name').fill(name);
    await form.getByLabel('Password').fill(password);
    await form.getByRole('button', { name: 'Create user' }).click();
    const users = page.getByRole('list', { name: 'Users' });
    const row = users.getByRole('listitem').filter({ hasText: name });
    await expect(row).toBeVisible();
    await expect(page.getByRole('alert')).toHaveCount(0);
    await screenshot(page, 'admin-users');

    // The new listener: no admin entry, and /admin says it is for admins only.
    const other = await signInElsewhere(browser, baseURL, name, password);
    await expect(other.page.getByRole('heading', { name: 'Home', level: 1 })).toBeVisible();
    await expect(other.page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings' })).toBeVisible();
    await expect(other.page.getByRole('link', { name: 'Admin' })).toHaveCount(0);
    await other.page.goto('/admin/users');
    await expect(other.page.getByRole('heading', { name: 'Admins only', level: 1 })).toBeVisible();
    await expect(other.page.getByRole('list', { name: 'Users' })).toHaveCount(0);
    // And the server refuses its calls anyway.
    const token = await other.page.evaluate(() => JSON.parse(localStorage.getItem('musiclib.auth') ?? '{}').token as string);
    const refused = await other.page.request.get('/api/v1/admin/users', { headers: { authorization: `Bearer ${token}` } });
    expect(refused.status()).toBe(403);

    // Disabled: signed out everywhere, and signing in is refused.
    await row.getByRole('button', { name: `Disable ${name}` }).click();
    await expect(row).toContainText('Disabled');
    await other.page.goto('/');
    await expect(other.page.getByRole('heading', { name: 'Sign in' })).toBeVisible();
    await signInAgain(other.page, name, password);
    await expect(other.page.getByRole('alert')).toContainText('This account is disabled');
    await expect(other.page.getByRole('heading', { name: 'Sign in' })).toBeVisible();

    // Enabled again: signing in works.
    await row.getByRole('button', { name: `Enable ${name}` }).click();
    await expect(row).not.toContainText('Disabled');
    await signInAgain(other.page, name, password);
    await expect(other.page.getByRole('heading', { name: 'Home', level: 1 })).toBeVisible();
    await other.context.close();

    // A new Subsonic app password, handed over once.
    await row.getByRole('button', { name: `New app password for ${name}` }).click();
    const rotate = page.getByRole('alertdialog', { name: `New app password for ${name}` });
    await rotate.getByRole('button', { name: 'Rotate' }).click();
    await expect(rotate).toBeHidden();
    const handed = page.getByRole('status').filter({ hasText: `The new Subsonic app password of ${name}` });
    const appPassword = (await handed.locator('code').textContent())?.trim() ?? '';
    expect(appPassword.length).toBeGreaterThan(8);
    const ping = await page.request.get(`/rest/ping.view?u=${encodeURIComponent(name)}&p=${encodeURIComponent(appPassword)}&v=1.16.1&c=e2e&f=json`);
    expect((await ping.json())['subsonic-response'].status).toBe('ok');

    // Deleted, after a confirm (Cancel first leaves it alone).
    await row.getByRole('button', { name: `Delete ${name}` }).click();
    const confirm = page.getByRole('alertdialog', { name: `Delete ${name}` });
    await expect(confirm).toContainText('tracks it uploaded stay');
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await expect(confirm).toBeHidden();
    await expect(row).toBeVisible();
    await row.getByRole('button', { name: `Delete ${name}` }).click();
    await confirm.getByRole('button', { name: 'Delete' }).click();
    await expect(row).toHaveCount(0);
    expect((await api.get<{ items: { username: string }[] }>('/admin/users?limit=200')).items.map((u) => u.username)).not.toContain(name);
  } finally {
    await deleteUserNamed(api, name);
  }
});

test('library scan shows live progress to its end; the jobs table lists it', async ({ signedIn: page }) => {
  await page.goto('/admin/library');
  await expect(page.getByRole('heading', { name: 'Library scan', level: 1 })).toBeVisible();
  const folder = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: 'Local folder' }) });
  const started = page.waitForResponse((r) => r.url().endsWith('/api/v1/sources/local_folder/scan') && r.request().method() === 'POST');
  await folder.getByRole('button', { name: 'Scan Local folder' }).click();
  const { job_id } = (await (await started).json()) as { job_id: string };
  const bar = folder.getByRole('progressbar', { name: 'Scan of Local folder' });
  await expect(bar).toBeVisible();
  await expect(bar).toHaveAttribute('value', '1', { timeout: 120_000 });
  await expect(folder.getByRole('status')).toContainText(/Finished · \d+ seen · \d+ imported · \d+ skipped · \d+ failed/);
  await expect(folder.getByText(/Scan finished: \d+ new, \d+ already in the library, \d+ could not be read\./)).toBeVisible();
  await screenshot(page, 'admin-library');

  await page.getByRole('navigation', { name: 'Admin sections' }).getByRole('link', { name: 'Jobs' }).click();
  await expect(page.getByRole('heading', { name: 'Jobs', level: 1 })).toBeVisible();
  await page.getByLabel('Kind').selectOption('scan_local_folder');
  const table = page.getByRole('table', { name: 'Jobs' });
  const scan = table.getByRole('row').filter({ hasText: job_id });
  await expect(scan).toContainText('Finished');
  await expect(scan).toContainText(/\d+ seen/);
  await page.getByLabel('State').selectOption('failed');
  await expect(table.getByRole('row').filter({ hasText: job_id })).toHaveCount(0);
  await page.getByLabel('State').selectOption('succeeded');
  await expect(scan).toBeVisible();
  await screenshot(page, 'admin-jobs');
});

test('storage: statistics as charts with their numbers; cleanup dry run, then for real', async ({ signedIn: page, api }) => {
  const stats = await api.get<{ track_count: number; by_format: { key: string; track_count: number }[] }>('/storage');
  await page.goto('/admin/storage');
  await expect(page.getByRole('heading', { name: 'Storage', level: 1 })).toBeVisible();
  await expect(page.getByRole('definition').first()).toHaveText(stats.track_count.toLocaleString('en-US'));
  const formats = page.getByRole('figure', { name: 'Formats' });
  const top = stats.by_format[0]!;
  await expect(formats.getByRole('row', { name: new RegExp(`^${top.key}\\b`) })).toContainText(`${top.track_count} track`);
  await expect(page.getByRole('img', { name: /^Storage used: Original audio \d/ })).toBeVisible();
  await expect(page.getByRole('figure', { name: 'Metadata status' }).getByRole('row').filter({ hasText: /\d+ tracks?$/ })).not.toHaveCount(0);
  await screenshot(page, 'admin-storage');

  await page.getByRole('button', { name: 'Dry run' }).click();
  await expect(page.getByRole('progressbar', { name: 'Cleanup dry run' })).toHaveAttribute('value', '1', { timeout: 60_000 });
  await expect(page.getByRole('heading', { name: 'The dry run found' })).toBeVisible();
  await expect(page.getByText(/unreferenced files? \(.+\) would be deleted/)).toBeVisible();
  await page.getByRole('button', { name: 'Run cleanup' }).click();
  const confirm = page.getByRole('alertdialog', { name: 'Run the cleanup?' });
  await confirm.getByRole('button', { name: 'Run cleanup' }).click();
  await expect(page.getByRole('progressbar', { name: 'Cleanup' })).toHaveAttribute('value', '1', { timeout: 60_000 });
  await expect(page.getByRole('heading', { name: 'The cleanup did' })).toBeVisible();
  await expect(page.getByText(/unreferenced files? deleted/)).toBeVisible();
  // Nothing the corpus needs went: every track is still there.
  expect((await api.get<{ track_count: number }>('/storage')).track_count).toBe(stats.track_count);
});

test('missing metadata: a track without artist and album is fixed inline', async ({ signedIn: page, api, request }) => {
  const { access_token } = await login(request);
  const name = `e2e-untagged-${Date.now()}`;
  const uploaded = await request.post('/api/v1/tracks/upload', {
    headers: { authorization: `Bearer ${access_token}` },
    multipart: { file: { name: `${name}.wav`, mimeType: 'audio/wav', buffer: wav() } },
  });
  expect(uploaded.status(), await uploaded.text()).toBe(201);
  const track = (await uploaded.json()) as TrackOut;
  try {
    await page.goto('/admin/metadata');
    await expect(page.getByRole('heading', { name: 'Missing metadata', level: 1 })).toBeVisible();
    const list = page.getByRole('list', { name: 'Missing metadata' });
    const item = list.getByRole('listitem').filter({ hasText: track.title });
    // Oldest first: load further pages until the new track shows.
    const more = page.getByRole('button', { name: 'Load more' });
    await expect(list).toBeVisible();
    while (!(await item.isVisible()) && (await more.isVisible())) await more.click();
    await expect(item).toContainText('Artist');
    await expect(item).toContainText('Album');
    const form = page.getByRole('form', { name: `Fix metadata of ${track.title}` });
    await form.getByLabel('Artist').fill('E2E Fixed Artist');
    await form.getByLabel('Album').fill('E2E Fixed Album');
    await screenshot(page, 'admin-metadata');
    await form.getByRole('button', { name: 'Save' }).click();
    await expect(page.getByRole('status').filter({ hasText: `Saved ${track.title}` })).toBeVisible();
    await expect(item).toHaveCount(0);
    const fixed = await api.get<TrackOut>(`/tracks/${track.id}`);
    expect([fixed.title, fixed.artist, fixed.album, fixed.metadata_status]).toEqual([track.title, 'E2E Fixed Artist', 'E2E Fixed Album', 'manual']);
  } finally {
    await api.send('DELETE', `/tracks/${track.id}`);
  }
});

test('duplicates: listen to each copy, keep one and the others go', async ({ signedIn: page, api }) => {
  // Keep the copy in the corpus's own album folder; Backup/, Compilations/ and Incoming/ hold
  // the extra copies.
  const extra = /^(Backup|Compilations|Incoming)\//;
  const groups = await api.get<{ total: number; items: { keeper_id: string; tracks: TrackOut[] }[] }>('/storage/duplicates?limit=200');
  expect(groups.total, 'the corpus has duplicates').toBeGreaterThan(0);
  const group = groups.items.find((g) => g.tracks.some((t) => !extra.test(t.source_id))) ?? groups.items[0]!;
  const keepIndex = Math.max(0, group.tracks.findIndex((t) => !extra.test(t.source_id)));
  const keep = group.tracks[keepIndex]!;
  const title = group.tracks[0]!.title;
  try {
    await page.goto('/admin/duplicates');
    await expect(page.getByRole('heading', { name: 'Duplicates', level: 1 })).toBeVisible();
    const copies = page.getByRole('list', { name: `Copies of ${title}` }).first();
    await expect(copies.getByRole('listitem')).toHaveCount(group.tracks.length);

    // Listening: the page's own player plays the copy (the queue is left alone).
    const n = keepIndex + 1;
    const listen = copies.getByRole('button', { name: `Listen to copy ${n} of ${title}` });
    await listen.click();
    const pause = copies.getByRole('button', { name: `Pause copy ${n} of ${title}` });
    await expect(pause).toHaveAttribute('aria-pressed', 'true');
    // Still playing a moment later (a copy that fails to play turns back to Listen), and the
    // player bar's queue is untouched.
    await page.waitForTimeout(1000);
    await expect(pause).toHaveAttribute('aria-pressed', 'true');
    await expect(page.getByText('Nothing playing')).toBeVisible();
    await pause.click();
    await expect(listen).toHaveAttribute('aria-pressed', 'false');
    await screenshot(page, 'admin-duplicates');

    await copies.getByRole('button', { name: `Keep copy ${keepIndex + 1} of ${title}` }).click();
    const confirm = page.getByRole('alertdialog', { name: `Keep copy ${keepIndex + 1} of ${title}?` });
    const others = group.tracks.length - 1;
    await confirm.getByRole('button', { name: `Delete ${others} ${others === 1 ? 'copy' : 'copies'}` }).click();
    await expect(page.getByRole('status').filter({ hasText: `${others} ${others === 1 ? 'copy' : 'copies'} deleted` })).toBeVisible();
    await expect(page.getByRole('list', { name: `Copies of ${title}` })).toHaveCount(
      groups.items.filter((g) => g.tracks[0]!.title === title).length - 1,
    );
    // The kept copy stays; the others are gone.
    expect((await api.get<TrackOut>(`/tracks/${keep.id}`)).id).toBe(keep.id);
    for (const track of group.tracks.filter((t) => t.id !== keep.id)) {
      expect((await api.send('DELETE', `/tracks/${track.id}`)).status()).toBe(404);
    }
  } finally {
    // The deleted copies come back from the corpus folder, for the other spec files.
    expect((await rescan(api)).state).toBe('succeeded');
  }
});

test('services and the effective settings are listed', async ({ signedIn: page, api }) => {
  const services = await api.get<{ name: string; state: string }[]>('/admin/services');
  await page.goto('/admin/services');
  await expect(page.getByRole('heading', { name: 'Services', level: 1 })).toBeVisible();
  const list = page.getByRole('list', { name: 'Services' });
  await expect(list.getByRole('listitem')).toHaveCount(services.length);
  await expect(list.getByRole('listitem').filter({ hasText: 'Database' })).toContainText('Working');
  const settings = page.getByRole('heading', { name: 'Server settings' });
  await expect(settings).toBeVisible();
  await expect(page.getByRole('term').filter({ hasText: 'DATA_DIR' })).toBeVisible();
  await screenshot(page, 'admin-services');
});

test('every admin section passes axe, and a broken-file check runs', async ({ signedIn: page }) => {
  for (const section of ['users', 'library', 'jobs', 'storage', 'duplicates', 'broken', 'metadata', 'services']) {
    await page.goto(`/admin/${section}`);
    await expect(page.getByRole('heading', { level: 1 })).toBeVisible();
    await expect(page.getByText('Loading…')).toHaveCount(0);
    await axe(page, section);
  }
  await page.goto('/admin/broken');
  await page.getByRole('button', { name: 'Check all files' }).click();
  await expect(page.getByRole('progressbar', { name: 'File check' })).toHaveAttribute('value', '1', { timeout: 120_000 });
  await expect(page.getByText(/Check finished: \d+ files checked, \d+ broken\./)).toBeVisible();
});

async function axe(page: Page, name: string) {
  const { default: AxeBuilder } = await import('@axe-core/playwright');
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`);
  expect(bad, `axe on admin ${name}`).toEqual([]);
}

