// The offline slice in the app: what is stored (for the Offline page, the buttons and the
// player), downloads with their progress, the size limit, whether the network is there, and
// the sync with other devices (on start, when the network comes back, every minute while the
// page is visible). The logic is in store.ts, outbox.ts and sync.ts; this wires it to the API,
// the likes store and the listener's session.
import { SvelteMap, SvelteSet } from 'svelte/reactivity';
import { api, type Track } from '../api/client';
import { coverUrl, streamUrl, type Quality } from '../api/media';
import { readTracks } from '../api/tracks';
import { auth } from '../stores/auth.svelte';
import { likes } from '../stores/likes.svelte';
import { t } from '../messages';
import { shared } from './db';
import { events } from './events.svelte';
import { OfflineStore, collectionKey, type Collection, type CollectionSpec, type Progress } from './store';
import { CURSOR_KEY, PAGE_LIMIT, resolveTracks, sync, type SyncDeps } from './sync';

const SYNC_EVERY = 60_000;
/** Object URLs kept for stored audio (the playing and the preloaded track, and a few more). */
const URLS_KEPT = 6;

export interface CollectionView extends Collection {
  /** Bytes of its stored tracks. */
  size: number;
  /** Tracks stored of `trackIds.length`. */
  stored: number;
}

class Offline {
  /** Whether the browser has a network (the `online`/`offline` events). */
  online = $state(typeof navigator === 'undefined' ? true : navigator.onLine);
  collections = $state<CollectionView[]>([]);
  /** Running downloads, by collection key. */
  progress = new SvelteMap<string, Progress>();
  /** Bytes stored (own sum) and the limit. */
  used = $state(0);
  limit = $state(0);
  /** The browser keeps the data until the user clears it (navigator.storage.persist). */
  persisted = $state<boolean | null>(null);
  /** The stored data is read (the player waits for this before choosing a source). */
  loaded = $state(false);
  /** Whether the stored data could not be opened (no IndexedDB). */
  unavailable = $state(false);

  #stored = new SvelteSet<string>();
  #store: OfflineStore | null = null;
  #user: string | null = null;
  #token: string | null = null;
  #ready: Promise<void> = Promise.resolve();
  #resolveReady: () => void = () => {};
  #aborts = new Map<string, AbortController>();
  #urls = new Map<string, string>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #syncing: Promise<void> | null = null;
  #lastSync = 0;

