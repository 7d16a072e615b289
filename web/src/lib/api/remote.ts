// Remote sources (a friend's Subsonic server, YouTube through yt-dlp): whether any is on, and
// turning a hit into a playable track: save it as a placeholder, have its audio fetched
// (materialize), wait until it is there.
import { api, errorMessage, type Schemas, type Track } from './client';

export type RemoteHit = Schemas['RemoteHitOut'];
export type Download = Schemas['DownloadOut'];

let searchable: Promise<string[]> | null = null;

/** The names of the remote sources this server can search (asked once a session). */
export function searchableSources(): Promise<string[]> {
  searchable ??= api.GET('/sources').then(({ data }) => {
    const names = (data ?? []).filter((source) => source.enabled && source.searchable).map((source) => source.name);
    // A failed answer is asked again next time.
    if (!data) searchable = null;
    return names;
  });
  return searchable;
}

/** A failure to show as it is: the server's message. */
export class RemoteError extends Error {}

/** The hit's track in the library: saved now as a placeholder when the library has none. */
export async function savedTrack(hit: Pick<RemoteHit, 'source' | 'source_id'>, trackId?: string | null): Promise<Track> {
  if (trackId) {
    const { data } = await api.GET('/tracks/{id}', { params: { path: { id: trackId } } });
    if (data) return data;
  }
  const { data, error } = await api.POST('/tracks/remote', { body: { source: hit.source, source_id: hit.source_id } });
  if (!data) throw new RemoteError(errorMessage(error, ''));
  return data;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The track with its audio: a placeholder's fetch is started (or joined) and waited for,
 * checking the track each second and the fetch's job for a failure. `alive` stops the wait.
 */
export async function materialized(track: Track, alive: () => boolean, timeoutMs = 300_000): Promise<Track | null> {
  if (track.availability === 'available') return track;
  const { data, error, response } = await api.POST('/tracks/{id}/materialize', { params: { path: { id: track.id } } });
  if (!data) throw new RemoteError(errorMessage(error, ''));
  if (response.status === 200 && 'availability' in data) return data;
  const jobId = 'job_id' in data ? data.job_id : null;
  const deadline = Date.now() + timeoutMs;
  while (alive() && Date.now() < deadline) {
    await sleep(1000);
    const { data: now } = await api.GET('/tracks/{id}', { params: { path: { id: track.id } } });
    if (now?.availability === 'available') return now;
    if (jobId) {
      const { data: job } = await api.GET('/jobs/{id}', { params: { path: { id: jobId } } });
      if (job?.state === 'failed') throw new RemoteError(job.error ?? '');
    }
  }
  return null;
}

/** A download that may still change. */
export function live(download: Download): boolean {
  return download.state === 'queued' || download.state === 'downloading' || download.state === 'retrying';
}
