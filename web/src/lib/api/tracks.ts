// Tracks by id, for lists that give only ids (likes, history, playlists): read one by one
// (the API has no batch read), a few at a time, and remembered for the session.
import { api, type Track } from './client';

const cache = new Map<string, Promise<Track | null>>();
const PARALLEL = 6;

function one(id: string): Promise<Track | null> {
  let hit = cache.get(id);
  if (!hit) {
    hit = api.GET('/tracks/{id}', { params: { path: { id } } }).then(({ data }) => data ?? null);
    cache.set(id, hit);
    void hit.then((track) => track ?? cache.delete(id));
  }
  return hit;
}

/** The tracks of `ids` in order; ids the server no longer has are left out. */
export async function tracksById(ids: readonly string[]): Promise<Track[]> {
  const out: (Track | null)[] = new Array(ids.length).fill(null);
  let next = 0;
  async function worker() {
    while (next < ids.length) {
      const i = next++;
      out[i] = await one(ids[i]!);
    }
  }
  await Promise.all(Array.from({ length: Math.min(PARALLEL, ids.length) }, worker));
  return out.filter((track): track is Track => track !== null);
}

/** Forget a changed track (after an edit). */
export function forgetTrack(id: string): void {
  cache.delete(id);
}
