// The player: the queue (pure functions in player/queue.ts) plus the audio engine, the media
// session and play recording. Components call its methods and read its fields.
import * as q from '../player/queue';
import * as radio from '../player/radio';
import { Engine } from '../player/engine';
import { PlayTracker } from '../player/plays';
import * as session from '../player/media-session';
import { streamUrl, withToken, type Quality } from '../api/media';
import { PositionSaver, isStation, resumeAt } from '../player/episodes';
import { gainFactor, type ReplayGainMode } from '../player/replaygain';
import { api } from '../api/client';
import { events } from '../offline/events.svelte';
import { offline } from '../offline/offline.svelte';
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
  /** How ReplayGain is applied (the user's settings). */
  replayGain = $state<ReplayGainMode>('off');
  queueOpen = $state(false);
  /** The radio feeding the queue (null when none): its seed and each track's reasons. */
  radio = $state<radio.RadioState | null>(radio.load(localStorage));
  /** A radio batch is being asked for. */
  radioLoading = $state(false);

  #engine: Engine | null = null;
  /** Counts track loads, so a source read late does not replace a newer track. */
  #loads = 0;
  /** The track in the preloading element and its source. */
  #preloaded: { id: string; src: string } | null = null;
  #plays = new PlayTracker();
  #lastSavedPosition = 0;
  /** When the place in the playing episode is saved to the server. */
  #saver = new PositionSaver();
  /** The places saved this session, by episode (newer than the queue entry's `position_ms`). */
  #places = new Map<string, number>();
  /** A station stopped: its stream is closed, Play opens it again. */
  #stopped = false;

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
        if (!playing) {
          this.#plays.paused();
          this.#savePlace(this.#saver.pause(this.position));
        }
        this.#session();
      },
      ended: () => {
        this.#savePlace(this.#saver.end(this.duration));
        this.#advance(true);
      },
      error: () => {
        // Offline, a track that is not stored cannot play, nor can the ones after it.
        if (!offline.online && this.current && !offline.has(this.current.id)) {
          toast.say(t.offlineNotStored);
          this.pause();
          return;
        }
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
    if (now && isStation(now)) {
      // A live stream is not opened until Play (it would download for nothing).
      this.#stopped = true;
      session.showTrack(now);
    } else if (now) {
      const saved = Number(localStorage.getItem(POSITION_KEY) ?? '0');
      const load = ++this.#loads;
      this.#saver.start(now.media?.kind === 'episode' ? now.id : null);
      this.#withSource(
        now,
        (src) => load === this.#loads && this.#engine?.load(src, Number.isFinite(saved) ? saved : 0, this.#gainOf(now)),
      );
      this.position = saved;
      session.showTrack(now);
      this.#preload();
    }
    addEventListener('pagehide', () => this.#savePosition(true));
  };

  // Queue operations --------------------------------------------------------------------------

  playTracks = (tracks: q.QueueTrack[], start = 0) => {
    this.#setRadio(null);
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
  clear = () => {
    this.#setRadio(null);
    this.#set(q.clear(this.queue));
  };
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
    if (this.#stopped) return this.#start();
    await this.#engine?.play();
  };
  /** Stops a live stream (a station): its connection closes; Play opens it again. */
  stop = () => {
    this.#engine?.stop();
    this.#preloaded = null;
    this.#stopped = true;
    this.playing = false;
    this.position = 0;
    this.#session();
  };
  pause = () => this.#engine?.pause();
  toggle = () => (this.playing ? (isStation(this.current) ? this.stop() : this.pause()) : void this.play());
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
    if (isStation(this.current)) return; // live: nowhere to seek to
    this.#engine?.seek(seconds);
    this.position = seconds;
  };
  seekBy = (seconds: number) => this.seek(Math.max(0, this.position + seconds));
  setVolume = (volume: number) => {
    this.volume = Math.max(0, Math.min(1, volume));
    this.#engine?.setVolume(this.volume);
    localStorage.setItem(VOLUME_KEY, String(this.volume));
  };
  /** Applies ReplayGain as `mode` says, from now on (the playing track too). */
  setReplayGain = (mode: ReplayGainMode) => {
    this.replayGain = mode;
    this.#engine?.setGain(this.#gainOf(this.current), this.#gainOf(this.#followingTrack()));
  };

  // Radio --------------------------------------------------------------------------------------

  /** Starts a radio from a track (it plays first) or from the likes; the queue is replaced. */
  startRadio = async (seed: q.QueueTrack | null) => {
    const session = radio.begin(
      seed ? { kind: 'track', id: seed.id, title: seed.title, artist: seed.artist ?? null } : { kind: 'likes' },
    );
    this.#setRadio(null);
    if (seed) {
      this.#set(q.playNow(this.queue, [seed]));
      this.#start();
    }
    this.#setRadio(session);
    const ok = await this.#topUp(true);
    if (!ok && this.radio === session) {
      this.#setRadio(null);
      toast.say(t.radioFailed);
    }
  };
  stopRadio = () => {
    this.#setRadio(null);
    toast.say(t.radioStopped);
  };
  /** Why the radio chose this track (empty when it did not). */
  reasonsOf = (trackId: string): radio.Reason[] => this.radio?.reasons[trackId] ?? [];

  #setRadio(state: radio.RadioState | null) {
    this.radio = state;
    radio.save(localStorage, state);
  }

  /**
   * Asks for the next batch when the radio is on and the queue nears its end; `force` asks
   * even when it does not (the first batch). Resolves false when the server did not answer.
   */
  async #topUp(force = false): Promise<boolean> {
    const session = this.radio;
    const remaining = this.queue.entries.length - 1 - this.queue.index;
    if (!session || this.radioLoading || (!force && !radio.needsMore(session, remaining))) return true;
    this.radioLoading = true;
    try {
      // A radio from the likes replaces the queue with its first batch: what was queued
      // before is neither excluded nor kept.
      const replace = session.batches === 0 && session.seed.kind === 'likes';
      const queued = replace ? [] : this.queue.entries.map((entry) => entry.track.id);
      const body = radio.request(session, queued);
      const { data } = await (session.batches === 0 ? api.POST('/radio', { body }) : api.POST('/radio/next', { body }));
      let items = data?.items;
      let restart = false;
      if (items && items.length === 0 && session.seen.length > 0) {
        // The library is used up: start over, excluding only what played last.
        restart = true;
        const again = await api.POST('/radio/next', { body: radio.request(session, queued, true) });
        items = again.data?.items;
      }
      if (!items) return false;
      if (this.radio !== session) return true; // stopped or replaced meanwhile
      // Nothing even after starting over (or nothing at all to start from): the radio ended.
      this.#setRadio(radio.absorb(session, items, restart || session.seen.length === 0));
      const tracks = items.map((item) => item.track);
      if (replace && tracks.length) {
        this.#set(q.playNow(this.queue, tracks));
        this.#start();
      } else if (tracks.length) {
        const wasEmpty = this.queue.index < 0;
        this.#set(q.add(this.queue, tracks));
        if (wasEmpty) this.#start();
      }
      return true;
    } finally {
      this.radioLoading = false;
    }
  }

  /** Signing out: nothing of the last user's queue stays. */
  reset = () => {
    this.#setRadio(null);
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
    void this.#topUp().then((ok) => ok || toast.say(t.radioMoreFailed));
  }

  #start(autoplay = true) {
    const now = this.current;
    const engine = this.#engine;
    if (!now || !engine) return;
    const load = ++this.#loads;
    this.#stopped = false;
    // An episode resumes where the listener stopped; a track starts at its beginning.
    this.#savePlace(this.#saver.pause(this.position)); // the episode left (or restarted), if one played
    const episode = now.media?.kind === 'episode' ? now.media : null;
    const startAt = episode ? resumeAt(this.#places.get(now.id) ?? episode.position_ms, now.duration_ms) : 0;
    this.#saver.start(episode ? now.id : null);
    this.#withSource(now, (src) => {
      if (load !== this.#loads) return; // another track was started meanwhile
      engine.load(src, startAt, this.#gainOf(now));
      if (autoplay) void engine.play();
    });
    this.position = startAt;
    this.duration = (now.duration_ms ?? 0) / 1000;
    this.#plays.start();
    session.showTrack(now);
    this.#savePosition(true);
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
    void this.#topUp().then((ok) => ok || toast.say(t.radioMoreFailed));
    const now = this.current!;
    if (sameEntry) {
      this.seek(0);
      this.#plays.start();
      void this.play();
      return;
    }
    const preloaded = this.#preloaded;
    if (!now.media && preloaded?.id === now.id && this.#engine?.playPreloaded(preloaded.src)) {
      ++this.#loads;
      this.#savePlace(this.#saver.pause(this.position));
      this.#saver.start(null);
      this.position = 0;
      this.#plays.start();
      session.showTrack(now);
      this.#preload();
    } else {
      this.#start();
    }
  }

  #preload() {
    const track = this.#followingTrack();
    const following = track?.id ?? null;
    // A station or an episode is not preloaded (a live stream would stay open; an episode
    // starts at its saved place).
    if (!following || track?.media) {
      this.#preloaded = null;
      this.#engine?.preload(null);
      return;
    }
    this.#withSource(track!, (src) => {
      if (this.#following() !== following) return; // the queue changed meanwhile
      this.#preloaded = { id: following, src };
      this.#engine?.preload(src, this.#gainOf(track));
    });
  }

  /** The id of the track that plays after the current one (null: none). */
  #following(): string | null {
    return this.#followingTrack()?.id ?? null;
  }

  /** The track that plays after the current one (null: none). */
  #followingTrack(): q.QueueTrack | null {
    const position = q.nextPosition(this.queue, true);
    return position === null || position === this.queue.index ? null : (this.queue.entries[position]?.track ?? null);
  }

  /** The ReplayGain factor of `track` in the user's mode. */
  #gainOf(track: q.QueueTrack | null): number {
    return gainFactor(track?.replay_gain, this.replayGain);
  }

  /**
   * Hands `use` the source of a track: its stored audio when it is kept offline (online or
   * not), else the stream. At once when that is known, else once the stored data is read.
   */
  #withSource(track: q.QueueTrack, use: (src: string) => void) {
    if (track.media) return use(withToken(track.media.stream_url));
    const trackId = track.id;
    const stream = () => streamUrl(trackId, this.quality);
    if (offline.loaded && !offline.has(trackId)) return use(stream());
    void offline.ready
      .then(() => (offline.has(trackId) ? offline.audioUrl(trackId) : null))
      .catch(() => null)
      .then((url) => use(url ?? stream()));
  }

  #time(position: number, duration: number) {
    this.position = position;
    if (Number.isFinite(duration) && duration > 0) this.duration = duration;
    this.#savePosition(false);
    const now = this.current;
    if (now?.media) {
      // Not a track: never a play. An episode's place is saved as it plays.
      if (this.playing) this.#savePlace(this.#saver.tick(position));
      return;
    }
    const play = this.playing ? this.#plays.update(position, this.duration) : null;
    if (play && now) void this.#record(now.id, play.playedAt, play.seconds);
  }

  async #record(trackId: string, playedAt: Date, seconds: number) {
    // Through the outbox: a play made offline is sent when the network is back.
    await events.play(trackId, playedAt, seconds);
  }

  /** Saves the place in the playing episode (`ms` from the saver; null: nothing to save). */
  #savePlace(ms: number | null) {
    const id = this.#saver.id;
    if (ms === null || !id) return;
    this.#places.set(id, ms);
    void api.PUT('/podcast-episodes/{id}/position', { params: { path: { id } }, body: { position_ms: ms } });
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
