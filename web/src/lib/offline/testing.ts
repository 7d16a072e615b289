// Helpers of the offline slice's unit tests: tracks, a fake server's audio, a fresh database.
import type { Track } from '../api/client';
import { open } from './db';
import type { Fetchers } from './store';

let databases = 0;

/** A new, empty database (fake-indexeddb) for one test. */
export function freshDatabase(): { name: string; open: () => Promise<IDBDatabase> } {
  const name = `offline-test-${++databases}-${Math.random().toString(36).slice(2)}`;
  return { name, open: () => open(name) };
}

/** A track as the API sends it, with what the store reads. */
export function track(id: string, sizeBytes = 1000, extra: Partial<Track> = {}): Track {
  return {
    id,
    title: `Title ${id}`,
    artist: 'Artist',
    album: 'Album',
    album_id: 'album-1',
    duration_ms: 180_000,
    size_bytes: sizeBytes,
    has_cover: false,
    ...extra,
  } as Track;
}

/** A server whose stream of each track is `sizes[id]` bytes; it counts what was fetched. */
export function fakeServer(sizes: Record<string, number>): Fetchers & { fetched: string[]; fail: Set<string> } {
  const fetched: string[] = [];
  const fail = new Set<string>();
  return {
    fetched,
    fail,
    async audio(trackId) {
      if (fail.has(trackId)) throw new TypeError('Failed to fetch');
      fetched.push(trackId);
      return new Blob([new Uint8Array(sizes[trackId] ?? 1000)], { type: 'audio/ogg' });
    },
    async cover() {
      return new Blob([new Uint8Array(100)], { type: 'image/jpeg' });
    },
  };
}
