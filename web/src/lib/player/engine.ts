// Two <audio> elements: `current` plays, `next` holds the following track with preload=auto so
// it starts without a gap when the current one ends; then they swap roles. Both live in a
// hidden container; the current one is always the first <audio> of the document. Each plays at
// the user's volume times its track's ReplayGain factor (replaygain.ts).

export interface EngineEvents {
  time(position: number, duration: number): void;
  playing(playing: boolean): void;
  ended(): void;
  error(): void;
  seeked(): void;
}

export class Engine {
  #container: HTMLElement;
  #current: HTMLAudioElement;
  #next: HTMLAudioElement;
  #nextSrc: string | null = null;
  #events: EngineEvents;
  #volume = 1;
  /** The ReplayGain factor of the current track and of the preloaded one. */
  #gain = 1;
  #nextGain = 1;

  constructor(container: HTMLElement, events: EngineEvents) {
    this.#container = container;
    this.#events = events;
    this.#current = this.#make();
    this.#next = this.#make();
  }

  #make(): HTMLAudioElement {
    const audio = document.createElement('audio');
    audio.preload = 'auto';
    const mine = (fn: () => void) => () => {
      if (audio === this.#current) fn();
    };
    audio.addEventListener('timeupdate', mine(() => this.#events.time(audio.currentTime, audio.duration)));
    audio.addEventListener('durationchange', mine(() => this.#events.time(audio.currentTime, audio.duration)));
    audio.addEventListener('playing', mine(() => this.#events.playing(true)));
    audio.addEventListener('pause', mine(() => this.#events.playing(false)));
    audio.addEventListener('ended', mine(() => this.#events.ended()));
    audio.addEventListener('seeked', mine(() => this.#events.seeked()));
    audio.addEventListener('error', mine(() => this.#events.error()));
    this.#container.append(audio);
    return audio;
  }

  get position(): number {
    return this.#current.currentTime;
  }
  get duration(): number {
    return this.#current.duration;
  }
  get paused(): boolean {
    return this.#current.paused;
  }

  /**
   * Loads `src` into the current element (from the preloaded one when it holds it), to play
   * at `gain` (its ReplayGain factor) times the volume.
   */
  load(src: string, startAt = 0, gain = 1): void {
    if (this.#nextSrc === src) {
      this.#swap();
    } else {
      this.#current.src = src;
      if (startAt > 0) this.#current.currentTime = startAt;
    }
    this.#gain = gain;
    this.#apply();
  }

  /** Starts playback; a refused play() (autoplay policy) just stays paused. */
  async play(): Promise<void> {
    try {
      await this.#current.play();
    } catch {
      this.#events.playing(false);
    }
  }

  pause(): void {
    this.#current.pause();
  }

  /** Starts the preloaded next track at once (called on `ended`). */
  playPreloaded(src: string): boolean {
    if (this.#nextSrc !== src) return false;
    this.#swap();
    void this.play();
    return true;
  }

  seek(seconds: number): void {
    const limit = Number.isFinite(this.#current.duration) ? this.#current.duration : seconds;
    this.#current.currentTime = Math.max(0, Math.min(seconds, limit));
  }

  setVolume(volume: number): void {
    this.#volume = volume;
    this.#apply();
  }

  /** The ReplayGain factors of the current track and of the preloaded one (a mode change). */
  setGain(current: number, next: number): void {
    this.#gain = current;
    this.#nextGain = next;
    this.#apply();
  }

  /** Preloads the track after the current one (null: nothing follows), to play at `gain`. */
  preload(src: string | null, gain = 1): void {
    this.#nextGain = gain;
    this.#apply();
    if (src === this.#nextSrc) return;
    this.#nextSrc = src;
    if (src) {
      this.#next.src = src;
      this.#next.load();
    } else {
      this.#next.removeAttribute('src');
      this.#next.load();
    }
  }

  stop(): void {
    this.#current.pause();
    this.#current.removeAttribute('src');
    this.#current.load();
    this.preload(null);
  }

  #swap(): void {
    const old = this.#current;
    old.pause();
    this.#current = this.#next;
    this.#next = old;
    this.#nextSrc = null;
    this.#gain = this.#nextGain;
    this.#nextGain = 1;
    this.#apply();
    // The playing element stays where it is; the old one moves behind it, so the current is
    // the first <audio> in the document.
    this.#container.append(old);
    this.#events.time(this.#current.currentTime, this.#current.duration);
  }

  #apply(): void {
    const clamp = (value: number) => Math.max(0, Math.min(1, value));
    this.#current.volume = clamp(this.#volume * this.#gain);
    this.#next.volume = clamp(this.#volume * this.#nextGain);
  }
}
