// When a play counts (docs/api.md, "Scrobbling"): played for half its length or four minutes,
// whichever comes first. The tracker sums the time actually listened (a seek forward does not
// count) and says once per track start when the threshold is crossed.
export const FOUR_MINUTES = 240;

export class PlayTracker {
  #listened = 0;
  #last: number | null = null;
  #reported = false;
  #startedAt = new Date();

  /** A new track started (or the same one again). */
  start(now = new Date()): void {
    this.#listened = 0;
    this.#last = null;
    this.#reported = false;
    this.#startedAt = now;
  }

  /** A seek: the next time update is not listening time. */
  seeked(): void {
    this.#last = null;
  }

  /** Paused: as a seek, the gap until playing again is not listening time. */
  paused(): void {
    this.#last = null;
  }

  /**
   * A playback time update; returns the play to record when it now counts (once per start).
   */
  update(position: number, durationSeconds: number): { playedAt: Date; seconds: number } | null {
    if (this.#last !== null) {
      const step = position - this.#last;
      // Only small forward steps are listening; a jump is a seek the browser did not announce.
      if (step > 0 && step < 5) this.#listened += step;
    }
    this.#last = position;
    if (this.#reported) return null;
    const threshold = Number.isFinite(durationSeconds) && durationSeconds > 0
      ? Math.min(durationSeconds / 2, FOUR_MINUTES)
      : FOUR_MINUTES;
    if (this.#listened >= threshold) {
      this.#reported = true;
      return { playedAt: this.#startedAt, seconds: Math.round(this.#listened * 10) / 10 };
    }
    return null;
  }
}
