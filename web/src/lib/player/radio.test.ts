import { describe, expect, it } from 'vitest';
import * as radio from './radio';

type Item = Parameters<typeof radio.absorb>[1][number];

const item = (id: string, reasons: radio.Reason[] = ['same_genre']): Item =>
  ({ track: { id, title: `Title ${id}` }, reasons, score: 1 }) as unknown as Item;

class MemoryStorage implements Storage {
  #items = new Map<string, string>();
  get length() { return this.#items.size; }
  clear() { this.#items.clear(); }
  getItem(key: string) { return this.#items.get(key) ?? null; }
  key(i: number) { return [...this.#items.keys()][i] ?? null; }
  removeItem(key: string) { this.#items.delete(key); }
  setItem(key: string, value: string) { this.#items.set(key, value); }
}

const seed: radio.RadioSeed = { kind: 'track', id: 's', title: 'Seed', artist: 'A' };

describe('radio', () => {
  it('asks from the seed, excluding what it gave and what is queued', () => {
    let state = radio.begin(seed);
    expect(radio.request(state, [])).toEqual({ seed_track_id: 's', exclude_ids: ['s'], count: radio.BATCH });
    state = radio.absorb(state, [item('a'), item('b', ['liked', 'same_artist'])]);
    expect(state.seen).toEqual(['s', 'a', 'b']);
    expect(state.reasons['b']).toEqual(['liked', 'same_artist']);
    expect(radio.request(state, ['x', 'a']).exclude_ids).toEqual(['s', 'a', 'b', 'x']);
  });

  it('a radio from the likes sends no seed', () => {
    const state = radio.begin({ kind: 'likes' });
    expect(radio.request(state, [])).toEqual({ exclude_ids: [], count: radio.BATCH });
  });

  it('wants more near the end of the queue, never once it ended', () => {
    const state = radio.begin(seed);
    expect(radio.needsMore(state, radio.LOW_WATER)).toBe(false);
    expect(radio.needsMore(state, radio.LOW_WATER - 1)).toBe(true);
    expect(radio.needsMore(null, 0)).toBe(false);
    // An empty batch is not the end: the store asks again excluding only the recent tracks.
    const empty = radio.absorb(state, []);
    expect(empty.ended).toBe(false);
    const restart = radio.request(empty, Array.from({ length: 30 }, (_, i) => `q${i}`), true);
    expect(restart.exclude_ids).toHaveLength(radio.RECENT);
    expect(restart.exclude_ids!.at(-1)).toBe('q29');
    // Empty even then: the radio ended.
    const ended = radio.absorb(empty, [], true);
    expect(ended.ended).toBe(true);
    expect(radio.needsMore(ended, 0)).toBe(false);
  });

  it('keeps at most what the API takes back', () => {
    let state = radio.begin(seed);
    state = radio.absorb(state, Array.from({ length: radio.MAX_EXCLUDE + 10 }, (_, i) => item(`t${i}`)));
    expect(state.seen).toHaveLength(radio.MAX_EXCLUDE);
    expect(Object.keys(state.reasons)).toHaveLength(radio.MAX_EXCLUDE);
    expect(radio.request(state, ['extra']).exclude_ids).toHaveLength(radio.MAX_EXCLUDE);
    expect(radio.request(state, ['extra']).exclude_ids!.at(-1)).toBe('extra');
  });

  it('survives a reload, and forgets a broken record', () => {
    const storage = new MemoryStorage();
    const state = radio.absorb(radio.begin(seed), [item('a')]);
    radio.save(storage, state);
    expect(radio.load(storage)).toEqual(state);
    radio.save(storage, null);
    expect(radio.load(storage)).toBeNull();
    storage.setItem('musiclib.radio.v1', '{"seed":{"kind":"track"},"seen":[],"reasons":{}}');
    expect(radio.load(storage)).toBeNull();
    storage.setItem('musiclib.radio.v1', 'not json');
    expect(radio.load(storage)).toBeNull();
  });
});
