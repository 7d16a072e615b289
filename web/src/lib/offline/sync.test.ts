import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import type { Track } from '../api/client';
import { OfflineStore } from './store';
import { CURSOR_KEY, sync, type Changes, type LikeState, type SyncDeps } from './sync';
import { fakeServer, freshDatabase, track } from './testing';

function page(changes: Partial<Changes> & { cursor: string }): Changes {
  return { likes: [], plays: [], playlists: [], tracks: [], deleted: { tracks: [], playlists: [] }, has_more: false, ...changes };
}

function likeEvent(trackId: string, liked: boolean, n: number): Changes['likes'][number] {
  return { client_event_id: `ev-${n}`, track_id: trackId, liked, event_time: new Date(1_700_000_000_000 + n).toISOString(), synced_at: n };
}

function playlist(id: string, trackIds: string[], version: number, name = 'Mix'): Changes['playlists'][number] {
  return {
    id,
    name,
    description: null,
    owner_id: 'user-1',
    owner: 'admin',
    public: false,
    track_ids: trackIds,
    track_count: trackIds.length,
    duration_ms: 0,
    version,
    has_cover: false,
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-01T00:00:00Z',
  } as Changes['playlists'][number];
}

/** A server with pages of changes (one per cursor) and the like state of tracks. */
async function setUp(pages: Record<string, Changes>, likeState: Record<string, boolean> = {}) {
  const catalogue = Object.fromEntries(['a', 'b', 'c', 'd', 'e'].map((id) => [id, track(id, 1000)]));
  const server = fakeServer({});
  const store = new OfflineStore(await freshDatabase().open(), server);
  const asked: (string | null)[] = [];
  const applied: LikeState[] = [];
  const shown = new Set<string>();
  const deps: SyncDeps = {
    store,
    pull: async (since) => {
      asked.push(since);
      return pages[since ?? ''] ?? null;
    },
    likeStates: async (ids) => ids.map((id) => ({ track_id: id, liked: likeState[id] ?? false, event_time: null })),
    knowsLike: (id) => shown.has(id),
    applyLikes: (states) => applied.push(...states),
    tracks: async (ids) => ids.map((id) => catalogue[id]).filter((t): t is Track => !!t),
  };
  return { store, server, deps, asked, applied, shown };
}

