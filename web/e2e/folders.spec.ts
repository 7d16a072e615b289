import { audioTime, expect, test } from './fixtures';

// The library as its folders: the corpus's import folder walked down to an album folder, a
// track played from it, the breadcrumb back up, and a deep link (names with spaces, accents
// and `&`) that survives a reload.

const ARTIST = 'Los Señores del Ritmo';
const ALBUM = 'Canción de Mañana (2021)';

interface Folder {
  name: string;
  folders: { name: string; path: string; folder_count: number; track_count: number }[];
  tracks: { items: { id: string; title: string }[]; total: number };
  total_tracks: number;
}

test('walk the import folder down to an album, play from it, and back up by the breadcrumb', async ({ signedIn: page, api }) => {
  const top = await api.get<Folder>('/folders');
  const music = await api.get<Folder>('/folders?library=music');
  const album = await api.get<Folder>(`/folders?library=music&path=${encodeURIComponent(`${ARTIST}/${ALBUM}`)}`);
  expect(album.tracks.total, 'the corpus has the album folder').toBeGreaterThan(1);

  await page.goto('/');
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Folders' }).click();
  await expect(page).toHaveURL(/\/folders$/);
  const main = page.getByRole('main');
  await expect(main.getByRole('heading', { name: 'Folders', level: 1 })).toBeVisible();
  const libraries = main.getByRole('list', { name: 'Libraries' });
  await expect(libraries.getByRole('listitem')).toHaveCount(top.folders.length);
  const musicLink = libraries.getByRole('link', { name: /^Music folder/ });
  await expect(musicLink).toContainText(`${music.total_tracks} tracks`);

  // Down: the library, the artist's folder, the album's.
  await musicLink.click();
  await expect(page).toHaveURL(/\/folders\/music$/);
  await expect(main.getByRole('heading', { name: 'Music folder', level: 1 })).toBeVisible();
  const subfolders = main.getByRole('list', { name: 'Subfolders' });
  await expect(subfolders.getByRole('listitem')).toHaveCount(music.folders.length);
  const artist = music.folders.find((folder) => folder.name === ARTIST)!;
  const artistLink = subfolders.getByRole('link', { name: new RegExp(`^${ARTIST}`) });
  await expect(artistLink).toContainText(`1 folder · ${artist.track_count} tracks`);
  await artistLink.click();
  await expect(page).toHaveURL(`/folders/music/${encodeURIComponent(ARTIST)}`);
  await expect(main.getByRole('heading', { name: ARTIST, level: 1 })).toBeVisible();
  await main.getByRole('list', { name: 'Subfolders' }).getByRole('link', { name: new RegExp(`^${ALBUM.replace(/[()]/g, '\\$&')}`) }).click();
  await expect(page).toHaveURL(`/folders/music/${encodeURIComponent(ARTIST)}/${encodeURIComponent(ALBUM)}`);
  await expect(main.getByRole('heading', { name: ALBUM, level: 1 })).toBeVisible();

  // Its tracks, in the order of their file names, as the API lists them.
  const list = main.getByRole('list', { name: 'Tracks in this folder' });
  await expect(list.getByRole('listitem')).toHaveCount(album.tracks.total);
  const titles = album.tracks.items.map((track) => track.title);
  await expect(list.getByRole('listitem').locator('.title')).toHaveText(titles);
  const breadcrumb = page.getByRole('navigation', { name: 'Breadcrumb' });
  await expect(breadcrumb.getByRole('link')).toHaveText(['Folders', 'Music folder', ARTIST, ALBUM]);
  await expect(breadcrumb.getByRole('link', { name: ALBUM })).toHaveAttribute('aria-current', 'page');
  await page.mouse.move(0, 0);
  await page.screenshot({ path: 'test-results/desktop-folder-album.png' });

  // Play one: it sounds, and the player shows it.
  const second = titles[1]!;
  await list.getByRole('button', { name: `Play ${second}` }).click();
  const bar = page.getByRole('region', { name: 'Now playing' });
  await expect(bar.getByRole('link', { name: second })).toBeVisible();
  await expect.poll(() => audioTime(page), { timeout: 20_000 }).toBeGreaterThan(0.2);
  // Play all starts from the folder's first track; Shuffle plays one of them.
  await main.getByRole('button', { name: 'Play', exact: true }).click();
  await expect(bar.getByRole('link', { name: titles[0]! })).toBeVisible();
  await main.getByRole('button', { name: 'Shuffle', exact: true }).click();
  await expect(bar.getByRole('link', { name: new RegExp(titles.map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')) })).toBeVisible();
  await bar.getByRole('button', { name: 'Pause' }).click();

  // Back up by the breadcrumb, a step at a time.
  await breadcrumb.getByRole('link', { name: ARTIST }).click();
  await expect(page).toHaveURL(`/folders/music/${encodeURIComponent(ARTIST)}`);
  await expect(main.getByRole('heading', { name: ARTIST, level: 1 })).toBeVisible();
  await expect(breadcrumb.getByRole('link')).toHaveText(['Folders', 'Music folder', ARTIST]);
  await breadcrumb.getByRole('link', { name: 'Music folder' }).click();
  await expect(main.getByRole('heading', { name: 'Music folder', level: 1 })).toBeVisible();
  await breadcrumb.getByRole('link', { name: 'Folders' }).click();
  await expect(page).toHaveURL(/\/folders$/);
  await expect(main.getByRole('heading', { name: 'Folders', level: 1 })).toBeVisible();
  // The browser's Back goes down again.
  await page.goBack();
  await expect(main.getByRole('heading', { name: 'Music folder', level: 1 })).toBeVisible();

  // On a phone.
  await page.setViewportSize({ width: 375, height: 812 });
  await page.goto(`/folders/music/${encodeURIComponent(ARTIST)}/${encodeURIComponent(ALBUM)}`);
  await expect(main.getByRole('heading', { name: ALBUM, level: 1 })).toBeVisible();
  await expect(list.getByRole('listitem')).toHaveCount(album.tracks.total);
  expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBe(0);
  await page.screenshot({ path: 'test-results/phone-folder-album.png' });
  await page.goto('/folders/music');
  await expect(main.getByRole('heading', { name: 'Music folder', level: 1 })).toBeVisible();
  await page.screenshot({ path: 'test-results/phone-folder-music.png' });
});

test('a deep link to a folder opens, and survives a reload; an unknown one says so', async ({ signedIn: page, api }) => {
  // A folder whose name has a space and an `&`, two levels down.
  const music = await api.get<Folder>('/folders?library=music');
  const opus = await api.get<Folder>(`/folders?library=music&path=${encodeURIComponent('Opus Collective')}`);
  const drones = opus.folders[0]!;
  expect(drones.name).toContain('&');
  const folder = await api.get<Folder>(`/folders?library=music&path=${encodeURIComponent(drones.path)}`);
  const href = `/folders/music/${drones.path.split('/').map(encodeURIComponent).join('/')}`;
  expect(href).toContain('%26');

  const main = page.getByRole('main');
  await page.goto(href);
  await expect(main.getByRole('heading', { name: drones.name, level: 1 })).toBeVisible();
  const list = main.getByRole('list', { name: 'Tracks in this folder' });
  await expect(list.getByRole('listitem')).toHaveCount(folder.tracks.total);
  await page.reload();
  await expect(page).toHaveURL(href);
  await expect(main.getByRole('heading', { name: drones.name, level: 1 })).toBeVisible();
  await expect(list.getByRole('listitem')).toHaveCount(folder.tracks.total);
  await expect(page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link')).toHaveText([
    'Folders',
    'Music folder',
    'Opus Collective',
    drones.name,
  ]);

  // Three levels down (a CD of a compilation), straight from the address bar.
  const various = music.folders.find((entry) => entry.name === 'Various Artists')!;
  const mix = (await api.get<Folder>(`/folders?library=music&path=${encodeURIComponent(various.path)}`)).folders[0]!;
  const cds = (await api.get<Folder>(`/folders?library=music&path=${encodeURIComponent(mix.path)}`)).folders;
  expect(cds.map((cd) => cd.name)).toEqual(['CD 1', 'CD 2']);
  await page.goto(`/folders/music/${cds[1]!.path.split('/').map(encodeURIComponent).join('/')}`);
  await expect(main.getByRole('heading', { name: 'CD 2', level: 1 })).toBeVisible();
  await expect(main.getByRole('list', { name: 'Tracks in this folder' }).getByRole('listitem')).toHaveCount(cds[1]!.track_count);

  // A folder that is not there (moved, renamed, mistyped).
  await page.goto('/folders/music/No%20such%20folder%20%23%3F');
  await expect(main.getByText(/^No such folder:/)).toBeVisible();
  // The breadcrumb names it as the link spelled it, `#` and `?` included.
  await expect(page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link')).toHaveText([
    'Folders',
    'Music folder',
    'No such folder #?',
  ]);
  await main.getByRole('link', { name: 'All folders' }).click();
  await expect(main.getByRole('heading', { name: 'Folders', level: 1 })).toBeVisible();
});
