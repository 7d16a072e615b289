// What is kept to play without the network: collections (an album, a playlist, the liked
// songs), each a list of track ids, and per track its metadata and audio. A track in two
// collections is stored once; removing a collection drops the tracks no other one holds.
// Downloads respect a size limit the listener sets: a collection that would not fit is
// refused before anything is fetched.
import type { Track } from '../api/client';
import type { Quality } from '../api/media';
import { all, clear, done, get, open, put, transact, type StoreName } from './db';

export type CollectionKind = 'album' | 'playlist' | 'liked';

export interface Collection {
  /** `album:<id>`, `playlist:<id>` or `liked`. */
  key: string;
  kind: CollectionKind;
  name: string;
  /** The tracks in order. */
  trackIds: string[];
  /** The stored cover image's key (`albums:<id>`), if any. */
  cover: string | null;
  /** Every track is stored. */
  complete: boolean;
  /** A playlist's version when it was stored. */
  version?: number;
  storedAt: number;
}

export interface StoredTrack {
  id: string;
  track: Track;
  /** Bytes of the stored audio. */
  size: number;
  /** Its MIME type, as the server sent it. */
  type: string;
  storedAt: number;
}

/** What to keep: a collection with its tracks' metadata. */
export interface CollectionSpec {
  key: string;
  kind: CollectionKind;
  name: string;
  tracks: Track[];
  /** A cover to keep with it (`albums:<id>`). */
  cover?: string | null;
  version?: number;
}

/** How the store reaches the server (the app passes the API; tests pass fakes). */
export interface Fetchers {
  audio(trackId: string, signal?: AbortSignal): Promise<Blob>;
  cover?(key: string): Promise<Blob | null>;
}

export interface Progress {
  done: number;
  total: number;
  bytes: number;
}

export const GB = 1024 ** 3;
/** The sizes a listener can choose from; the first use gets the default. */
export const LIMITS = [1 * GB, 2 * GB, 5 * GB, 10 * GB] as const;
export const DEFAULT_LIMIT = 2 * GB;

/** Kilobits per second of the server's Opus renditions (docs/api.md, "Streaming"). */
const QUALITY_KBPS: Record<Quality, number | null> = { original: null, high: 192, medium: 128, low: 64 };

/** A collection would not fit in the limit: nothing of it (or nothing more) was stored. */
export class LimitError extends Error {
  constructor(
    readonly needed: number,
    readonly used: number,
    readonly limit: number,
  ) {
    super(`needs ${needed} bytes, ${Math.max(0, limit - used)} of ${limit} free`);
    this.name = 'LimitError';
  }
}

/** Bytes a track is expected to take at `quality` (the original when unknown). */
export function expectedSize(track: Track, quality?: Quality): number {
  const seconds = (track.duration_ms ?? 0) / 1000;
  const original = track.size_bytes ?? Math.ceil((seconds * (track.bitrate_kbps ?? 320) * 1000) / 8);
  const kbps = quality ? QUALITY_KBPS[quality] : null;
  if (!kbps || !seconds) return original;
  // The server sends the original while it has no rendition yet: never expect less than
  // the rendition, and never more than the original.
  return Math.min(original, Math.ceil((seconds * kbps * 1000) / 8));
}

export function collectionKey(kind: CollectionKind, id?: string): string {
  return kind === 'liked' ? 'liked' : `${kind}:${id}`;
}

export class OfflineStore {
  readonly db: IDBDatabase;
  #fetchers: Fetchers;
  /** Downloads and removals one at a time (the limit is checked against settled usage). */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(db: IDBDatabase, fetchers: Fetchers) {
    this.db = db;
    this.#fetchers = fetchers;
  }

