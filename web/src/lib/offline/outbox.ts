// Likes and plays on their way to the server: each is written to the browser database first,
// with a client event id made once, and sent with POST /sync/push; it leaves the outbox only
// when the server has answered for it. A push that failed or timed out is sent again with the
// same ids, and the server ignores ids it has (spec, sync rule 4): an event counts once.
import type { components } from '../api/schema';
import { all, done, transact } from './db';

export type LikeIn = components['schemas']['LikeIn'];
export type PlayIn = components['schemas']['HistoryIn'];
export type PushIn = components['schemas']['PushIn'];
export type PushOut = components['schemas']['PushOut'];

export type OutboxEvent =
  | { id: string; kind: 'like'; body: LikeIn; user: string; at: number }
  | { id: string; kind: 'play'; body: PlayIn; user: string; at: number };

/** What became of one push. */
export type PushResult =
  /** The server answered for every event (stored, duplicate or skipped). */
  | { status: 'sent'; answer: PushOut }
  /** The server refused the batch as invalid: sending it again cannot help. */
  | { status: 'refused' }
  /** No answer (offline, timeout, server error, signed out): keep the events for later. */
  | { status: 'failed' };

export type Push = (body: PushIn) => Promise<PushResult>;

/** Events in one push (the server takes 5000). */
export const BATCH = 500;

export interface FlushOutcome {
  /** Events that left the outbox. */
  sent: number;
  /** Events still waiting. */
  waiting: number;
  /** The push failed (retry later). */
  failed: boolean;
  /** Client event ids the server skipped (tracks it does not have). */
  skipped: string[];
}

/** Delay before retry number `attempt` (1, 2, …): doubling from 5 s to 5 minutes, jittered. */
export function backoff(attempt: number, random = Math.random): number {
  const base = Math.min(5_000 * 2 ** Math.max(0, attempt - 1), 300_000);
  return Math.round(base * (0.8 + 0.4 * random()));
}

export class Outbox {
  #db: IDBDatabase;
  #push: Push;
  #flushing: Promise<FlushOutcome> | null = null;
  #again = false;

  constructor(db: IDBDatabase, push: Push) {
    this.#db = db;
    this.#push = push;
  }

  /** Keeps an event (durably: it is on disk when this resolves). */
  async add(event: OutboxEvent): Promise<void> {
    await transact(this.#db, 'outbox', 'readwrite', async (tx) => {
      await done(tx.objectStore('outbox').put(event));
    });
  }

  /**
   * Keeps an event and sends it at once: the push starts while it is being written (no later
   * than a direct call would), and the event leaves the outbox when the server answered. When
   * it did not, the event waits for the next flush; a flush meanwhile may send it too, which
   * the server's deduplication makes harmless.
   */
  async send(event: OutboxEvent): Promise<PushResult> {
    const written = this.add(event);
    const result = await this.#send([event], this.#push);
    await written;
    if (result.status !== 'failed') await this.#delete([event.id]);
    return result;
  }

  /** The waiting events, oldest first; only `user`'s when given. */
  async pending(user?: string): Promise<OutboxEvent[]> {
    const events = await all<OutboxEvent>(this.#db, 'outbox');
    return events.filter((event) => !user || event.user === user).sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : 1));
  }

  /**
   * Sends `user`'s waiting events, in batches, until none is left or a push fails. One flush at
   * a time: a call during a flush runs once more after it (it may have added events). `push`
   * replaces the outbox's own for this flush (signing out: the last token).
   */
  flush(user: string, push?: Push): Promise<FlushOutcome> {
    if (this.#flushing) {
      if (push) return this.#flushing.then(() => this.flush(user, push));
      this.#again = true;
      return this.#flushing;
    }
    const run = async (): Promise<FlushOutcome> => {
      let outcome: FlushOutcome;
      do {
        this.#again = false;
        outcome = await this.#flushOnce(user, push ?? this.#push);
      } while (this.#again && !outcome.failed);
      return outcome;
    };
    this.#flushing = run().finally(() => (this.#flushing = null));
    return this.#flushing;
  }

  async #flushOnce(user: string, push: Push): Promise<FlushOutcome> {
    const outcome: FlushOutcome = { sent: 0, waiting: 0, failed: false, skipped: [] };
    for (;;) {
      const events = await this.pending(user);
      if (events.length === 0) return outcome;
      const batch = events.slice(0, BATCH);
      let result = await this.#send(batch, push);
      if (result.status === 'refused' && batch.length > 1) {
        // One bad event must not hold back the others: send them one by one.
        for (const event of batch) {
          result = await this.#send([event], push);
          if (result.status === 'failed') break;
          if (result.status === 'sent') outcome.skipped.push(...result.answer.skipped_ids);
          await this.#delete([event.id]);
          outcome.sent++;
        }
      } else if (result.status !== 'failed') {
        if (result.status === 'sent') outcome.skipped.push(...result.answer.skipped_ids);
        // Answered (or refused for good): these events are done.
        await this.#delete(batch.map((event) => event.id));
        outcome.sent += batch.length;
      }
      if (result.status === 'failed') {
        outcome.failed = true;
        outcome.waiting = (await this.pending(user)).length;
        return outcome;
      }
    }
  }

  async #send(batch: OutboxEvent[], push: Push): Promise<PushResult> {
    const body: PushIn = {
      likes: batch.flatMap((event) => (event.kind === 'like' ? [event.body] : [])),
      plays: batch.flatMap((event) => (event.kind === 'play' ? [event.body] : [])),
    };
    try {
      return await push(body);
    } catch {
      return { status: 'failed' };
    }
  }

  async #delete(ids: string[]): Promise<void> {
    await transact(this.#db, 'outbox', 'readwrite', async (tx) => {
      const store = tx.objectStore('outbox');
      for (const id of ids) await done(store.delete(id));
    });
  }

  /** Forgets every waiting event (signing out). */
  async clear(): Promise<void> {
    await transact(this.#db, 'outbox', 'readwrite', async (tx) => {
      await done(tx.objectStore('outbox').clear());
    });
  }
}
