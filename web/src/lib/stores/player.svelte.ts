// The player: the queue (pure functions in player/queue.ts) plus the audio engine, the media
// session and play recording. Components call its methods and read its fields.
import * as q from '../player/queue';
import { Engine } from '../player/engine';
import { PlayTracker } from '../player/plays';
import * as session from '../player/media-session';
import { streamUrl, type Quality } from '../api/media';
import { api } from '../api/client';
import { eventId } from '../ids';
import { toast } from './toast.svelte';
import { t } from '../messages';
import { auth } from './auth.svelte';

const POSITION_KEY = 'musiclib.position.v1';
const VOLUME_KEY = 'musiclib.volume';

class PlayerStore {
  queue = $state<q.QueueState>(q.load(localStorage));
  playing = $state(false);
  position = $state(0);
  duration = $state(0);
  volume = $state(Number(localStorage.getItem(VOLUME_KEY) ?? '1'));
  /** The user's streaming quality (settings); undefined: the server applies it itself. */
  quality = $state<Quality | undefined>(undefined);
  queueOpen = $state(false);

  #engine: Engine | null = null;
  #plays = new PlayTracker();
  #lastSavedPosition = 0;

  get current(): q.QueueTrack | null {
    return q.current(this.queue)?.track ?? null;
  }

  /** Creates the audio elements inside `container` and restores the saved track, paused. */
  attach = (container: HTMLElement) => {
    if (this.#engine) return;
    this.#engine = new Engine(container, {
      time: (position, duration) => this.#time(position, duration),
      playing: (playing) => {
        this.playing = playing;
        if (!playing) this.#plays.paused();
        this.#session();
      },
      ended: () => this.#advance(true),
      error: () => {
        toast.say(t.playFailed);
        this.#advance(false);
      },
      seeked: () => {
        this.#plays.seeked();
        this.#session();
      },
    });
    this.#engine.setVolume(this.volume);
    session.bindActions({
      play: () => void this.play(),
      pause: this.pause,
      next: this.next,
      previous: this.previous,
      seek: this.seek,
      seekBy: this.seekBy,
    });
    const now = this.current;
    if (now) {
      const saved = Number(localStorage.getItem(POSITION_KEY) ?? '0');
      this.#engine.load(streamUrl(now.id, this.quality), Number.isFinite(saved) ? saved : 0);
      this.position = saved;
      session.showTrack(now);
      this.#preload();
    }
    addEventListener('pagehide', () => this.#savePosition(true));
  };

  // Queue operations --------------------------------------------------------------------------

  playTracks = (tracks: q.QueueTrack[], start = 0) => {
    this.#set(q.playNow(this.queue, tracks, start));
    this.#start();
  };
  playNext = (tracks: q.QueueTrack[]) => {
    const wasEmpty = this.queue.index < 0;
    this.#set(q.playNext(this.queue, tracks));
    if (wasEmpty) this.#start();
    else toast.say(t.willPlayNext);
  };
  addToQueue = (tracks: q.QueueTrack[]) => {
    const wasEmpty = this.queue.index < 0;
    this.#set(q.add(this.queue, tracks));
    if (wasEmpty) this.#start();
    else toast.say(t.addedToQueue);
  };
  remove = (position: number) => {
    const wasCurrent = position === this.queue.index;
    this.#set(q.remove(this.queue, position));
    if (wasCurrent) {
      if (this.current) this.#start(this.playing);
      else this.#engine?.stop();
    }
  };
  clear = () => this.#set(q.clear(this.queue));
  move = (from: number, to: number) => this.#set(q.move(this.queue, from, to));
  jump = (position: number) => {
    this.#set(q.jump(this.queue, position));
    this.#start();
  };
  toggleShuffle = () => this.#set(q.setShuffle(this.queue, !this.queue.shuffle));
  cycleRepeat = () => this.#set(q.cycleRepeat(this.queue));

  // Transport -----------------------------------------------------------------------------------