  constructor() {
    if (typeof window === 'undefined') return;
    this.#ready = new Promise((resolve) => (this.#resolveReady = resolve));
    addEventListener('online', () => {
      this.online = true;
      void events.flush();
      void this.sync();
    });
    addEventListener('offline', () => (this.online = false));
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'visible' && Date.now() - this.#lastSync > SYNC_EVERY) void this.sync();
    });
    auth.onSignOut(() => void this.#signedOut());
    events.onLike((trackId, liked) => void this.#likedHere(trackId, liked));
  }

  /** Resolves once the signed-in user's stored data is read (or could not be). */
  get ready(): Promise<void> {
    return this.#ready;
  }

  /** Whether a track's audio is stored. */
  has = (trackId: string): boolean => this.#stored.has(trackId);

  collection = (key: string): CollectionView | undefined => this.collections.find((c) => c.key === key);

  /** Opens the signed-in user's data (another user's is cleared first) and starts syncing. */
  start = async (): Promise<void> => {
    const user = auth.user?.id;
    if (!user || this.#user === user) return;
    this.#user = user;
    this.#token = auth.token;
    try {
      this.#store = new OfflineStore(await shared(), { audio: fetchAudio, cover: fetchCover });
      const owner = await this.#store.meta<string>('owner');
      if (owner !== user) {
        await this.#store.clear();
        await this.#store.setMeta('owner', user);
      }
      await this.refresh();
    } catch {
      this.unavailable = true;
    }
    this.loaded = true;
    this.#resolveReady();
    if (!this.#store) return;
    if (navigator.storage?.persisted) this.persisted = await navigator.storage.persisted();
    // Likes made here and not sent yet are this browser's newest word on those tracks.
    for (const event of await events.pending()) if (event.kind === 'like') likes.set(event.body.track_id, event.body.liked);
    void events.flush();
    void this.sync();
    clearInterval(this.#timer);
    this.#timer = setInterval(() => {
      if (document.visibilityState === 'visible') void this.sync();
    }, SYNC_EVERY);
  };

  /** Reads the list of collections, the stored tracks and the usage again. */
  refresh = async (): Promise<void> => {
    const store = this.#store;
    if (!store) return;
    const [collections, ids, used, limit] = await Promise.all([
      store.collections(),
      store.storedIds(),
      store.usage(),
      store.limit(),
    ]);
    const stored = new Set(ids);
    const views: CollectionView[] = [];
    for (const collection of collections) {
      views.push({
        ...collection,
        size: await store.sizeOf(collection),
        stored: collection.trackIds.filter((id) => stored.has(id)).length,
      });
    }
    this.collections = views;
    for (const id of [...this.#stored]) if (!stored.has(id)) this.#forgetUrl(id), this.#stored.delete(id);
    for (const id of ids) this.#stored.add(id);
    this.used = used;
    this.limit = limit;
  };

  /**
   * Makes a collection available offline: asks the browser to keep the data, then downloads
   * every track (progress in `progress`). Throws a LimitError when it would not fit.
   */
  save = async (reactive: CollectionSpec, quality: Quality | undefined): Promise<void> => {
    // Plain objects: a page's reactive state (a proxy) cannot be written to IndexedDB.
    const spec = $state.snapshot(reactive) as CollectionSpec;
    const store = await this.#opened();
    if (navigator.storage?.persist && !this.persisted) this.persisted = await navigator.storage.persist().catch(() => false);
    const abort = new AbortController();
    this.#aborts.get(spec.key)?.abort();
    this.#aborts.set(spec.key, abort);
    this.progress.set(spec.key, { done: 0, total: spec.tracks.length, bytes: 0 });
    const refreshSoon = throttle(() => void this.refresh(), 1000);
    try {
      await store.save(spec, {
        quality,
        signal: abort.signal,
        onProgress: (progress) => {
          this.progress.set(spec.key, progress);
          refreshSoon();
        },
      });
    } finally {
      if (this.#aborts.get(spec.key) === abort) this.#aborts.delete(spec.key);
      this.progress.delete(spec.key);
      await this.refresh();
    }
  };

  /** Removes a collection (stopping its download) and the audio no other one needs. */
  remove = async (key: string): Promise<void> => {
    const store = await this.#opened();
    this.#aborts.get(key)?.abort();
    await store.remove(key);
    await this.refresh();
  };

  setLimit = async (bytes: number): Promise<void> => {
    const store = await this.#opened();
    await store.setLimit(bytes);
    this.limit = bytes;
  };

  /** The liked songs, all of them, to keep offline. */
  likedSpec = async (): Promise<CollectionSpec> => {
    const ids: string[] = [];
    for (;;) {
      const { data } = await api.GET('/likes', { params: { query: { limit: 200, offset: ids.length } } });
      if (!data) throw new Error('likes unavailable');
      ids.push(...data.items.map((like) => like.track_id));
      if (data.items.length === 0 || ids.length >= data.total) break;
    }
    return { key: collectionKey('liked'), kind: 'liked', name: t.liked, tracks: await fetchTracks(ids) };
  };

  /** The stored tracks of a collection, in its order. */
  tracksOf = async (key: string): Promise<Track[]> => {
    const store = this.#store;
    const collection = this.collection(key);
    if (!store || !collection) return [];
    return (await store.tracks(collection.trackIds)).map((entry) => entry.track);
  };

  /** An object URL of a stored track's audio (null when it is not stored). */
  audioUrl = async (trackId: string): Promise<string | null> => {
    const known = this.#urls.get(trackId);
    if (known) {
      // Most recently used last.
      this.#urls.delete(trackId);
      this.#urls.set(trackId, known);
      return known;
    }
    const blob = await this.#store?.audio(trackId);
    if (!blob) return null;
    const url = URL.createObjectURL(blob);
    this.#urls.set(trackId, url);
    while (this.#urls.size > URLS_KEPT) this.#forgetUrl(this.#urls.keys().next().value!);
    return url;
  };

  /** An object URL of a stored cover (the caller revokes it). */
  coverUrl = async (key: string): Promise<string | null> => {
    const blob = await this.#store?.cover(key);
    return blob ? URL.createObjectURL(blob) : null;
  };

  /** Pulls the changes made elsewhere and finishes downloads cut short (one run at a time). */
  sync = (): Promise<void> => {
    this.#syncing ??= this.#sync().finally(() => (this.#syncing = null));
    return this.#syncing;
  };

  async #sync(): Promise<void> {
    const store = this.#store;
    if (!store || !auth.signedIn || !navigator.onLine) return;
    // Never pulled: start from the server's clock now (GET /sync/cursor), before anything is
    // read to be kept, so no later change is missed and the whole catalogue (what a pull from
    // nothing lists) is never pulled.
    if (!(await store.meta(CURSOR_KEY))) {
      const { data } = await api.GET('/sync/cursor');
      if (data) await store.setMeta(CURSOR_KEY, data.cursor);
      return;
    }
    this.#lastSync = Date.now();
    const deps: SyncDeps = {
      store,
      pull: async (since) => {
        const { data } = await api.GET('/sync/changes', {
          params: { query: { since: since ?? undefined, limit: PAGE_LIMIT } },
        });
        return data ?? null;
      },
      likeStates: async (ids) => {
        const states = [];
        for (let i = 0; i < ids.length; i += 500) {
          const { data } = await api.GET('/likes/state', { params: { query: { track_ids: ids.slice(i, i + 500) } } });
          if (!data) return null;
          states.push(...data);
        }
        return states;
      },
      knowsLike: likes.knows,
      applyLikes: (states) => states.forEach((state) => likes.set(state.track_id, state.liked)),
      tracks: fetchTracks,
      quality: undefined,
    };
    const outcome = await sync(deps).catch(() => null);
    if (outcome?.changed.length || outcome?.overLimit.length) await this.refresh();
    // Downloads a reload or a lost network cut short.
    for (const collection of this.collections) {
      if (collection.complete || this.#aborts.has(collection.key) || !navigator.onLine) continue;
      try {
        const tracks = await resolveTracks({ store, tracks: fetchTracks }, collection.trackIds);
        await this.save({ ...collection, tracks }, undefined);
      } catch {
        // Next time.
      }
    }
  }

  /** A like made here: the stored liked songs follow at once where they can. */
  async #likedHere(trackId: string, liked: boolean): Promise<void> {
    const collection = this.collection(collectionKey('liked'));
    if (!collection || !this.#store) return;
    const ids = collection.trackIds.filter((id) => id !== trackId);
    if (liked) ids.unshift(trackId);
    try {
      const tracks = await resolveTracks({ store: this.#store, tracks: fetchTracks }, ids);
      await this.save({ ...collection, tracks }, undefined);
    } catch {
      // Offline and the track unknown here: the next sync brings it.
    }
  }

  async #opened(): Promise<OfflineStore> {
    await this.#ready;
    if (!this.#store) throw new Error('offline storage is unavailable');
    return this.#store;
  }

  #forgetUrl(trackId: string) {
    const url = this.#urls.get(trackId);
    if (url) URL.revokeObjectURL(url);
    this.#urls.delete(trackId);
  }

  /** Signing out: the last events go out with the old token, then the user's data is cleared. */
  async #signedOut(): Promise<void> {
    const user = this.#user;
    const token = this.#token;
    const store = this.#store;
    clearInterval(this.#timer);
    for (const abort of this.#aborts.values()) abort.abort();
    this.#user = this.#token = this.#store = null;
    this.collections = [];
    this.#stored.clear();
    for (const id of [...this.#urls.keys()]) this.#forgetUrl(id);
    this.#ready = new Promise((resolve) => (this.#resolveReady = resolve));
    this.loaded = false;
    // A session that expired keeps its data for the same user's next sign-in.
    if (auth.expired || !user) return;
    await events.forget(user, token);
    await store?.clear();
  }
}

async function fetchAudio(trackId: string, signal?: AbortSignal): Promise<Blob> {
  // The listener's streaming quality is applied by the server when none is asked.
  const response = await fetch(streamUrl(trackId), { signal });
  if (!response.ok) throw new Error(`stream ${trackId}: ${response.status}`);
  return response.blob();
}

async function fetchCover(key: string): Promise<Blob | null> {
  const [kind, id] = key.split(':') as ['albums' | 'tracks', string];
  const response = await fetch(coverUrl(kind, id, 256));
  return response.ok ? response.blob() : null;
}

async function fetchTracks(ids: string[]): Promise<Track[]> {
  if (!navigator.onLine) throw new Error('offline');
  return readTracks(ids);
}

function throttle(fn: () => void, ms: number): () => void {
  let last = 0;
  return () => {
    const now = Date.now();
    if (now - last >= ms) {
      last = now;
      fn();
    }
  };
}

export const offline = new Offline();
