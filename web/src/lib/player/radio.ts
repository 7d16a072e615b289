// The radio: an endless queue fed by `POST /radio` and `POST /radio/next`. The server keeps no
// session, so the client keeps it: the seed, every track id the radio has given (sent back as
// `exclude_ids`) and why each one came (its reasons, shown in the queue and on Now playing).
// Plain data and pure functions, like queue.ts; the player store holds one state.
import type { components } from '../api/schema';

export type Reason = components['schemas']['ReasonOut'];
type RadioIn = components['schemas']['RadioIn'];
type RadioItem = components['schemas']['RadioItemOut'];

/** Where the radio starts: one track, or the listener's likes. */
export type RadioSeed = { kind: 'track'; id: string; title: string; artist: string | null } | { kind: 'likes' };

export interface RadioState {
  seed: RadioSeed;
  /** Every track id given so far (the seed first), oldest first. */
  seen: string[];
  /** Why each given track came, by track id. */
  reasons: Record<string, Reason[]>;
  /** Batches asked for so far (the first is `POST /radio`, the next ones `/radio/next`). */
  batches: number;
  /** The server had nothing more to give, even with only the last tracks excluded. */
  ended: boolean;
}

/** Tracks asked for per batch. */
export const BATCH = 20;
/** Another batch is asked for when fewer tracks than this are left after the current one. */
export const LOW_WATER = 5;
/** The API's bound on `exclude_ids`. */
export const MAX_EXCLUDE = 5000;
/**
 * When the library is used up, the radio starts over, excluding only this many recent tracks
 * (so it stays endless without repeating what just played).
 */
export const RECENT = 10;

export function begin(seed: RadioSeed): RadioState {
  return { seed, seen: seed.kind === 'track' ? [seed.id] : [], reasons: {}, batches: 0, ended: false };
}

/** The request for the next batch: the seed, and the ids not to answer (newest kept). */
export function request(state: RadioState, queued: readonly string[], recentOnly = false): RadioIn {
  const ids = recentOnly ? queued.slice(-RECENT) : [...new Set([...state.seen, ...queued])];
  const body: RadioIn = { exclude_ids: ids.slice(-MAX_EXCLUDE), count: BATCH };
  if (state.seed.kind === 'track') body.seed_track_id = state.seed.id;
  return body;
}

/** Whether the queue needs another batch: `remaining` entries are left after the current one. */
export function needsMore(state: RadioState | null, remaining: number): boolean {
  return !!state && !state.ended && remaining < LOW_WATER;
}

/** The state after a batch arrived; `items` may be empty (then `ended` when it was a restart). */
export function absorb(state: RadioState, items: readonly RadioItem[], wasRestart = false): RadioState {
  const reasons = { ...state.reasons };
  const seen = state.seen.slice();
  for (const item of items) {
    reasons[item.track.id] = item.reasons;
    if (!seen.includes(item.track.id)) seen.push(item.track.id);
  }
  // Keep the stored session small: what the API would take back, and the reasons of those.
  const kept = seen.slice(-MAX_EXCLUDE);
  const keptReasons: Record<string, Reason[]> = {};
  for (const id of kept) if (reasons[id]) keptReasons[id] = reasons[id]!;
  return {
    ...state,
    seen: kept,
    reasons: keptReasons,
    batches: state.batches + 1,
    ended: items.length === 0 && wasRestart,
  };
}

// Persistence, beside the queue's: a reload keeps the radio going.

const STORAGE_KEY = 'musiclib.radio.v1';

export function save(storage: Storage, state: RadioState | null): void {
  try {
    if (state) storage.setItem(STORAGE_KEY, JSON.stringify(state));
    else storage.removeItem(STORAGE_KEY);
  } catch {
    // Storage full or refused: the radio just stops at a reload.
  }
}

export function load(storage: Storage): RadioState | null {
  try {
    const raw = JSON.parse(storage.getItem(STORAGE_KEY) ?? 'null') as Partial<RadioState> | null;
    if (!raw || !raw.seed || !Array.isArray(raw.seen) || typeof raw.reasons !== 'object' || !raw.reasons) return null;
    const seed = raw.seed;
    if (seed.kind !== 'likes' && !(seed.kind === 'track' && typeof seed.id === 'string')) return null;
    return {
      seed,
      seen: raw.seen.filter((id): id is string => typeof id === 'string'),
      reasons: raw.reasons,
      batches: typeof raw.batches === 'number' ? raw.batches : 1,
      ended: raw.ended === true,
    };
  } catch {
    return null;
  }
}