  play = async () => {
    if (!this.current) return;
    await this.#engine?.play();
  };
  pause = () => this.#engine?.pause();
  toggle = () => (this.playing ? this.pause() : void this.play());
  next = () => this.#advance(false);
  previous = () => {
    // Like every player: past the first seconds, Previous restarts the track.
    if (this.position > 3) return this.seek(0);
    const before = this.queue.index;
    this.#set(q.previous(this.queue));
    if (this.queue.index !== before) this.#start();
    else this.seek(0);
  };
  seek = (seconds: number) => {
    this.#engine?.seek(seconds);
    this.position = seconds;
  };
  seekBy = (seconds: number) => this.seek(Math.max(0, this.position + seconds));
  setVolume = (volume: number) => {
    this.volume = Math.max(0, Math.min(1, volume));
    this.#engine?.setVolume(this.volume);
    localStorage.setItem(VOLUME_KEY, String(this.volume));
  };

  /** Signing out: nothing of the last user's queue stays. */
  reset = () => {
    this.#engine?.stop();
    this.queue = q.empty();
    q.forget(localStorage);
    localStorage.removeItem(POSITION_KEY);
    this.position = 0;
    this.duration = 0;
    session.showTrack(null);
  };

  // Inside ------------------------------------------------------------------------------------

  #set(state: q.QueueState) {
    this.queue = state;
    q.save(localStorage, state);
    this.#preload();
  }

  #start(autoplay = true) {
    const now = this.current;
    if (!now || !this.#engine) return;
    this.#engine.load(streamUrl(now.id, this.quality));
    this.position = 0;
    this.duration = (now.duration_ms ?? 0) / 1000;
    this.#plays.start();
    session.showTrack(now);
    this.#savePosition(true);
    if (autoplay) void this.#engine.play();
    this.#preload();
  }

  #advance(auto: boolean) {
    const following = q.next(this.queue, auto);
    if (!following) {
      // The end of the queue: stop at the start of the last track.
      this.pause();
      if (auto) this.seek(0);
      return;
    }
    const sameEntry = following.index === this.queue.index;
    this.queue = following;
    q.save(localStorage, following);
    const now = this.current!;
    if (sameEntry) {
      this.seek(0);
      this.#plays.start();
      void this.play();
      return;
    }
    if (this.#engine?.playPreloaded(streamUrl(now.id, this.quality))) {
      this.position = 0;
      this.#plays.start();
      session.showTrack(now);
      this.#preload();
    } else {
      this.#start();
    }
  }

  #preload() {
    const position = q.nextPosition(this.queue, true);
    const following = position === null || position === this.queue.index ? null : this.queue.entries[position];
    this.#engine?.preload(following ? streamUrl(following.track.id, this.quality) : null);
  }

  #time(position: number, duration: number) {
    this.position = position;
    if (Number.isFinite(duration) && duration > 0) this.duration = duration;
    this.#savePosition(false);
    const play = this.playing ? this.#plays.update(position, this.duration) : null;
    const now = this.current;
    if (play && now) void this.#record(now.id, play.playedAt, play.seconds);
  }

  async #record(trackId: string, playedAt: Date, seconds: number) {
    // Plays are best effort while online; the offline slice moves them to an outbox.
    await api.POST('/history', {
      body: { client_event_id: eventId(), track_id: trackId, played_at: playedAt.toISOString(), seconds_played: seconds },
    });
  }

  #savePosition(force: boolean) {
    if (!force && Math.abs(this.position - this.#lastSavedPosition) < 5) return;
    this.#lastSavedPosition = this.position;
    localStorage.setItem(POSITION_KEY, String(Math.floor(this.position)));
  }

  #lastSession = 0;
  #session() {
    const now = Date.now();
    if (now - this.#lastSession < 1000 && this.playing) return;
    this.#lastSession = now;
    session.showState(this.playing, this.position, this.duration);
  }
}

export const player = new PlayerStore();
auth.onSignOut(() => player.reset());
