// Tracks by id, for lists that give only ids (likes, history, playlists): read 200 at a time
// (`GET /tracks?ids=`), and remembered for the session.
import { api, type Track } from './client';

const cache = new Map<string, Track>();
/** The most ids one read takes (the API's bound). */
const BATCH = 200;

/**
 * The tracks of `ids` in order (repeats kept); ids the server no longer has are left out.
 * Throws when the server could not be asked, so a caller that keeps things (offline) never
 * takes a failed read for tracks that are gone.
 */
export async function readTracks(ids: readonly string[]): Promise<Track[]> {
  const missing = [...new Set(ids.filter((id) => !cache.has(id)))];
  for (let i = 0; i < missing.length; i += BATCH) {
    const { data } = await api.GET('/tracks', { params: { query: { ids: missing.slice(i, i + BATCH).join(',') } } });
    if (!data) throw new Error('the tracks could not be read');
    for (const track of data.items) cache.set(track.id, track);
  }
  return ids.map((id) => cache.get(id)).filter((track): track is Track => track !== undefined);
}

/** As {@link readTracks}, for pages: a failed read shows the tracks already known. */
export async function tracksById(ids: readonly string[]): Promise<Track[]> {
  try {
    return await readTracks(ids);
  } catch {
    return ids.map((id) => cache.get(id)).filter((track): track is Track => track !== undefined);
  }
}

/** Forget a changed track (after an edit). */
export function forgetTrack(id: string): void {
  cache.delete(id);
}
