// The play queue as plain data and pure functions (no DOM, no Svelte), so the offline slice and
// the tests can use it as it is. Each function returns a new state; the store keeps one.
import type { components } from '../api/schema';

type Track = components['schemas']['TrackOut'];

/**
 * What the queue keeps of a track: enough to show it and to stream it, and its ReplayGain
 * (absent in a queue saved by an earlier release, or from a list that does not carry it).
 */
export type QueueTrack = Pick<
  Track,
  'id' | 'title' | 'artist' | 'artist_id' | 'album' | 'album_id' | 'duration_ms' | 'has_cover'
> &
  Partial<Pick<Track, 'replay_gain'>> & {
    /** Not a library track: a podcast episode or a radio station (player/episodes.ts). */
    media?: QueueMedia;
  };

/**
 * Where an entry that is not a library track plays from (`media`; a track has none). Such an entry is not a play (no
 * history, no scrobble), has no likes, lyrics or offline copy; `id` is the episode's or the
 * station's, `artist` the podcast's title (`album` unused).
 */
export type QueueMedia =
  | {
      kind: 'episode';
      podcast_id: string;
      /** The server's stream of the downloaded episode (without the token). */
      stream_url: string;
      /** The podcast's image on the server (without the token), if any. */
      cover_url: string | null;
      /** Where the listener stopped, when the entry was made. */
      position_ms: number | null;
    }
  | {
      kind: 'station';
      /** The server's relay of the station's stream (without the token). */
      stream_url: string;
      homepage_url: string | null;
    };

/** One place in the queue; `key` tells two entries of the same track apart. */
export interface QueueEntry {
  key: string;
  track: QueueTrack;
}

export type Repeat = 'off' | 'all' | 'one';

export interface QueueState {
  entries: QueueEntry[];
  /** Position of the current entry; -1 when the queue is empty. */
  index: number;
  shuffle: boolean;
  repeat: Repeat;
  /** The entries' keys in the order before shuffling, to restore it when shuffle goes off. */
  unshuffled: string[] | null;
}

export type Random = () => number;

let sequence = 0;
function entry(track: QueueTrack): QueueEntry {
  sequence += 1;
  return { key: `${Date.now().toString(36)}-${sequence}`, track: pick(track) };
}

export function pick(track: QueueTrack): QueueTrack {
  const { id, title, artist, artist_id, album, album_id, duration_ms, has_cover, replay_gain, media } = track;
  const picked: QueueTrack = { id, title, artist, artist_id, album, album_id, duration_ms, has_cover };
  if (replay_gain) picked.replay_gain = replay_gain;
  if (media && typeof media === 'object') picked.media = { ...media };
  return picked;
}

export function empty(): QueueState {
  return { entries: [], index: -1, shuffle: false, repeat: 'off', unshuffled: null };
}

export function current(state: QueueState): QueueEntry | null {
  return state.entries[state.index] ?? null;
}

