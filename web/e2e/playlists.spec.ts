import { expect, test } from './fixtures';

const ALBUM = 'Canción de Mañana';

test('playlists: create, add from a track row, reorder, rename, a stale write (409), delete', async ({ signedIn: page, api }) => {
  const name = `Road trip ${Date.now()}`;
  await page.goto('/playlists');
  await page.getByRole('textbox', { name: 'New playlist' }).fill(name);
  await page.getByRole('button', { name: 'Create' }).click();
  await expect(page.getByRole('heading', { name, level: 1 })).toBeVisible();
  const playlistId = page.url().split('/').pop()!;

  // Add two tracks from the album page's row menus.
  await page.goto('/albums');
  await page.getByRole('link', { name: ALBUM }).first().click();
  for (const title of ['Mañana Dorada', 'Corazón en Fuga']) {
    await page.getByRole('button', { name: `More actions for ${title}` }).click();
    await page.getByRole('button', { name: 'Add to playlist' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add to playlist' });
    await dialog.getByRole('button', { name: new RegExp(name) }).click();
    await expect(dialog).toBeHidden();
    await expect(page.getByRole('status').filter({ hasText: `Added to ${name}` })).toBeVisible();
  }

  await page.goto(`/playlists/${playlistId}`);
  const list = page.getByRole('list', { name });
  await expect(list.getByRole('listitem')).toHaveCount(2);
  await expect(list.getByRole('listitem').first()).toContainText('Mañana Dorada');

  // Reorder: the second moves up.
  await page.getByRole('button', { name: 'More actions for Corazón en Fuga' }).click();
  await page.getByRole('button', { name: 'Move up' }).click();
  await expect(list.getByRole('listitem').first()).toContainText('Corazón en Fuga');

  // Rename.
  const renamed = `${name} (renamed)`;
  await page.getByRole('button', { name: 'Rename' }).click();
  await page.getByRole('textbox', { name: 'Playlist name' }).fill(renamed);
  await page.getByRole('button', { name: 'Save' }).click();
  await expect(page.getByRole('heading', { name: renamed, level: 1 })).toBeVisible();

  // Someone else adds a track meanwhile (the version moves on); this page's remove is then
  // stale: the server answers 409, the listener is told, and the page shows the new playlist.
  const current = await api.get<{ version: number }>(`/playlists/${playlistId}`);
  const other = await api.get<{ items: { id: string }[] }>(`/tracks?q=${encodeURIComponent('Adiós, Verano')}`);
  const added = await api.send('POST', `/playlists/${playlistId}/tracks`, { track_ids: [other.items[0]!.id], version: current.version });
  expect(added.status()).toBe(200);
  const stale = await api.send('DELETE', `/playlists/${playlistId}/tracks`, { positions: [0], version: current.version });
  expect(stale.status()).toBe(409);

  const renamedList = page.getByRole('list', { name: renamed });
  await expect(renamedList.getByRole('listitem')).toHaveCount(2);
  await page.getByRole('button', { name: 'More actions for Corazón en Fuga' }).click();
  await page.getByRole('button', { name: 'Remove from playlist' }).click();
  await expect(page.getByRole('alert')).toContainText('changed elsewhere');
  await expect(renamedList.getByRole('listitem')).toHaveCount(3);
  await expect(renamedList.getByRole('listitem').last()).toContainText('Adiós, Verano');

  // Now the remove goes through.
  await page.getByRole('button', { name: 'More actions for Corazón en Fuga' }).click();
  await page.getByRole('button', { name: 'Remove from playlist' }).click();
  await expect(renamedList.getByRole('listitem')).toHaveCount(2);
  await expect(page.getByRole('alert')).toHaveCount(0);

  // Delete.
  await page.getByRole('button', { name: 'Delete playlist' }).click();
  await page.getByRole('alertdialog').getByRole('button', { name: 'Delete' }).click();
  await expect(page.getByRole('heading', { name: 'Playlists', level: 1 })).toBeVisible();
  await expect(page.getByRole('link', { name: new RegExp(renamed.replace(/[()]/g, '\\$&')) })).toHaveCount(0);
});
