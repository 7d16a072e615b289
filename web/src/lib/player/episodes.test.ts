import { describe, expect, it } from 'vitest';
import { PositionSaver, SAVE_EVERY, episodeItem, isEpisode, isStation, resumeAt, stationItem } from './episodes';
import { load, pick, playNow, empty, save } from './queue';
import { webLink } from '../links';

const podcast = { id: 'p1', title: 'The Show', cover_url: '/api/v1/podcasts/p1/cover' };
const episode = {
  id: 'e1',
  podcast_id: 'p1',
  title: 'Episode one',
  enclosure_url: 'https://example.com/e1.mp3',
  status: 'downloaded',
  downloaded_bytes: 100,
  duration_ms: 600_000,
  position_ms: 120_000,
  stream_url: '/api/v1/podcast-episodes/e1/stream',
};

describe('episode and station queue items', () => {
  it('makes a downloaded episode an entry with its stream, podcast and place', () => {
    const item = episodeItem(episode, podcast)!;
    expect(item).toMatchObject({ id: 'e1', title: 'Episode one', artist: 'The Show', duration_ms: 600_000 });
    expect(item.media).toEqual({
      kind: 'episode',
      podcast_id: 'p1',
      stream_url: '/api/v1/podcast-episodes/e1/stream',
      cover_url: '/api/v1/podcasts/p1/cover',
      position_ms: 120_000,
    });
    expect(isEpisode(item)).toBe(true);
    expect(isStation(item)).toBe(false);
  });

  it('has no entry for an episode that is not downloaded', () => {
    expect(episodeItem({ ...episode, status: 'new', stream_url: null }, podcast)).toBeNull();
    expect(episodeItem({ ...episode, status: 'downloading' }, podcast)).toBeNull();
  });

  it('plays a station through the server relay, never its own URL', () => {
    const item = stationItem({ id: 'a b', name: 'Jazz', homepage_url: null });
    expect(item.media).toEqual({ kind: 'station', stream_url: '/api/v1/radio-stations/a%20b/stream', homepage_url: null });
    expect(isStation(item)).toBe(true);
    expect(item.duration_ms).toBeNull();
  });

  it('keeps the media through pick, the queue and its persistence', () => {
    const item = episodeItem(episode, podcast)!;
    expect(pick(item).media).toEqual(item.media);
    const state = playNow(empty(), [item]);
    const storage = new Map<string, string>();
    const fake = {
      getItem: (k: string) => storage.get(k) ?? null,
      setItem: (k: string, v: string) => void storage.set(k, v),
      removeItem: (k: string) => void storage.delete(k),
    } as unknown as Storage;
    save(fake, state);
    expect(load(fake).entries[0]!.track.media).toEqual(item.media);
  });

  it('drops a track’s own `source` field (a string) when picking', () => {
    const track = { id: 't', title: 'T', has_cover: false, source: 'local' } as never;
    expect(pick(track).media).toBeUndefined();
    expect('source' in pick(track)).toBe(false);
  });
});

describe('resumeAt', () => {
  it('starts at the saved place', () => {
    expect(resumeAt(120_000, 600_000)).toBe(120);
  });
  it('starts over with no place, or at the very end', () => {
    expect(resumeAt(null, 600_000)).toBe(0);
    expect(resumeAt(0, 600_000)).toBe(0);
    expect(resumeAt(597_000, 600_000)).toBe(0);
    expect(resumeAt(50_000, null)).toBe(50);
  });
});

describe('PositionSaver', () => {
  /** Time updates every 0.25 s from `from` to `to` seconds; the positions saved. */
  function play(saver: PositionSaver, from: number, to: number): number[] {
    const saved: number[] = [];
    for (let at = from; at <= to + 1e-9; at += 0.25) {
      const ms = saver.tick(at);
      if (ms !== null) saved.push(ms);
    }
    return saved;
  }

  it('saves every 15 s of playing', () => {
    const saver = new PositionSaver();
    saver.start('e1');
    const saved = play(saver, 0, 46);
    expect(saved).toEqual([15_000, 30_000, 45_000]);
    expect(SAVE_EVERY).toBe(15);
  });

  it('counts from the resumed place, not from zero', () => {
    const saver = new PositionSaver();
    saver.start('e1');
    expect(play(saver, 120, 134)).toEqual([]);
    expect(play(saver, 134.25, 136)).toEqual([135_000]);
  });

  it('does not count a seek as listening', () => {
    const saver = new PositionSaver();
    saver.start('e1');
    expect(play(saver, 0, 10)).toEqual([]);
    expect(saver.tick(300)).toBeNull(); // jumped forward
    expect(play(saver, 300.25, 304)).toEqual([]);
    expect(play(saver, 304.25, 306)).toEqual([305_000]);
  });

  it('saves on pause and at the end, once for the same place', () => {
    const saver = new PositionSaver();
    saver.start('e1');
    play(saver, 0, 7);
    expect(saver.pause(7.1)).toBe(7_100);
    expect(saver.pause(7.1)).toBeNull();
    expect(saver.end(600)).toBe(600_000);
    // The pause restarts the count: 15 s after it.
    const again = new PositionSaver();
    again.start('e2');
    play(again, 0, 10);
    again.pause(10);
    expect(play(again, 10, 24)).toEqual([]);
    expect(play(again, 24.25, 26)).toEqual([25_000]);
  });

  it('saves nothing for a track (no episode)', () => {
    const saver = new PositionSaver();
    saver.start(null);
    expect(play(saver, 0, 40)).toEqual([]);
    expect(saver.pause(40)).toBeNull();
    expect(saver.end(40)).toBeNull();
    expect(saver.id).toBeNull();
  });
});

describe('webLink', () => {
  it('keeps http and https links only', () => {
    expect(webLink('https://example.com/show')).toBe('https://example.com/show');
    expect(webLink('http://example.com')).toBe('http://example.com/');
    expect(webLink('javascript:alert(1)')).toBeNull();
    expect(webLink('data:text/html,x')).toBeNull();
    expect(webLink('not a url')).toBeNull();
    expect(webLink(null)).toBeNull();
  });
});
