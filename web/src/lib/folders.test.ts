import { describe, expect, it } from 'vitest';
import { crumbs, folderHref, folderPlace, shuffled } from './folders';

/** What the router hands the page: the rest of the path after `/folders/`, decoded. */
function visit(href: string) {
  const pathname = new URL(href, 'http://localhost').pathname;
  expect(pathname).toBe(href); // the browser keeps the link as written
  return folderPlace(decodeURIComponent(pathname.replace(/^\/folders\/?/, '')));
}

describe('folder URLs', () => {
  it('encode each part of the path on its own', () => {
    expect(folderHref(null)).toBe('/folders');
    expect(folderHref('music')).toBe('/folders/music');
    expect(folderHref('music', '')).toBe('/folders/music');
    expect(folderHref('music', 'Aurora Lane/Northern Lights (2019)')).toBe('/folders/music/Aurora%20Lane/Northern%20Lights%20(2019)');
    expect(folderHref('music', 'A#1/B?c/100%')).toBe('/folders/music/A%231/B%3Fc/100%25');
  });

  it('come back as the same library and path, whatever the names', () => {
    const paths = [
      '',
      'Aurora Lane',
      'Aurora Lane/Northern Lights (2019)',
      '月光オーケストラ/夜明けの歌 (2020)',
      'Los Señores del Ritmo/Canción de Mañana',
      'Hash #1/What?/100% & more+/a=b;c,d@e:f$g',
      '%41 not an escape/%/..x/.hidden',
      'emoji 🎵/tab\there',
    ];
    for (const path of paths) {
      for (const library of ['music', 'uploads', 'remote']) {
        expect(visit(folderHref(library, path))).toEqual({ library, path });
      }
    }
    expect(visit('/folders')).toEqual({ library: null, path: '' });
  });

  it('ignore a trailing or doubled slash', () => {
    expect(folderPlace('music/')).toEqual({ library: 'music', path: '' });
    expect(folderPlace('music/A//B/')).toEqual({ library: 'music', path: 'A/B' });
    expect(folderPlace('')).toEqual({ library: null, path: '' });
    expect(folderPlace(undefined)).toEqual({ library: null, path: '' });
  });
});

describe('the breadcrumb', () => {
  it('leads from the top down to the folder', () => {
    expect(crumbs(null, '')).toEqual([{ name: 'Folders', href: '/folders' }]);
    expect(crumbs('music', 'Artist/Album #2')).toEqual([
      { name: 'Folders', href: '/folders' },
      { name: 'Music folder', href: '/folders/music' },
      { name: 'Artist', href: '/folders/music/Artist' },
      { name: 'Album #2', href: '/folders/music/Artist/Album%20%232' },
    ]);
    expect(crumbs('uploads', '').map((c) => c.name)).toEqual(['Folders', 'Uploads']);
  });
});

describe('shuffle', () => {
  it('keeps every item once', () => {
    const items = Array.from({ length: 50 }, (_, i) => i);
    const mixed = shuffled(items);
    expect([...mixed].sort((a, b) => a - b)).toEqual(items);
    expect(items[0]).toBe(0); // the input is left as it was
    expect(shuffled(items, () => 0)).not.toEqual(items);
  });
});
