import { describe, expect, it } from 'vitest';
import * as q from './queue';

const track = (id: string): q.QueueTrack => ({
  id, title: `Title ${id}`, artist: 'A', artist_id: null, album: null, album_id: null, duration_ms: 1000, has_cover: false,
});
const ids = (state: q.QueueState) => state.entries.map((e) => e.track.id);
const tracks = (...names: string[]) => names.map(track);
/** A repeatable "random" so shuffles are checkable. */
function seeded(seed = 1): q.Random {
  return () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
}

class MemoryStorage implements Storage {
  #items = new Map<string, string>();
  get length() { return this.#items.size; }
  clear() { this.#items.clear(); }
  getItem(key: string) { return this.#items.get(key) ?? null; }
  key(i: number) { return [...this.#items.keys()][i] ?? null; }
  removeItem(key: string) { this.#items.delete(key); }
  setItem(key: string, value: string) { this.#items.set(key, value); }
}

describe('queue', () => {
  it('play now replaces the queue and starts where asked', () => {
    const s = q.playNow(q.add(q.empty(), tracks('x')), tracks('a', 'b', 'c'), 1);
    expect(ids(s)).toEqual(['a', 'b', 'c']);
    expect(q.current(s)?.track.id).toBe('b');
  });

  it('add appends and starts an empty queue at its first entry', () => {
    const s = q.add(q.empty(), tracks('a', 'b'));
    expect(ids(s)).toEqual(['a', 'b']);
    expect(s.index).toBe(0);
    expect(ids(q.add(s, tracks('c')))).toEqual(['a', 'b', 'c']);
  });

  it('play next inserts right after the current entry', () => {
    let s = q.jump(q.playNow(q.empty(), tracks('a', 'b', 'c')), 1);
    s = q.playNext(s, tracks('x', 'y'));
    expect(ids(s)).toEqual(['a', 'b', 'x', 'y', 'c']);
    expect(q.current(s)?.track.id).toBe('b');
  });

  it('the same track twice gets two entries with different keys', () => {
    const s = q.add(q.empty(), tracks('a', 'a'));
    expect(s.entries[0]!.key).not.toBe(s.entries[1]!.key);
  });

  it('remove keeps the current entry current, or makes the next one current', () => {
    const s = q.jump(q.playNow(q.empty(), tracks('a', 'b', 'c', 'd')), 2);
    const before = q.remove(s, 0);
    expect(ids(before)).toEqual(['b', 'c', 'd']);
    expect(q.current(before)?.track.id).toBe('c');
    const itself = q.remove(s, 2);
    expect(q.current(itself)?.track.id).toBe('d');
    const last = q.remove(q.jump(s, 3), 3);
    expect(q.current(last)?.track.id).toBe('c');
    expect(q.remove(q.playNow(q.empty(), tracks('a')), 0).index).toBe(-1);
  });

  it('clear keeps only what is playing', () => {
    const s = q.clear(q.jump(q.playNow(q.empty(), tracks('a', 'b', 'c')), 1));
    expect(ids(s)).toEqual(['b']);
    expect(s.index).toBe(0);
    expect(q.clear(q.empty()).index).toBe(-1);
  });

  it('reorder moves an entry and the current entry follows', () => {
    const s = q.jump(q.playNow(q.empty(), tracks('a', 'b', 'c', 'd')), 1);
    const moved = q.move(s, 3, 0);
    expect(ids(moved)).toEqual(['d', 'a', 'b', 'c']);
    expect(q.current(moved)?.track.id).toBe('b');
    const currentMoved = q.move(s, 1, 3);
    expect(ids(currentMoved)).toEqual(['a', 'c', 'd', 'b']);
    expect(currentMoved.index).toBe(3);
    expect(q.move(s, 0, 9)).toBe(s);
  });

  it('next and previous walk the queue and stop at its ends without repeat', () => {
    let s = q.playNow(q.empty(), tracks('a', 'b'));
    s = q.next(s, false)!;
    expect(q.current(s)?.track.id).toBe('b');
    expect(q.next(s, true)).toBeNull();
    s = q.previous(s);
    expect(q.current(s)?.track.id).toBe('a');
    expect(q.previous(s).index).toBe(0);
  });

  it('repeat all wraps around; repeat one replays at the end but Next moves on', () => {
    let s = q.cycleRepeat(q.jump(q.playNow(q.empty(), tracks('a', 'b')), 1));
    expect(s.repeat).toBe('all');
    expect(q.next(s, true)?.index).toBe(0);
    expect(q.previous(q.jump(s, 0)).index).toBe(1);
    s = q.cycleRepeat(s);
    expect(s.repeat).toBe('one');
    expect(q.next(s, true)?.index).toBe(1);
    expect(q.next(s, false)).toBeNull();
    expect(q.cycleRepeat(s).repeat).toBe('off');
  });

  it('shuffle keeps the current entry and the same entries; off restores the order', () => {
    const names = 'abcdefghij'.split('');
    const s = q.jump(q.playNow(q.empty(), tracks(...names)), 2);
    const on = q.setShuffle(s, true, seeded(7));
    expect(on.shuffle).toBe(true);
    expect(ids(on).slice(0, 3)).toEqual(['a', 'b', 'c']);
    expect(q.current(on)?.track.id).toBe('c');
    expect([...ids(on)].sort()).toEqual(names);
    expect(ids(on)).not.toEqual(names);
    const withAdded = q.add(on, tracks('z'));
    const off = q.setShuffle(withAdded, false);
    expect(ids(off)).toEqual([...names, 'z']);
    expect(q.current(off)?.track.id).toBe('c');
  });

  it('play now with shuffle on starts with the chosen track', () => {
    const s = q.playNow(q.setShuffle(q.empty(), true), tracks('a', 'b', 'c', 'd'), 2, seeded(3));
    expect(q.current(s)?.track.id).toBe('c');
    expect(s.index).toBe(2);
  });

  it('survives a reload through storage, and a damaged entry loads as empty', () => {
    const storage = new MemoryStorage();
    const s = q.cycleRepeat(q.jump(q.playNow(q.empty(), tracks('a', 'b')), 1));
    q.save(storage, s);
    expect(q.load(storage)).toEqual(s);
    storage.setItem('musiclib.queue.v1', '{not json');
    expect(q.load(storage)).toEqual(q.empty());
    q.forget(storage);
    expect(q.load(storage)).toEqual(q.empty());
  });

  it('keeps only the fields it needs of a track', () => {
    const full = { ...track('a'), storage_uri: 'audio/x', extra: 1 } as q.QueueTrack;
    expect(Object.keys(q.add(q.empty(), [full]).entries[0]!.track).sort()).toEqual(
      ['album', 'album_id', 'artist', 'artist_id', 'duration_ms', 'has_cover', 'id', 'title'],
    );
  });
});
