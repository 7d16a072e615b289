// A musiclib server of a test's own, for a test that stops the server (the shared one, at
// MUSICLIB_URL, must stay up for the others): the real binary on a free loopback port, a fresh
// DATA_DIR, a few albums of the corpus copied into its import folder and imported, an admin
// account. It can be stopped (SIGTERM, as a host shutting down) and started again on the same
// port and DATA_DIR, so a browser finds it where it was.
//   MUSICLIB_BIN: the binary (default ../target/debug/musiclib from web/);
//   MUSICLIB_MUSIC: the corpus library folder (default ../target/corpus/library from web/).
import { spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { openSync, closeSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const web = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = resolve(web, process.env.MUSICLIB_BIN ?? '../target/debug/musiclib');
const MUSIC = resolve(web, process.env.MUSICLIB_MUSIC ?? '../target/corpus/library');

/** Servers still running, killed if the test process goes before they were stopped. */
const running = new Set<ChildProcess>();
process.once('exit', () => running.forEach((child) => child.kill('SIGKILL')));

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const probe = createServer();
    probe.once('error', fail);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => (typeof address === 'object' && address ? done(address.port) : fail(new Error('no port'))));
    });
  });
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

export interface OwnServerOptions {
  /** Folders of the corpus library (relative to it) to import, e.g. "Artist/Album (2020)". */
  albums: string[];
  user: string;
  password: string;
}

export class OwnServer {
  readonly base: string;
  #child: ChildProcess | null = null;

  private constructor(
    readonly port: number,
    /** Everything of this server: data/ (its DATA_DIR), music/ (its import folder), server.log. */
    readonly dir: string,
    private options: OwnServerOptions,
  ) {
    this.base = `http://127.0.0.1:${port}`;
  }

  /** Copies the albums, starts the server and imports them (the scan job finished). */
  static async create(options: OwnServerOptions): Promise<OwnServer> {
    if (!existsSync(BIN)) throw new Error(`no musiclib binary at ${BIN} (set MUSICLIB_BIN)`);
    const dir = await mkdtemp(join(tmpdir(), 'musiclib-e2e-own-'));
    const server = new OwnServer(await freePort(), dir, options);
    try {
      await mkdir(join(dir, 'data'));
      for (const album of options.albums) {
        await cp(join(MUSIC, album), join(dir, 'music', album), { recursive: true });
      }
      await server.start();
      await server.#import();
      return server;
    } catch (error) {
      const log = await server.log();
      await server.dispose();
      throw new Error(`${(error as Error).message}\n--- server.log ---\n${log}`);
    }
  }

  get dataDir(): string {
    return join(this.dir, 'data');
  }

  get running(): boolean {
    return this.#child !== null;
  }

  /** Starts `musiclib serve` (again: same port, same DATA_DIR) and waits for GET /health. */
  async start(): Promise<void> {
    if (this.#child) return;
    const log = openSync(join(this.dir, 'server.log'), 'a');
    // Nothing of the test's environment reaches it (a database, S3, a config file, API keys):
    // only what it is given here, and nothing pointing outside the machine.
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: this.dir,
      DATA_DIR: this.dataDir,
      BIND_ADDRESS: `127.0.0.1:${this.port}`,
      LOCAL_MEDIA_IMPORT_PATH: join(this.dir, 'music'),
      ADMIN_USERNAME: this.options.user,
      ADMIN_PASSWORD: this.options.password,
      COVERART_ENABLED: 'false',
      LRCLIB_BASE_URL: 'http://127.0.0.1:9',
      SOUND_ANALYSIS: 'false',
      LOUDNESS_ANALYSIS: 'false',
    };
    const child = spawn(BIN, ['serve'], { cwd: this.dataDir, env, stdio: ['ignore', log, log] });
    closeSync(log);
    this.#child = child;
    running.add(child);
    child.once('exit', () => {
      running.delete(child);
      if (this.#child === child) this.#child = null;
    });
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (this.#child !== child) throw new Error(`the server exited during start-up (${child.exitCode ?? child.signalCode})`);
      if (await this.healthy()) return;
      await sleep(100);
    }
    throw new Error(`GET ${this.base}/health did not answer 200 within 60 s`);
  }

  /** Stops the server as a host would (SIGTERM; SIGKILL after 35 s) and waits for it to exit. */
  async stop(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    const exited = new Promise<void>((done) => {
      if (child.exitCode !== null || child.signalCode !== null) done();
      else child.once('exit', () => done());
    });
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 35_000);
    await exited;
    clearTimeout(timer);
    this.#child = null;
  }

  /** Whether GET /health answers 200 now. */
  async healthy(): Promise<boolean> {
    try {
      const answer = await fetch(`${this.base}/health`, { signal: AbortSignal.timeout(2_000) });
      return answer.ok;
    } catch {
      return false;
    }
  }

  /** The server's log (stdout and stderr of every start). */
  async log(): Promise<string> {
    return readFile(join(this.dir, 'server.log'), 'utf8').catch(() => '');
  }

  /** Stops it and removes its folder. */
  async dispose(): Promise<void> {
    const child = this.#child;
    if (child) {
      child.kill('SIGKILL');
      if (child.exitCode === null && child.signalCode === null) await new Promise((done) => child.once('exit', done));
      this.#child = null;
    }
    await rm(this.dir, { recursive: true, force: true });
  }

  async #call<T>(method: string, path: string, token?: string, body?: unknown): Promise<T> {
    const answer = await fetch(`${this.base}/api/v1${path}`, {
      method,
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!answer.ok) throw new Error(`${method} ${path}: ${answer.status} ${await answer.text()}`);
    return (await answer.json()) as T;
  }

  /** Imports the music folder as the admin and waits for the scan job. */
  async #import(): Promise<void> {
    const { user, password } = this.options;
    const { access_token } = await this.#call<{ access_token: string }>('POST', '/auth/login', undefined, { username: user, password });
    const job = await this.#call<{ job_id?: string; id?: string }>('POST', '/sources/local_folder/scan', access_token);
    const id = job.job_id ?? job.id;
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      const { state } = await this.#call<{ state: string }>('GET', `/jobs/${id}`, access_token);
      if (state === 'succeeded') return;
      if (state === 'failed' || state === 'cancelled') throw new Error(`the scan ${state}`);
      await sleep(250);
    }
    throw new Error('the scan did not finish within 120 s');
  }
}
