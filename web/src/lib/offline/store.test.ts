import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { LimitError, OfflineStore, expectedSize, type CollectionSpec } from './store';
import { fakeServer, freshDatabase, track } from './testing';

const album = (tracks = [track('a', 1000), track('b', 2000), track('c', 3000)]): CollectionSpec => ({
  key: 'album:1',
  kind: 'album',
  name: 'An album',
  tracks,
  cover: 'albums:1',
});

async function setUp(sizes: Record<string, number> = { a: 1000, b: 2000, c: 3000, d: 4000 }) {
  const server = fakeServer(sizes);
  const db = freshDatabase();
  const store = new OfflineStore(await db.open(), server);
  return { server, store, db };
}

describe('the offline store', () => {
  it('stores a collection: its tracks, their audio, the cover, and counts their size', async () => {
    const { store, server } = await setUp();
    const progress: number[] = [];
    const saved = await store.save(album(), { onProgress: (p) => progress.push(p.done) });

    expect(saved.complete).toBe(true);
    expect(server.fetched).toEqual(['a', 'b', 'c']);
    expect(progress).toEqual([0, 1, 2, 3]);
    expect((await store.storedIds()).sort()).toEqual(['a', 'b', 'c']);
    expect((await store.audio('b'))?.size).toBe(2000);
    expect((await store.audio('b'))?.type).toBe('audio/ogg');
    expect((await store.tracks(['c', 'a'])).map((t) => t.track.title)).toEqual(['Title c', 'Title a']);
    expect(await store.sizeOf(saved)).toBe(6000);
    // The cover is counted in the usage too.
    expect(await store.usage()).toBe(6100);
    const [listed] = await store.collections();
    expect(listed).toMatchObject({ key: 'album:1', name: 'An album', trackIds: ['a', 'b', 'c'], complete: true });
  });

  it('stores a track shared by two collections once and keeps it until neither holds it', async () => {
    const { store, server } = await setUp();
    await store.save(album());
    await store.save({ key: 'playlist:p', kind: 'playlist', name: 'Mix', tracks: [track('c', 3000), track('d', 4000)] });
    // c was stored already: only d was fetched.
    expect(server.fetched).toEqual(['a', 'b', 'c', 'd']);
    expect(await store.usage()).toBe(1000 + 2000 + 3000 + 4000 + 100);

    await store.remove('album:1');
    expect((await store.storedIds()).sort()).toEqual(['c', 'd']);
    expect(await store.audio('a')).toBeUndefined();
    expect(await store.cover('albums:1')).toBeUndefined();
    expect(await store.usage()).toBe(7000);

    await store.remove('playlist:p');
    expect(await store.storedIds()).toEqual([]);
    expect(await store.usage()).toBe(0);
    expect(await store.collections()).toEqual([]);
  });

  it('updates a collection: new tracks downloaded, removed ones dropped', async () => {
    const { store, server } = await setUp();
    await store.save(album());
    await store.save(album([track('a', 1000), track('d', 4000)]));
    expect(server.fetched).toEqual(['a', 'b', 'c', 'd']);
    expect((await store.storedIds()).sort()).toEqual(['a', 'd']);
    expect((await store.collection('album:1'))?.trackIds).toEqual(['a', 'd']);
  });

  it('refuses a collection over the limit before downloading anything', async () => {
    const { store, server } = await setUp();
    await store.setLimit(5000);
    const refused = await store.save(album()).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LimitError);
    expect(refused).toMatchObject({ needed: 6000, used: 0, limit: 5000 });
    expect(server.fetched).toEqual([]);
    expect(await store.collections()).toEqual([]);

    // What is stored counts: with a 6000-byte album kept, a 3000-byte one does not fit in 8000.
    await store.setLimit(8000);
    await store.save(album([track('a', 1000), track('b', 2000), track('c', 3000)]));
    const second = await store
      .save({ key: 'album:2', kind: 'album', name: 'Two', tracks: [track('d', 4000)] })
      .catch((error: unknown) => error);
    expect(second).toBeInstanceOf(LimitError);
    // Tracks already stored cost nothing: a playlist of stored tracks fits.
    await store.save({ key: 'playlist:p', kind: 'playlist', name: 'Mix', tracks: [track('a'), track('c')] });
    expect(server.fetched).toEqual(['a', 'b', 'c']);
  });

  it('stops at the limit when the audio is larger than expected, and drops the new collection', async () => {
    const { store } = await setUp({ a: 1000, b: 9000 });
    await store.setLimit(5000);
    const refused = await store
      .save({ key: 'album:x', kind: 'album', name: 'X', tracks: [track('a', 1000), track('b', 1000)] })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LimitError);
    expect(await store.collections()).toEqual([]);
    expect(await store.storedIds()).toEqual([]);
    expect(await store.usage()).toBe(0);
  });

  it('keeps a download cut short by the network, incomplete, and finishes it later', async () => {
    const { store, server } = await setUp();
    server.fail.add('b');
    await expect(store.save(album())).rejects.toThrow('Failed to fetch');
    const cut = await store.collection('album:1');
    expect(cut?.complete).toBe(false);
    expect(await store.storedIds()).toEqual(['a']);

    server.fail.clear();
    await store.save(album());
    expect((await store.collection('album:1'))?.complete).toBe(true);
    expect(server.fetched).toEqual(['a', 'b', 'c']);
  });

  it('removes a new collection whose download was cancelled', async () => {
    const { store } = await setUp();
    const abort = new AbortController();
    const saving = store.save(album(), { signal: abort.signal, onProgress: (p) => p.done === 1 && abort.abort() });
    await expect(saving).rejects.toThrow();
    expect(await store.collections()).toEqual([]);
    expect(await store.storedIds()).toEqual([]);
  });

  it('keeps everything across a reopening of the database, and clears it all', async () => {
    const { store, server, db } = await setUp();
    await store.save(album());
    await store.setLimit(10 * 1024 ** 3);
    const reopened = new OfflineStore(await db.open(), server);
    expect((await reopened.storedIds()).sort()).toEqual(['a', 'b', 'c']);
    expect(await reopened.limit()).toBe(10 * 1024 ** 3);
    await reopened.clear();
    expect(await reopened.collections()).toEqual([]);
    expect(await reopened.usage()).toBe(0);
  });

  it('expects the rendition size at a lower quality, never more than the original', () => {
    const song = track('a', 10_000_000, { duration_ms: 200_000 });
    expect(expectedSize(song)).toBe(10_000_000);
    expect(expectedSize(song, 'original')).toBe(10_000_000);
    expect(expectedSize(song, 'low')).toBe(1_600_000);
    expect(expectedSize(track('b', 500, { duration_ms: 200_000 }), 'high')).toBe(500);
  });
});
