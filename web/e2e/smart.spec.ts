import AxeBuilder from '@axe-core/playwright';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import { expect, test, type Api } from './fixtures';

// Smart playlists: rules made in the editor with the live count following each change, saved
// and opened; the same rules imported from a Navidrome .nsp file give the same tracks; a file
// naming a field musiclib lacks is refused with the server's word, tied to its row.

async function matching(api: Api, rules: unknown): Promise<{ track_count: number; track_ids: string[] }> {
  const answer = await api.send('POST', '/playlists/rules/preview', { rules });
  expect(answer.status(), await answer.text()).toBe(200);
  return (await answer.json()) as { track_count: number; track_ids: string[] };
}

const count = (page: Page) => page.getByRole('status').filter({ hasText: /match|Counting…|Fix the marked rule/ });

const folders: string[] = [];
test.afterAll(() => folders.forEach((folder) => rmSync(folder, { recursive: true, force: true })));

function nspFile(name: string, content: unknown): string {
  const folder = mkdtempSync(join(tmpdir(), 'musiclib-nsp-'));
  folders.push(folder);
  const path = join(folder, name);
  writeFileSync(path, JSON.stringify(content, null, 2));
  return path;
}

test('smart playlist: rules with a live count, saved, opened; the same from an .nsp; an unknown field refused', async ({
  signedIn: page,
  api,
}) => {
  test.setTimeout(150_000);
  const stamp = Date.now();
  const latin = { all: [{ is: { genre: 'Latin' } }] };
  const both = { all: [{ is: { genre: 'Latin' } }, { any: [{ inTheRange: { year: [2000, 2030] } }, { lt: { duration: 1 } }] }], sort: '-title' };
  const latinCount = (await matching(api, latin)).track_count;
  const expected = await matching(api, both);
  expect(latinCount, 'the corpus has Latin tracks').toBeGreaterThan(0);

  await page.goto('/playlists');
  await page.getByRole('link', { name: 'New smart playlist' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'New smart playlist' })).toBeVisible();
  const name = `Latin since 2000 ${stamp}`;
  await page.getByLabel('Playlist name').fill(name);

  // The first rule: genre is Latin. The count follows.
  const first = page.getByRole('group', { name: 'Rule 1' });
  await first.getByLabel('Field', { exact: true }).selectOption('genre');
  await first.getByLabel('Operator').selectOption('is');
  await first.getByLabel('Value', { exact: true }).fill('No such genre at all');
  await expect(count(page)).toHaveText('0 tracks match');
  await first.getByLabel('Value', { exact: true }).fill('Latin');
  await expect(count(page)).toHaveText(`${latinCount} ${latinCount === 1 ? 'track matches' : 'tracks match'}`);

  // A nested group: year between 2000 and 2030, or shorter than a second.
  await page.getByRole('group', { name: 'Rules' }).getByRole('button', { name: 'Add group' }).last().click();
  const group = page.getByRole('group', { name: 'Group 2' });
  await expect(group.getByLabel('Match')).toHaveValue('any');
  const year = group.getByRole('group', { name: 'Rule 2.1' });
  await year.getByLabel('Field', { exact: true }).selectOption('year');
  await year.getByLabel('Operator').selectOption('inTheRange');
  await year.getByLabel('From', { exact: true }).fill('2000');
  await year.getByLabel('To', { exact: true }).fill('2030');
  await group.getByRole('button', { name: 'Add rule' }).click();
  const short = group.getByRole('group', { name: 'Rule 2.2' });
  await short.getByLabel('Field', { exact: true }).selectOption('duration');
  await short.getByLabel('Operator').selectOption('lt');
  await short.getByLabel('Value', { exact: true }).fill('1');
  await page.getByRole('combobox', { name: 'Sort by' }).selectOption('title');
  await page.getByLabel('Order', { exact: true }).selectOption('desc');
  await expect(count(page)).toHaveText(`${expected.track_count} ${expected.track_count === 1 ? 'track matches' : 'tracks match'}`);

  // A bad value is the server's 422, shown on its row; fixing it brings the count back.
  await year.getByLabel('To', { exact: true }).fill('');
  await expect(year.getByRole('alert')).toContainText('must be');
  await expect(count(page)).toHaveText('Fix the marked rule to see what matches.');
  await year.getByLabel('To', { exact: true }).fill('2030');
  await expect(count(page)).toHaveText(new RegExp(`^${expected.track_count} tracks? match`));
  await page.screenshot({ path: 'test-results/smart-editor-desktop.png' });
  await page.getByRole('heading', { level: 1 }).scrollIntoViewIfNeeded();
  await page.screenshot({ path: 'test-results/smart-editor-desktop-top.png' });
  const results = await new AxeBuilder({ page }).analyze();
  expect(results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id)).toEqual([]);

  await page.setViewportSize({ width: 375, height: 812 });
  expect(await page.evaluate(() => document.querySelector('main')!.scrollWidth - document.querySelector('main')!.clientWidth)).toBe(0);
  await page.getByRole('heading', { level: 1 }).scrollIntoViewIfNeeded();
  await page.screenshot({ path: 'test-results/smart-editor-phone-top.png' });
  await group.scrollIntoViewIfNeeded();
  await page.screenshot({ path: 'test-results/smart-editor-phone.png' });
  await page.setViewportSize({ width: 1280, height: 800 });

  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByRole('heading', { level: 1, name })).toBeVisible();
  const id = new URL(page.url()).pathname.split('/').pop()!;
  await expect(page.getByText('Smart', { exact: true })).toBeVisible();
  const list = page.getByRole('list', { name });
  await expect(list.getByRole('listitem')).toHaveCount(expected.track_count);
  const titles = await list.getByRole('listitem').locator('.title').allTextContents();
  const saved = await api.get<{ rules: unknown; track_ids: string[] }>(`/playlists/${id}`);
  expect(saved.track_ids).toEqual(expected.track_ids);
  // Its tracks follow its rules: no remove or move in the row menus.
  await list.getByRole('listitem').first().getByRole('button', { name: /^More actions for / }).click();
  await expect(page.getByRole('button', { name: 'Remove from playlist' })).toHaveCount(0);
  await page.keyboard.press('Escape');
  await page.screenshot({ path: 'test-results/smart-playlist-desktop.png' });

  // Edit rules opens the editor on the saved rules.
  await page.getByRole('link', { name: 'Edit rules' }).click();
  await expect(page.getByRole('heading', { level: 1, name: `Rules of ${name}` })).toBeVisible();
  await expect(page.getByRole('group', { name: 'Rule 1' }).getByLabel('Value', { exact: true })).toHaveValue('Latin');
  await expect(page.getByRole('group', { name: 'Rule 2.1' }).getByLabel('From', { exact: true })).toHaveValue('2000');
  await expect(count(page)).toHaveText(new RegExp(`^${expected.track_count} tracks? match`));

  // The same rules as a Navidrome file (camelCase fields, order apart from sort): same tracks.
  const imported = `Imported ${stamp}`;
  const file = nspFile('latin.nsp', {
    name: imported,
    comment: 'From Navidrome',
    public: false,
    all: [{ is: { Genre: 'Latin' } }, { any: [{ inTheRange: { year: [2000, 2030] } }, { lt: { duration: 1 } }] }],
    sort: 'title',
    order: 'desc',
  });
  await page.goto('/playlists/smart');
  await page.getByLabel('Import .nsp').setInputFiles(file);
  await expect(page.getByLabel('Playlist name')).toHaveValue(imported);
  await expect(page.getByLabel('Description')).toHaveValue('From Navidrome');
  await expect(page.getByRole('combobox', { name: 'Sort by' })).toHaveValue('title');
  await expect(page.getByLabel('Order', { exact: true })).toHaveValue('desc');
  await expect(count(page)).toHaveText(new RegExp(`^${expected.track_count} tracks? match`));
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByRole('heading', { level: 1, name: imported })).toBeVisible();
  const importedList = page.getByRole('list', { name: imported });
  await expect(importedList.getByRole('listitem')).toHaveCount(expected.track_count);
  expect(await importedList.getByRole('listitem').locator('.title').allTextContents()).toEqual(titles);
  const importedId = new URL(page.url()).pathname.split('/').pop()!;
  expect((await api.get<{ rules: unknown }>(`/playlists/${importedId}`)).rules).toEqual(saved.rules);

  // A field musiclib lacks: the server's 422 on the row, and Save makes nothing.
  const bad = `Refused ${stamp}`;
  await page.goto('/playlists/smart');
  await page.getByLabel('Import .nsp').setInputFiles(nspFile('comment.nsp', { name: bad, all: [{ contains: { comment: 'live' } }] }));
  await expect(page.getByLabel('Playlist name')).toHaveValue(bad);
  const refused = page.getByRole('group', { name: 'Rule 1' });
  await expect(refused.getByLabel('Field', { exact: true })).toHaveValue('comment');
  await expect(refused.getByRole('alert')).toContainText('unknown field "comment"');
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(refused.getByRole('alert')).toContainText('unknown field "comment"');
  await expect(page.getByRole('heading', { level: 1, name: 'New smart playlist' })).toBeVisible();
  await page.screenshot({ path: 'test-results/smart-editor-refused.png' });
  const all = await api.get<{ items: { name: string }[] }>('/playlists?limit=200');
  expect(all.items.map((p) => p.name)).not.toContain(bad);

  // A smart playlist is not offered by "Add to playlist".
  await page.goto('/albums');
  await page.getByRole('link', { name: 'Canción de Mañana' }).first().click();
  await page.getByRole('button', { name: 'More actions for Mañana Dorada' }).click();
  await page.getByRole('button', { name: 'Add to playlist' }).click();
  await expect(page.getByRole('dialog', { name: 'Add to playlist' }).getByRole('button', { name: new RegExp(name) })).toHaveCount(0);

  await api.send('DELETE', `/playlists/${id}`);
  await api.send('DELETE', `/playlists/${importedId}`);
});