/** Fisher–Yates over a copy. */
function shuffled<T>(items: T[], random: Random): T[] {
  const out = items.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** Replaces the queue with `tracks` and starts at `start` (shuffled after it when shuffle is on). */
export function playNow(state: QueueState, tracks: QueueTrack[], start = 0, random: Random = Math.random): QueueState {
  const entries = tracks.map(entry);
  if (entries.length === 0) return { ...empty(), shuffle: state.shuffle, repeat: state.repeat };
  const index = Math.min(Math.max(start, 0), entries.length - 1);
  const base: QueueState = { ...state, entries, index, unshuffled: null };
  return state.shuffle ? shuffleOn(base, random) : base;
}

/** Inserts right after the current entry. */
export function playNext(state: QueueState, tracks: QueueTrack[]): QueueState {
  const added = tracks.map(entry);
  const at = state.index + 1;
  const entries = [...state.entries.slice(0, at), ...added, ...state.entries.slice(at)];
  return withAdded(state, entries, added);
}

/** Appends at the end. */
export function add(state: QueueState, tracks: QueueTrack[]): QueueState {
  const added = tracks.map(entry);
  return withAdded(state, [...state.entries, ...added], added);
}

function withAdded(state: QueueState, entries: QueueEntry[], added: QueueEntry[]): QueueState {
  const unshuffled = state.unshuffled ? [...state.unshuffled, ...added.map((e) => e.key)] : null;
  return { ...state, entries, index: state.index < 0 && entries.length ? 0 : state.index, unshuffled };
}

/** Removes the entry at `position`; removing the current one makes the next current. */
export function remove(state: QueueState, position: number): QueueState {
  const removed = state.entries[position];
  if (!removed) return state;
  const entries = state.entries.filter((_, i) => i !== position);
  let index = state.index;
  if (position < index) index -= 1;
  if (index >= entries.length) index = entries.length - 1;
  const unshuffled = state.unshuffled?.filter((key) => key !== removed.key) ?? null;
  return { ...state, entries, index, unshuffled };
}

/** Empties what is up next and played before; the current entry stays (it is playing). */
export function clear(state: QueueState): QueueState {
  const now = current(state);
  if (!now) return { ...state, entries: [], index: -1, unshuffled: null };
  return { ...state, entries: [now], index: 0, unshuffled: state.unshuffled ? [now.key] : null };
}

/** Moves the entry at `from` to `to`; the current entry stays current wherever it goes. */
export function move(state: QueueState, from: number, to: number): QueueState {
  const n = state.entries.length;
  if (from < 0 || from >= n || to < 0 || to >= n || from === to) return state;
  const key = current(state)?.key;
  const entries = state.entries.slice();
  const [moved] = entries.splice(from, 1);
  entries.splice(to, 0, moved!);
  const index = entries.findIndex((e) => e.key === key);
  return { ...state, entries, index };
}

export function jump(state: QueueState, position: number): QueueState {
  if (position < 0 || position >= state.entries.length) return state;
  return { ...state, index: position };
}

/**
 * The position that follows the current one: `auto` is the end of a track (repeat one plays
 * it again), otherwise the listener pressed Next. null at the end of the queue.
 */
export function nextPosition(state: QueueState, auto: boolean): number | null {
  if (state.index < 0) return null;
  if (auto && state.repeat === 'one') return state.index;
  if (state.index + 1 < state.entries.length) return state.index + 1;
  return state.repeat === 'all' ? 0 : null;
}

export function next(state: QueueState, auto: boolean): QueueState | null {
  const position = nextPosition(state, auto);
  return position === null ? null : { ...state, index: position };
}

export function previous(state: QueueState): QueueState {
  if (state.index > 0) return { ...state, index: state.index - 1 };
  if (state.index === 0 && state.repeat === 'all') return { ...state, index: state.entries.length - 1 };
  return state;
}

/** Shuffle on: the entries after the current one in random order. Off: the order before. */
export function setShuffle(state: QueueState, on: boolean, random: Random = Math.random): QueueState {
  if (on === state.shuffle) return state;
  return on ? shuffleOn({ ...state, shuffle: true }, random) : shuffleOff(state);
}

function shuffleOn(state: QueueState, random: Random): QueueState {
  const unshuffled = state.entries.map((e) => e.key);
  const head = state.entries.slice(0, state.index + 1);
  const tail = shuffled(state.entries.slice(state.index + 1), random);
  return { ...state, shuffle: true, entries: [...head, ...tail], unshuffled };
}

function shuffleOff(state: QueueState): QueueState {
  const order = new Map((state.unshuffled ?? []).map((key, i) => [key, i]));
  const key = current(state)?.key;
  const entries = state.entries
    .map((e, i) => ({ e, rank: order.get(e.key) ?? order.size + i }))
    .sort((a, b) => a.rank - b.rank)
    .map(({ e }) => e);
  const index = entries.findIndex((e) => e.key === key);
  return { ...state, shuffle: false, entries, index, unshuffled: null };
}

export function cycleRepeat(state: QueueState): QueueState {
  const nextMode: Record<Repeat, Repeat> = { off: 'all', all: 'one', one: 'off' };
  return { ...state, repeat: nextMode[state.repeat] };
}

// Persistence: the queue survives a reload through a Storage (localStorage in the app).

const STORAGE_KEY = 'musiclib.queue.v1';

export function save(storage: Storage, state: QueueState): void {
  try {
    storage.setItem(STORAGE_KEY, JSON.stringify(state));
  } catch {
    // Storage full or refused: the queue just will not survive a reload.
  }
}

export function load(storage: Storage): QueueState {
  try {
    const raw = JSON.parse(storage.getItem(STORAGE_KEY) ?? 'null') as Partial<QueueState> | null;
    if (!raw || !Array.isArray(raw.entries)) return empty();
    const entries = raw.entries.filter(
      (e): e is QueueEntry => !!e && typeof e.key === 'string' && !!e.track && typeof e.track.id === 'string',
    );
    const index = typeof raw.index === 'number' && raw.index < entries.length ? raw.index : entries.length ? 0 : -1;
    const repeat: Repeat = raw.repeat === 'all' || raw.repeat === 'one' ? raw.repeat : 'off';
    const unshuffled = Array.isArray(raw.unshuffled) ? raw.unshuffled.filter((k) => typeof k === 'string') : null;
    return { entries, index, shuffle: raw.shuffle === true, repeat, unshuffled: raw.shuffle ? unshuffled : null };
  } catch {
    return empty();
  }
}

export function forget(storage: Storage): void {
  storage.removeItem(STORAGE_KEY);
}
