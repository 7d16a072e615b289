// Podcast episodes and radio stations in the queue (entries with a `media`, see queue.ts), and
// when the place in an episode is saved to the server: every SAVE_EVERY seconds of playing, on
// pause and at the end. Plain TS, no DOM, for the tests.
import type { components } from '../api/schema';
import type { QueueTrack } from './queue';

type Episode = components['schemas']['EpisodeOut'];
type Podcast = Pick<components['schemas']['PodcastOut'], 'id' | 'title' | 'cover_url'>;
type Station = components['schemas']['StationOut'];

/** Seconds of playing between two saves of the place in an episode. */
export const SAVE_EVERY = 15;

/** A downloaded episode as a queue entry (null when it cannot play: not downloaded). */
export function episodeItem(episode: Episode, podcast: Podcast): QueueTrack | null {
  if (episode.status !== 'downloaded' || !episode.stream_url) return null;
  return {
    id: episode.id,
    title: episode.title,
    artist: podcast.title,
    artist_id: null,
    album: null,
    album_id: null,
    duration_ms: episode.duration_ms ?? null,
    has_cover: !!podcast.cover_url,
    media: {
      kind: 'episode',
      podcast_id: podcast.id,
      stream_url: episode.stream_url,
      cover_url: podcast.cover_url ?? null,
      position_ms: episode.position_ms ?? null,
    },
  };
}

/** A station as a queue entry: its stream comes through the server's relay. */
export function stationItem(station: Pick<Station, 'id' | 'name' | 'homepage_url'>): QueueTrack {
  return {
    id: station.id,
    title: station.name,
    artist: null,
    artist_id: null,
    album: null,
    album_id: null,
    duration_ms: null,
    has_cover: false,
    media: {
      kind: 'station',
      stream_url: `/api/v1/radio-stations/${encodeURIComponent(station.id)}/stream`,
      homepage_url: station.homepage_url ?? null,
    },
  };
}

export const isEpisode = (track: QueueTrack | null | undefined): boolean => track?.media?.kind === 'episode';
export const isStation = (track: QueueTrack | null | undefined): boolean => track?.media?.kind === 'station';

/**
 * Where an episode starts, in seconds: the saved place, unless it is (nearly) at the end, where
 * it starts over.
 */
export function resumeAt(positionMs: number | null | undefined, durationMs: number | null | undefined): number {
  if (!positionMs || positionMs < 0) return 0;
  if (durationMs && positionMs >= durationMs - 5000) return 0;
  return positionMs / 1000;
}

/**
 * When to save the place in the playing episode. `tick` on each time update while playing,
 * `pause` and `end` on those events: each answers the position to save in ms, or null.
 */
export class PositionSaver {
  /** The episode, and the playing seconds since the last save. */
  #id: string | null = null;
  #since = 0;
  #last: number | null = null;
  #lastSaved: number | null = null;

  /** A new episode starts (or none: a track). */
  start(id: string | null): void {
    this.#id = id;
    this.#since = 0;
    this.#last = null;
    this.#lastSaved = null;
  }

  get id(): string | null {
    return this.#id;
  }

  /** A time update at `position` seconds while playing. */
  tick(position: number): number | null {
    if (!this.#id || !Number.isFinite(position)) return null;
    // Only time that played counts (a seek is a jump, not listening).
    if (this.#last !== null) {
      const step = position - this.#last;
      if (step > 0 && step < 2) this.#since += step;
    }
    this.#last = position;
    if (this.#since < SAVE_EVERY) return null;
    return this.#save(position);
  }

  /** Paused at `position` seconds. */
  pause(position: number): number | null {
    if (!this.#id || !Number.isFinite(position)) return null;
    return this.#save(position);
  }

  /** The end of the episode (`duration` seconds). */
  end(duration: number): number | null {
    if (!this.#id || !Number.isFinite(duration)) return null;
    return this.#save(duration);
  }

  #save(position: number): number | null {
    this.#since = 0;
    const ms = Math.max(0, Math.round(position * 1000));
    if (ms === this.#lastSaved) return null;
    this.#lastSaved = ms;
    return ms;
  }
}
