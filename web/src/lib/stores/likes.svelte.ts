// Like state of the tracks on screen: asked of the server in batches, changed by events.
import { SvelteMap } from 'svelte/reactivity';
import { api } from '../api/client';
import { eventId } from '../ids';
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
      for (const row of data ?? []) if (!this.#state.has(row.track_id)) this.#state.set(row.track_id, row.liked);
    }
  }

  /** Likes or unlikes; shown at once, put back if the server refuses. */
  toggle = async (trackId: string): Promise<void> => {
    const liked = !this.liked(trackId);
    this.#state.set(trackId, liked);
    this.#asked.add(trackId);
    const { error } = await api.POST('/likes', {
      body: { client_event_id: eventId(), track_id: trackId, liked, event_time: new Date().toISOString() },
    });
    if (error) this.#state.set(trackId, !liked);
  };

  reset = () => {
    this.#state.clear();
    this.#asked.clear();
  };
}

export const likes = new LikesStore();
auth.onSignOut(() => likes.reset());
