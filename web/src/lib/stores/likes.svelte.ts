// Like state of the tracks on screen: asked of the server in batches, changed by events.
import { SvelteMap } from 'svelte/reactivity';
import { api } from '../api/client';
import { events } from '../offline/events.svelte';
import { auth } from './auth.svelte';

const BATCH = 500; // the most ids GET /likes/state takes

class LikesStore {
  #state = new SvelteMap<string, boolean>();
  #asked = new Set<string>();
  #pending = new Set<string>();
  #timer: ReturnType<typeof setTimeout> | undefined;

  liked = (trackId: string): boolean => this.#state.get(trackId) ?? false;

  /** Makes sure the state of these tracks is known (one request for the ids of a moment). */
  want = (trackIds: Iterable<string>) => {
    for (const id of trackIds) if (!this.#asked.has(id)) this.#pending.add(id);
    if (this.#pending.size === 0 || this.#timer) return;
    this.#timer = setTimeout(() => void this.#fetch(), 20);
  };

  async #fetch() {
    this.#timer = undefined;
    const ids = [...this.#pending];
    this.#pending.clear();
    for (let i = 0; i < ids.length; i += BATCH) {
      const batch = ids.slice(i, i + BATCH);
      batch.forEach((id) => this.#asked.add(id));
      const { data } = await api.GET('/likes/state', { params: { query: { track_ids: batch } } });
      // Unanswered (offline): asked again by the next page that shows them.
      if (!data) batch.forEach((id) => this.#asked.delete(id));
      for (const row of data ?? []) if (!this.#state.has(row.track_id)) this.#state.set(row.track_id, row.liked);
    }
  }

  /** Likes or unlikes; shown at once, sent through the outbox (kept while offline). */
  toggle = async (trackId: string): Promise<void> => {
    const liked = !this.liked(trackId);
    this.set(trackId, liked);
    await events.like(trackId, liked);
  };

  /** A state known from elsewhere (a sync, a like not sent yet). */
  set = (trackId: string, liked: boolean) => {
    this.#state.set(trackId, liked);
    this.#asked.add(trackId);
  };

  /** Whether the state of this track was asked for (it is on screen or was). */
  knows = (trackId: string): boolean => this.#asked.has(trackId);

  reset = () => {
    this.#state.clear();
    this.#asked.clear();
  };
}

export const likes = new LikesStore();
auth.onSignOut(() => likes.reset());
