import { describe, expect, it } from 'vitest';
import { PlayTracker } from './plays';

function listen(tracker: PlayTracker, from: number, to: number, duration: number) {
  let result = null;
  for (let t = from; t <= to; t += 0.25) result = tracker.update(t, duration) ?? result;
  return result;
}

describe('when a play counts', () => {
  it('counts at half a short track, once', () => {
    const tracker = new PlayTracker();
    tracker.start();
    expect(listen(tracker, 0, 49, 100)).toBeNull();
    const play = listen(tracker, 49.25, 51, 100);
    expect(play?.seconds).toBeGreaterThanOrEqual(50);
    expect(listen(tracker, 51.25, 90, 100)).toBeNull();
  });

  it('counts at four minutes of a long track', () => {
    const tracker = new PlayTracker();
    tracker.start();
    expect(listen(tracker, 0, 239, 1200)).toBeNull();
    expect(listen(tracker, 239.25, 241, 1200)).not.toBeNull();
  });

  it('does not count a seek forward as listening', () => {
    const tracker = new PlayTracker();
    tracker.start();
    listen(tracker, 0, 10, 100);
    tracker.seeked();
    expect(listen(tracker, 80, 99, 100)).toBeNull();
  });

  it('counts again after a restart', () => {
    const tracker = new PlayTracker();
    tracker.start();
    expect(listen(tracker, 0, 60, 100)).not.toBeNull();
    tracker.start();
    expect(listen(tracker, 0, 60, 100)).not.toBeNull();
  });
});
