// The browser database of the offline slice (IndexedDB): what is stored to play without the
// network, and the events waiting to be sent. Plain promises over IndexedDB's requests, no
// library; Vitest runs it on fake-indexeddb.

export const DB_NAME = 'musiclib-offline';
const VERSION = 1;

/** The object stores; each is keyed by the field named here (meta and audio by an outside key). */
export const STORES = {
  /** Collections kept offline (an album, a playlist, the liked songs), by `key`. */
  collections: 'key',
  /** Metadata of each stored track (the API's track, its stored size and type), by `id`. */
  tracks: 'id',
  /** The audio of each stored track: a Blob, keyed by the track id. */
  audio: null,
  /** Cover images: a Blob, keyed `albums:<id>` or `tracks:<id>`. */
  covers: null,
  /** Like and play events not yet accepted by the server, by their client event id. */
  outbox: 'id',
  /** Small values: the owner of the data, the sync cursor, the size limit. */
  meta: null,
} as const;

export type StoreName = keyof typeof STORES;

/** A request's result as a promise. */
export function done<T>(request: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/** Opens (and creates or upgrades) the database. */
export function open(name = DB_NAME): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(name, VERSION);
    request.onupgradeneeded = () => {
      const db = request.result;
      for (const [store, keyPath] of Object.entries(STORES)) {
        if (!db.objectStoreNames.contains(store)) {
          db.createObjectStore(store, keyPath ? { keyPath } : undefined);
        }
      }
    };
    request.onsuccess = () => {
      const db = request.result;
      // Another tab upgrading the schema: let it, this one reopens on its next load.
      db.onversionchange = () => db.close();
      resolve(db);
    };
    request.onerror = () => reject(request.error);
  });
}

let connection: Promise<IDBDatabase> | null = null;

/** The app's one connection (opened on first use). */
export function shared(): Promise<IDBDatabase> {
  connection ??= open().catch((error: unknown) => {
    connection = null;
    throw error;
  });
  return connection;
}

/**
 * Runs `work` in one transaction over `stores` and resolves with its result once the
 * transaction has committed (so a write is on disk when the promise resolves).
 */
export function transact<T>(
  db: IDBDatabase,
  stores: StoreName | StoreName[],
  mode: IDBTransactionMode,
  work: (tx: IDBTransaction) => Promise<T> | T,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const tx = db.transaction(stores, mode);
    let result: T;
    let failed = false;
    tx.oncomplete = () => resolve(result);
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => failed || reject(tx.error ?? new Error('transaction aborted'));
    Promise.resolve()
      .then(() => work(tx))
      .then(
        (value) => (result = value),
        (error: unknown) => {
          failed = true;
          try {
            tx.abort();
          } catch {
            // Already finished.
          }
          reject(error);
        },
      );
  });
}

/** One value by key (undefined when absent). */
export function get<T>(db: IDBDatabase, store: StoreName, key: IDBValidKey): Promise<T | undefined> {
  return transact(db, store, 'readonly', (tx) => done(tx.objectStore(store).get(key)) as Promise<T | undefined>);
}

/** Every value of a store. */
export function all<T>(db: IDBDatabase, store: StoreName): Promise<T[]> {
  return transact(db, store, 'readonly', (tx) => done(tx.objectStore(store).getAll()) as Promise<T[]>);
}

/** Writes one value (with `key` for the stores keyed from outside). */
export function put(db: IDBDatabase, store: StoreName, value: unknown, key?: IDBValidKey): Promise<void> {
  return transact(db, store, 'readwrite', async (tx) => {
    await done(tx.objectStore(store).put(value, key));
  });
}

/** Empties the given stores. */
export function clear(db: IDBDatabase, stores: StoreName[]): Promise<void> {
  return transact(db, stores, 'readwrite', async (tx) => {
    await Promise.all(stores.map((store) => done(tx.objectStore(store).clear())));
  });
}
