import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { BATCH, Outbox, backoff, type OutboxEvent, type Push, type PushIn } from './outbox';
import { freshDatabase } from './testing';

const USER = 'user-1';
let clock = 0;

function like(id: string, trackId = 't1', liked = true): OutboxEvent {
  return {
    id,
    kind: 'like',
    user: USER,
    at: ++clock,
    body: { client_event_id: id, track_id: trackId, liked, event_time: new Date(1_700_000_000_000 + clock).toISOString() },
  };
}

function play(id: string, trackId = 't1'): OutboxEvent {
  return {
    id,
    kind: 'play',
    user: USER,
    at: ++clock,
    body: { client_event_id: id, track_id: trackId, played_at: new Date(1_700_000_000_000 + clock).toISOString(), seconds_played: 90 },
  };
}

/**
 * A server as the spec has it: each client event id stored once (a repeat is a duplicate).
 * `mode` decides how the next pushes end: answered, lost (stored but the answer times out),
 * or unreachable (nothing arrives).
 */
function fakeServer() {
  /** Copies stored per client event id (the dedup keeps it at 1). */
  const stored = new Map<string, number>();
  /** Times each id was sent. */
  const received = new Map<string, number>();
  const pushes: PushIn[] = [];
  const modes: ('answer' | 'lost' | 'unreachable' | 'invalid')[] = [];
  const push: Push = async (body) => {
    pushes.push(body);
    const mode = modes.shift() ?? 'answer';
    if (mode === 'unreachable') throw new TypeError('Failed to fetch');
    const events = [...(body.likes ?? []), ...(body.plays ?? [])];
    if (mode === 'invalid' || events.some((event) => event.client_event_id.startsWith('bad'))) return { status: 'refused' };
    let accepted = 0;
    let duplicates = 0;
    for (const event of events) {
      const id = event.client_event_id;
      received.set(id, (received.get(id) ?? 0) + 1);
      if (stored.has(id)) duplicates++;
      else (accepted++, stored.set(id, 1));
    }
    if (mode === 'lost') throw new DOMException('The operation timed out.', 'TimeoutError');
    return { status: 'sent', answer: { accepted, duplicates, skipped: 0, skipped_ids: [] } };
  };
  return { stored, received, pushes, modes, push };
}

