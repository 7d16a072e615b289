// A small HTTP server on loopback that a test serves its own feed, audio and station from (the
// musiclib under test fetches them: it runs with ALLOW_PRIVATE_URLS=true).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const web = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const MUSIC = resolve(web, process.env.MUSICLIB_MUSIC ?? '../target/corpus/library');

/** An mp3 of the corpus (1.4 MB, about a minute and a half). */
export function cornerMp3(): Buffer {
  // Found by its start: the name's accents may be stored decomposed.
  const name = readdirSync(resolve(MUSIC, 'Incoming')).find((one) => one.startsWith('Caf') && one.endsWith('.mp3'));
  if (!name) throw new Error(`no Incoming/Café Noir mp3 in ${MUSIC}`);
  return readFileSync(resolve(MUSIC, 'Incoming', name));
}

/** A 1×1 PNG (a podcast's image). */
export const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

export type Handler = (request: IncomingMessage, response: ServerResponse) => void;

export class Loopback {
  private constructor(
    private server: Server,
    readonly base: string,
  ) {}

  /** Starts a server answering each path from `routes` (404 otherwise). */
  static async start(routes: Record<string, Handler>): Promise<Loopback> {
    const server = createServer((request, response) => {
      const path = new URL(request.url ?? '/', 'http://x').pathname;
      const handler = routes[path];
      if (handler) return handler(request, response);
      response.writeHead(404, { 'Content-Type': 'text/plain' }).end('not here');
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('no address');
    return new Loopback(server, `http://127.0.0.1:${address.port}`);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((done) => this.server.close(() => done()));
  }
}

/** Answers `body` with `type`. */
export function file(body: Buffer | string, type: string): Handler {
  return (_request, response) => {
    response.writeHead(200, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) }).end(body);
  };
}

/** A live stream: `audio` sent over and over, a chunk every 100 ms, until the listener goes. */
export function live(audio: Buffer, type = 'audio/mpeg'): Handler {
  return (request, response) => {
    response.writeHead(200, { 'Content-Type': type, 'Cache-Control': 'no-store' });
    let at = 0;
    const chunk = 8 * 1024;
    const timer = setInterval(() => {
      const end = Math.min(at + chunk, audio.length);
      response.write(audio.subarray(at, end));
      at = end >= audio.length ? 0 : end;
    }, 100);
    const stop = () => clearInterval(timer);
    request.on('close', stop);
    response.on('close', stop);
  };
}
