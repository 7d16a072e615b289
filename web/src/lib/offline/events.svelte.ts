// The app's likes and plays go through one path, online or not: into the outbox (the browser
// database), then POST /sync/push. A push that fails is tried again on the `online` event, at
// the next start and on a timer that backs off; the server ignores a client event id it has.
import { api } from '../api/client';
import { eventId } from '../ids';
import { auth } from '../stores/auth.svelte';
import { shared } from './db';
import { Outbox, backoff, type LikeIn, type OutboxEvent, type PlayIn, type PushIn, type PushResult } from './outbox';

/** How long a push may take before it counts as failed (it is sent again, harmlessly). */
const PUSH_TIMEOUT = 20_000;

async function push(body: PushIn, token?: string): Promise<PushResult> {
  const headers = token ? { Authorization: `Bearer ${token}` } : undefined;
  if (!token && !auth.token) return { status: 'failed' };
  const { data, response } = await api.POST('/sync/push', { body, headers, signal: AbortSignal.timeout(PUSH_TIMEOUT) });
  if (data) return { status: 'sent', answer: data };
  // An invalid event can never be accepted; anything else (offline, 5xx, 401) may pass later.
  if (response.status === 400 || response.status === 413 || response.status === 422) return { status: 'refused' };
  return { status: 'failed' };
}

type LikeListener = (trackId: string, liked: boolean) => void;

class Events {
  /** Events waiting to be sent. */
  waiting = $state(0);
  #outbox: Promise<Outbox | null> | null = null;
  #retry: ReturnType<typeof setTimeout> | undefined;
  #attempt = 0;
  #likeListeners: LikeListener[] = [];

  #box(): Promise<Outbox | null> {
    // No IndexedDB (a private window of some browsers): events go straight to the server.
    this.#outbox ??= shared()
      .then((db) => new Outbox(db, (body) => push(body)))
      .catch(() => null);
    return this.#outbox;
  }

  /** Likes or unlikes a track (kept until the server has it). */
  like = (trackId: string, liked: boolean): Promise<void> => {
    const body: LikeIn = { client_event_id: eventId(), track_id: trackId, liked, event_time: new Date().toISOString() };
    for (const listener of this.#likeListeners) listener(trackId, liked);
    return this.#record({ id: body.client_event_id, kind: 'like', body, user: '', at: Date.now() });
  };

  /** A play that counts (player/plays.ts decides when). */
  play = (trackId: string, playedAt: Date, seconds: number): Promise<void> => {
    const body: PlayIn = {
      client_event_id: eventId(),
      track_id: trackId,
      played_at: playedAt.toISOString(),
      seconds_played: seconds,
    };
    return this.#record({ id: body.client_event_id, kind: 'play', body, user: '', at: Date.now() });
  };

  /** Called on each like made here (the stored liked songs follow). */
  onLike = (listener: LikeListener) => {
    this.#likeListeners.push(listener);
  };

  async #record(event: OutboxEvent): Promise<void> {
    const user = auth.user?.id;
    if (!user) return;
    event.user = user;
    const outbox = await this.#box();
    if (!outbox) {
      await push(event.kind === 'like' ? { likes: [event.body], plays: [] } : { likes: [], plays: [event.body] });
      return;
    }
    const result = await outbox.send(event);
    if (result.status === 'failed') this.#retryLater(user);
    // Others waiting (made offline): now is a good time.
    else if (this.waiting > 0) await this.flush();
    else this.#attempt = 0;
  }

  #retryLater(user: string) {
    void this.#box().then(async (outbox) => {
      if (outbox && auth.user?.id === user) this.waiting = (await outbox.pending(user)).length;
    });
    if (this.#retry !== undefined) return; // one is planned already
    this.#attempt++;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      void this.flush();
    }, backoff(this.#attempt));
  }

  /** The waiting events of the signed-in user. */
  pending = async (): Promise<OutboxEvent[]> => {
    const outbox = await this.#box();
    const user = auth.user?.id;
    return outbox && user ? outbox.pending(user) : [];
  };

  /** Sends what waits now; on failure, again later (sooner when the network comes back). */
  flush = async (): Promise<void> => {
    const outbox = await this.#box();
    const user = auth.user?.id;
    if (!outbox || !user) return;
    clearTimeout(this.#retry);
    this.#retry = undefined;
    const outcome = await outbox.flush(user);
    this.waiting = outcome.failed ? outcome.waiting : (await outbox.pending(user)).length;
    if (outcome.failed) this.#retryLater(user);
    else this.#attempt = 0;
  };

  /** Signing out: one last push with the old token, then nothing of the user is kept. */
  forget = async (user: string, token: string | null): Promise<void> => {
    clearTimeout(this.#retry);
    this.#retry = undefined;
    const outbox = await this.#box();
    if (!outbox) return;
    if (token) await outbox.flush(user, (body) => push(body, token)).catch(() => undefined);
    await outbox.clear();
    this.waiting = 0;
  };
}

export const events = new Events();