describe('applying changes from other devices', () => {
  it('pulls page after page from the saved cursor and saves the new cursor', async () => {
    const { store, deps, asked } = await setUp({
      '': page({ cursor: '10', has_more: true }),
      '10': page({ cursor: '20' }),
      '20': page({ cursor: '20' }),
    });
    expect(await sync(deps)).toMatchObject({ ok: true, pages: 2 });
    expect(asked).toEqual([null, '10']);
    expect(await store.meta(CURSOR_KEY)).toBe('20');

    // The next sync starts where the last one ended.
    await sync(deps);
    expect(asked).toEqual([null, '10', '20']);
  });

  it('keeps the cursor when a pull fails, so nothing is skipped', async () => {
    const { store, deps, asked } = await setUp({ '': page({ cursor: '10', has_more: true }) });
    expect(await sync(deps)).toMatchObject({ ok: false, pages: 1 });
    expect(asked).toEqual([null, '10']);
    expect(await store.meta(CURSOR_KEY)).toBe('10');
  });

  it('a stored playlist follows its changes: added tracks downloaded, removed ones dropped', async () => {
    const { store, server, deps } = await setUp({
      '5': page({ cursor: '9', playlists: [playlist('p', ['b', 'c', 'd'], 3, 'Mix renamed'), playlist('other', ['e'], 1)] }),
    });
    await store.setMeta(CURSOR_KEY, '5');
    await store.save({ key: 'playlist:p', kind: 'playlist', name: 'Mix', tracks: [track('a'), track('b')], version: 2 });
    expect(server.fetched).toEqual(['a', 'b']);

    const outcome = await sync(deps);
    expect(outcome.changed).toEqual(['playlist:p']);
    const stored = await store.collection('playlist:p');
    expect(stored).toMatchObject({ trackIds: ['b', 'c', 'd'], name: 'Mix renamed', version: 3, complete: true });
    expect(server.fetched).toEqual(['a', 'b', 'c', 'd']);
    expect((await store.storedIds()).sort()).toEqual(['b', 'c', 'd']);
    // A playlist not kept offline is not downloaded.
    expect(await store.collection('playlist:other')).toBeUndefined();
    expect(await store.meta(CURSOR_KEY)).toBe('9');
  });

  it('drops a deleted playlist and deleted tracks', async () => {
    const { store, deps } = await setUp({
      '': page({ cursor: '3', deleted: { playlists: ['p'], tracks: ['b'] } }),
    });
    await store.save({ key: 'playlist:p', kind: 'playlist', name: 'Mix', tracks: [track('a')] });
    await store.save({ key: 'album:1', kind: 'album', name: 'Album', tracks: [track('b'), track('c')] });
    await sync(deps);
    expect(await store.collection('playlist:p')).toBeUndefined();
    expect((await store.collection('album:1'))?.trackIds).toEqual(['c']);
    expect(await store.storedIds()).toEqual(['c']);
  });

  it('applies likes to the tracks shown and the stored liked songs follow', async () => {
    const { store, deps, applied, shown, server } = await setUp(
      {
        '': page({
          cursor: '7',
          likes: [likeEvent('a', false, 1), likeEvent('c', true, 2), likeEvent('d', true, 3), likeEvent('e', true, 4)],
        }),
      },
      { a: false, c: true, d: true, e: true },
    );
    await store.save({ key: 'liked', kind: 'liked', name: 'Liked songs', tracks: [track('a'), track('b')] });
    shown.add('a');

    await sync(deps);
    // The state is the server's (the latest event by time decides), for every changed track.
    expect(applied.map((s) => [s.track_id, s.liked])).toEqual([
      ['a', false],
      ['c', true],
      ['d', true],
      ['e', true],
    ]);
    // Unliked a leaves; c, d, e arrive, the latest liked first.
    expect((await store.collection('liked'))?.trackIds).toEqual(['e', 'd', 'c', 'b']);
    expect(server.fetched).toEqual(['a', 'b', 'e', 'd', 'c']);
    expect(await store.audio('a')).toBeUndefined();
  });

  it('without stored liked songs, asks only for the tracks the app shows', async () => {
    const { deps, applied, shown } = await setUp({
      '': page({ cursor: '2', likes: [likeEvent('a', true, 1), likeEvent('b', true, 2)] }),
    }, { a: true, b: true });
    shown.add('b');
    await sync(deps);
    expect(applied.map((s) => s.track_id)).toEqual(['b']);
  });

  it('updates the metadata of stored tracks edited elsewhere', async () => {
    const { store, deps } = await setUp({
      '': page({ cursor: '4', tracks: [track('a', 1000, { title: 'New title' }), track('z', 1000, { title: 'Not stored' })] }),
    });
    await store.save({ key: 'album:1', kind: 'album', name: 'Album', tracks: [track('a')] });
    await sync(deps);
    expect((await store.tracks(['a']))[0]?.track.title).toBe('New title');
    expect(await store.tracks(['z'])).toEqual([]);
  });

  it('a page is applied again when applying it failed (the cursor stays)', async () => {
    const { store, deps } = await setUp({
      '': page({ cursor: '7', likes: [likeEvent('c', true, 1)] }),
    }, { c: true });
    await store.save({ key: 'liked', kind: 'liked', name: 'Liked songs', tracks: [track('a')] });
    const states = deps.likeStates;
    deps.likeStates = async () => null;
    expect(await sync(deps)).toMatchObject({ ok: false });
    expect(await store.meta(CURSOR_KEY)).toBeUndefined();

    deps.likeStates = states;
    expect(await sync(deps)).toMatchObject({ ok: true });
    expect((await store.collection('liked'))?.trackIds).toEqual(['c', 'a']);
    expect(await store.meta(CURSOR_KEY)).toBe('7');
  });
});