describe('the outbox', () => {
  it('sends waiting likes and plays in one push and empties itself', async () => {
    const server = fakeServer();
    const outbox = new Outbox(await freshDatabase().open(), server.push);
    await outbox.add(like('e1'));
    await outbox.add(play('e2'));
    const outcome = await outbox.flush(USER);
    expect(outcome).toMatchObject({ sent: 2, failed: false });
    expect(server.pushes).toHaveLength(1);
    expect(server.pushes[0]!.likes!.map((e) => e.client_event_id)).toEqual(['e1']);
    expect(server.pushes[0]!.plays!.map((e) => e.client_event_id)).toEqual(['e2']);
    expect(await outbox.pending(USER)).toEqual([]);
  });

  it('keeps events while the server cannot be reached, then sends them', async () => {
    const server = fakeServer();
    const outbox = new Outbox(await freshDatabase().open(), server.push);
    await outbox.add(like('e1'));
    server.modes.push('unreachable');
    expect(await outbox.flush(USER)).toMatchObject({ sent: 0, failed: true, waiting: 1 });
    expect((await outbox.pending(USER)).map((e) => e.id)).toEqual(['e1']);

    expect(await outbox.flush(USER)).toMatchObject({ sent: 1, failed: false });
    expect(server.stored.get('e1')).toBe(1);
  });

  it('sends an event once even when the push is retried after a timeout', async () => {
    const server = fakeServer();
    const outbox = new Outbox(await freshDatabase().open(), server.push);
    await outbox.add(like('e1', 't1'));
    await outbox.add(like('e2', 't2', false));
    // The server stores the batch, but its answer never arrives.
    server.modes.push('lost');
    expect(await outbox.flush(USER)).toMatchObject({ failed: true, waiting: 2 });
    // The retry sends the same client event ids; the server ignores them.
    const retried = await outbox.flush(USER);
    expect(retried).toMatchObject({ sent: 2, failed: false });
    expect(server.pushes).toHaveLength(2);
    expect(server.pushes[1]!.likes!.map((e) => e.client_event_id)).toEqual(['e1', 'e2']);
    expect(server.received.get('e1')).toBe(2);
    expect([...server.stored]).toEqual([
      ['e1', 1],
      ['e2', 1],
    ]);
    // Nothing is left to send again.
    expect(await outbox.flush(USER)).toMatchObject({ sent: 0 });
    expect(server.pushes).toHaveLength(2);
  });

  it('sends a new event at once; one that found no server waits for the next flush', async () => {
    const server = fakeServer();
    const outbox = new Outbox(await freshDatabase().open(), server.push);
    expect(await outbox.send(like('e1'))).toMatchObject({ status: 'sent' });
    expect(await outbox.pending(USER)).toEqual([]);

    server.modes.push('lost');
    expect(await outbox.send(like('e2'))).toEqual({ status: 'failed' });
    expect((await outbox.pending(USER)).map((e) => e.id)).toEqual(['e2']);
    expect(await outbox.flush(USER)).toMatchObject({ sent: 1 });
    expect(server.received.get('e2')).toBe(2);
    expect([...server.stored.keys()]).toEqual(['e1', 'e2']);
    expect(await outbox.pending(USER)).toEqual([]);
  });

  it('keeps events across a reload (a new outbox on the same database)', async () => {
    const db = freshDatabase();
    const server = fakeServer();
    server.modes.push('unreachable');
    const before = new Outbox(await db.open(), server.push);
    await before.add(like('e1'));
    await before.add(play('e2'));
    await before.flush(USER);

    const after = new Outbox(await db.open(), server.push);
    expect((await after.pending(USER)).map((e) => e.id)).toEqual(['e1', 'e2']);
    expect(await after.flush(USER)).toMatchObject({ sent: 2 });
    expect([...server.stored.keys()]).toEqual(['e1', 'e2']);
  });

  it('one flush at a time: concurrent calls push each event once', async () => {
    const server = fakeServer();
    const outbox = new Outbox(await freshDatabase().open(), server.push);
    await outbox.add(like('e1'));
    await Promise.all([outbox.flush(USER), outbox.flush(USER), outbox.flush(USER)]);
    const sent = server.pushes.flatMap((push) => push.likes ?? []).map((e) => e.client_event_id);
    expect(sent).toEqual(['e1']);
  });

  it('sends in batches, oldest first', async () => {
    const server = fakeServer();
    const outbox = new Outbox(await freshDatabase().open(), server.push);
    for (let i = 0; i < BATCH + 3; i++) await outbox.add(play(`p${String(i).padStart(4, '0')}`));
    expect(await outbox.flush(USER)).toMatchObject({ sent: BATCH + 3 });
    expect(server.pushes.map((push) => push.plays!.length)).toEqual([BATCH, 3]);
    expect(server.pushes[0]!.plays![0]!.client_event_id).toBe('p0000');
  });

  it('drops only the event the server refuses as invalid', async () => {
    const server = fakeServer();
    const outbox = new Outbox(await freshDatabase().open(), server.push);
    await outbox.add(like('e1'));
    await outbox.add(like('bad-2'));
    await outbox.add(like('e3'));
    expect(await outbox.flush(USER)).toMatchObject({ sent: 3, failed: false });
    expect([...server.stored.keys()]).toEqual(['e1', 'e3']);
    expect(await outbox.pending(USER)).toEqual([]);
  });

  it("sends only the signed-in user's events", async () => {
    const server = fakeServer();
    const outbox = new Outbox(await freshDatabase().open(), server.push);
    await outbox.add(like('e1'));
    await outbox.add({ ...like('other'), user: 'user-2' });
    await outbox.flush(USER);
    expect([...server.stored.keys()]).toEqual(['e1']);
    expect((await outbox.pending()).map((e) => e.id)).toEqual(['other']);
    await outbox.clear();
    expect(await outbox.pending()).toEqual([]);
  });

  it('backs off from 5 seconds to 5 minutes', () => {
    const middle = () => 0.5;
    expect(backoff(1, middle)).toBe(5_000);
    expect(backoff(2, middle)).toBe(10_000);
    expect(backoff(4, middle)).toBe(40_000);
    expect(backoff(20, middle)).toBe(300_000);
    expect(backoff(1, () => 0)).toBe(4_000);
    expect(backoff(1, () => 1)).toBe(6_000);
  });
});
