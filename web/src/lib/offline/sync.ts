// Changes made on other devices: GET /sync/changes from the saved cursor, page after page while
// `has_more`, each page applied before its cursor is saved (so a page cut short is pulled and
// applied again; applying is idempotent). Applying touches only what this browser shows or
// keeps: the like state of tracks it knows, the stored liked songs and playlists, the stored
// tracks' metadata, and deletions.
import type { components } from '../api/schema';
import type { Track } from '../api/client';
import type { Quality } from '../api/media';
import { LimitError, collectionKey, type Collection, type OfflineStore } from './store';

export type Changes = components['schemas']['ChangesOut'];
export type LikeState = components['schemas']['LikeState'];

export const CURSOR_KEY = 'cursor';
/** Changes asked per page (the server's most). */
export const PAGE_LIMIT = 5000;

export interface SyncDeps {
  store: OfflineStore;
  /** One page after `since` (null: from the start); null when it failed. */
  pull(since: string | null): Promise<Changes | null>;
  /** The current like state of these tracks; null when it failed. */
  likeStates(trackIds: string[]): Promise<LikeState[] | null>;
  /** Whether the app shows the like state of this track (its state is worth asking). */
  knowsLike(trackId: string): boolean;
  /** New like states for the app to show. */
  applyLikes(states: LikeState[]): void;
  /** Tracks by id: those the server still has, in order; throws when it cannot ask. */
  tracks(trackIds: string[]): Promise<Track[]>;
  quality?: Quality;
}

export interface SyncOutcome {
  ok: boolean;
  pages: number;
  /** Collections whose stored content changed. */
  changed: string[];
  /** Collections that did not fit in the size limit any more. */
  overLimit: string[];
}

/** Pulls and applies every change since the saved cursor. */
export async function sync(deps: SyncDeps): Promise<SyncOutcome> {
  const outcome: SyncOutcome = { ok: true, pages: 0, changed: [], overLimit: [] };
  let cursor = (await deps.store.meta<string>(CURSOR_KEY)) ?? null;
  for (;;) {
    const page = await deps.pull(cursor);
    if (!page) return { ...outcome, ok: false };
    try {
      await apply(page, deps, outcome);
    } catch {
      return { ...outcome, ok: false };
    }
    cursor = page.cursor;
    await deps.store.setMeta(CURSOR_KEY, cursor);
    outcome.pages++;
    if (!page.has_more) return outcome;
  }
}

/** Applies one page of changes; throws when a read it needs failed (the page is pulled again). */
export async function apply(page: Changes, deps: SyncDeps, outcome: SyncOutcome): Promise<void> {
  const { store } = deps;
  const collections = new Map((await store.collections()).map((collection) => [collection.key, collection]));

  // Deletions first: a deleted track leaves every collection, a deleted playlist is dropped.
  for (const id of page.deleted.playlists) {
    const key = collectionKey('playlist', id);
    if (collections.delete(key)) {
      await store.remove(key);
      outcome.changed.push(key);
    }
  }
  const gone = new Set(page.deleted.tracks);
  if (gone.size) {
    for (const collection of collections.values()) {
      if (!collection.trackIds.some((id) => gone.has(id))) continue;
      await save(deps, collection, collection.trackIds.filter((id) => !gone.has(id)), outcome);
    }
  }

  // Catalogue edits: new metadata for the stored tracks.
  if (page.tracks.length) await store.updateTracks(page.tracks);

  // Likes: the deciding event is the latest by event time, whatever order events came in, so
  // the state is asked of the server for the tracks whose likes changed.
  const liked = collections.get(collectionKey('liked'));
  const changedLikes = [...new Set(page.likes.map((like) => like.track_id))].filter(
    (id) => liked || deps.knowsLike(id),
  );
  if (changedLikes.length) {
    const states = await deps.likeStates(changedLikes);
    if (!states) throw new Error('like states unavailable');
    deps.applyLikes(states);
    if (liked) {
      const now = new Map(states.map((state) => [state.track_id, state.liked]));
      const kept = liked.trackIds.filter((id) => now.get(id) !== false);
      // Newly liked first, the latest first (events come oldest first).
      const added = changedLikes.filter((id) => now.get(id) === true && !liked.trackIds.includes(id)).reverse();
      const ids = [...added, ...kept];
      if (!sameList(ids, liked.trackIds)) await save(deps, liked, ids, outcome);
    }
  }

  // Playlists kept offline follow their changes (the server sends the caller's playlists whole).
  for (const playlist of page.playlists) {
    const key = collectionKey('playlist', playlist.id);
    const stored = collections.get(key);
    if (!stored) continue;
    if (sameList(stored.trackIds, playlist.track_ids) && stored.name === playlist.name && stored.complete) continue;
    await save(deps, { ...stored, name: playlist.name, version: playlist.version }, playlist.track_ids, outcome);
  }
}

/** Stores `collection` with the tracks `ids` (downloading the new ones, dropping the rest). */
async function save(deps: SyncDeps, collection: Collection, ids: string[], outcome: SyncOutcome): Promise<void> {
  const tracks = await resolveTracks(deps, ids);
  try {
    await deps.store.save(
      { key: collection.key, kind: collection.kind, name: collection.name, tracks, cover: collection.cover, version: collection.version },
      { quality: deps.quality },
    );
    outcome.changed.push(collection.key);
  } catch (error) {
    if (error instanceof LimitError) outcome.overLimit.push(collection.key);
    else throw error;
  }
}

/** Tracks by id: the stored metadata where there is some, the server's for the others. */
export async function resolveTracks(deps: Pick<SyncDeps, 'store' | 'tracks'>, ids: string[]): Promise<Track[]> {
  const stored = new Map((await deps.store.tracks(ids)).map((entry) => [entry.id, entry.track]));
  const missing = ids.filter((id) => !stored.has(id));
  // `tracks` leaves out the ones the server no longer has and throws when it cannot ask.
  if (missing.length) for (const track of await deps.tracks(missing)) stored.set(track.id, track);
  return ids.flatMap((id) => {
    const track = stored.get(id);
    return track ? [track] : [];
  });
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((id, i) => id === b[i]);
}