  static async open(fetchers: Fetchers, name?: string): Promise<OfflineStore> {
    return new OfflineStore(await open(name), fetchers);
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(work, work);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  // Reading ----------------------------------------------------------------------------------

  collections(): Promise<Collection[]> {
    return all<Collection>(this.db, 'collections').then((list) => list.sort((a, b) => b.storedAt - a.storedAt));
  }

  collection(key: string): Promise<Collection | undefined> {
    return get<Collection>(this.db, 'collections', key);
  }

  /** The stored tracks (metadata only); all of them, or those of `ids` that are stored, in order. */
  async tracks(ids?: readonly string[]): Promise<StoredTrack[]> {
    if (!ids) return all<StoredTrack>(this.db, 'tracks');
    const found = await transact(this.db, 'tracks', 'readonly', (tx) =>
      Promise.all(ids.map((id) => done(tx.objectStore('tracks').get(id)) as Promise<StoredTrack | undefined>)),
    );
    return found.filter((track): track is StoredTrack => track !== undefined);
  }

  /** The ids of every stored track. */
  storedIds(): Promise<string[]> {
    return transact(this.db, 'tracks', 'readonly', (tx) => done(tx.objectStore('tracks').getAllKeys()) as Promise<string[]>);
  }

  audio(trackId: string): Promise<Blob | undefined> {
    return get<Blob>(this.db, 'audio', trackId);
  }

  cover(key: string): Promise<Blob | undefined> {
    return get<Blob>(this.db, 'covers', key);
  }

  /** Bytes used: every stored track counted once, and the covers. */
  async usage(): Promise<number> {
    const [tracks, covers] = await Promise.all([this.tracks(), all<Blob>(this.db, 'covers')]);
    return tracks.reduce((sum, track) => sum + track.size, 0) + covers.reduce((sum, blob) => sum + blob.size, 0);
  }

  /** Bytes of a collection's stored tracks (a track shared with another counts in both). */
  async sizeOf(collection: Collection): Promise<number> {
    const tracks = await this.tracks(collection.trackIds);
    return tracks.reduce((sum, track) => sum + track.size, 0);
  }

  async limit(): Promise<number> {
    return (await get<number>(this.db, 'meta', 'limit')) ?? DEFAULT_LIMIT;
  }

  setLimit(bytes: number): Promise<void> {
    return put(this.db, 'meta', bytes, 'limit');
  }

  meta<T>(key: string): Promise<T | undefined> {
    return get<T>(this.db, 'meta', key);
  }

  setMeta(key: string, value: unknown): Promise<void> {
    return put(this.db, 'meta', value, key);
  }

  /** Bytes still to fetch to store `tracks` (those already stored cost nothing). */
  async needed(tracks: readonly Track[], quality?: Quality): Promise<number> {
    const stored = new Set(await this.storedIds());
    return tracks.filter((track) => !stored.has(track.id)).reduce((sum, track) => sum + expectedSize(track, quality), 0);
  }

  // Writing ----------------------------------------------------------------------------------

  /**
   * Stores a collection: its record at once (incomplete), then each missing track's audio,
   * then drops the tracks it no longer holds (a changed playlist). Refused with a LimitError
   * before any download when the expected size does not fit; a download that turns out larger
   * than expected stops at the limit, and then a new collection is removed again (as when
   * `signal` cancels it).
   */
  save(
    spec: CollectionSpec,
    options: { quality?: Quality; onProgress?: (progress: Progress) => void; signal?: AbortSignal } = {},
  ): Promise<Collection> {
    return this.#serial(async () => {
      const [limit, before, existing] = await Promise.all([this.limit(), this.usage(), this.collection(spec.key)]);
      const needed = await this.needed(spec.tracks, options.quality);
      if (before + needed > limit) throw new LimitError(needed, before, limit);

      const ids = unique(spec.tracks.map((track) => track.id));
      const collection: Collection = {
        key: spec.key,
        kind: spec.kind,
        name: spec.name,
        trackIds: ids,
        cover: spec.cover ?? existing?.cover ?? null,
        complete: false,
        version: spec.version,
        storedAt: existing?.storedAt ?? Date.now(),
      };
      await put(this.db, 'collections', collection);

      let used = before;
      if (collection.cover && this.#fetchers.cover && !(await this.cover(collection.cover))) {
        const blob = await this.#fetchers.cover(collection.cover).catch(() => null);
        if (blob) {
          await put(this.db, 'covers', blob, collection.cover);
          used += blob.size;
        }
      }

      const stored = new Set(await this.storedIds());
      const byId = new Map(spec.tracks.map((track) => [track.id, track]));
      const missing = ids.filter((id) => !stored.has(id));
      const progress: Progress = { done: ids.length - missing.length, total: ids.length, bytes: 0 };
      options.onProgress?.({ ...progress });
      try {
        for (const id of missing) {
          options.signal?.throwIfAborted();
          const blob = await this.#fetchers.audio(id, options.signal);
          if (used + blob.size > limit) throw new LimitError(blob.size, used, limit);
          const entry: StoredTrack = { id, track: byId.get(id)!, size: blob.size, type: blob.type, storedAt: Date.now() };
          await transact(this.db, ['tracks', 'audio'], 'readwrite', async (tx) => {
            await done(tx.objectStore('tracks').put(entry));
            await done(tx.objectStore('audio').put(blob, id));
          });
          used += blob.size;
          progress.done++;
          progress.bytes += blob.size;
          options.onProgress?.({ ...progress });
        }
      } catch (error) {
        // Refused or cancelled: a new collection goes again. Cut short (the network): it stays,
        // incomplete, and a later save finishes it.
        if (!existing && (error instanceof LimitError || options.signal?.aborted)) await this.#remove(spec.key);
        throw error;
      }
      // Metadata of tracks stored before (another collection) may be older: refresh it.
      await this.#refreshMetadata(spec.tracks.filter((track) => stored.has(track.id)));
      collection.complete = true;
      await put(this.db, 'collections', collection);
      await this.#prune();
      return collection;
    });
  }

  /** Removes a collection and the tracks no other collection holds. */
  remove(key: string): Promise<void> {
    return this.#serial(() => this.#remove(key));
  }

  async #remove(key: string): Promise<void> {
    await transact(this.db, 'collections', 'readwrite', async (tx) => {
      await done(tx.objectStore('collections').delete(key));
    });
    await this.#prune();
  }

  /** New metadata for stored tracks (a tag edit elsewhere); unknown ones are ignored. */
  updateTracks(tracks: readonly Track[]): Promise<void> {
    return this.#serial(() => this.#refreshMetadata(tracks));
  }

  async #refreshMetadata(tracks: readonly Track[]): Promise<void> {
    if (tracks.length === 0) return;
    await transact(this.db, 'tracks', 'readwrite', async (tx) => {
      const store = tx.objectStore('tracks');
      for (const track of tracks) {
        const entry = (await done(store.get(track.id))) as StoredTrack | undefined;
        if (entry) await done(store.put({ ...entry, track }));
      }
    });
  }

  /** Drops tracks and covers no collection refers to. */
  async #prune(): Promise<void> {
    const collections = await all<Collection>(this.db, 'collections');
    const keep = new Set(collections.flatMap((collection) => collection.trackIds));
    const covers = new Set(collections.map((collection) => collection.cover).filter(Boolean));
    await transact(this.db, ['tracks', 'audio', 'covers'], 'readwrite', async (tx) => {
      const ids = (await done(tx.objectStore('tracks').getAllKeys())) as string[];
      for (const id of ids) {
        if (keep.has(id)) continue;
        await done(tx.objectStore('tracks').delete(id));
        await done(tx.objectStore('audio').delete(id));
      }
      const coverKeys = (await done(tx.objectStore('covers').getAllKeys())) as string[];
      for (const key of coverKeys) if (!covers.has(key)) await done(tx.objectStore('covers').delete(key));
    });
  }

  /** Forgets everything (signing out, another user). */
  clear(stores: StoreName[] = ['collections', 'tracks', 'audio', 'covers', 'outbox', 'meta']): Promise<void> {
    return this.#serial(() => clear(this.db, stores));
  }
}

function unique(ids: string[]): string[] {
  return [...new Set(ids)];
}
