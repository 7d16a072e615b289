// Shared fixtures: a signed-in page, an API client for set-up, and a watch for CSP violations
// and uncaught errors that fails any test where one happens.
import { test as base, expect, type APIRequestContext, type Page } from '@playwright/test';

export const USER = process.env.MUSICLIB_USER ?? 'admin';
export const PASSWORD = process.env.MUSICLIB_PASSWORD ?? 'admin-password-1';

interface Session {
  access_token: string;
  expires_in: number;
  user: { id: string; username: string };
}

let session: Session | null = null;

export async function login(request: APIRequestContext): Promise<Session> {
  if (session) return session;
  const response = await request.post('/api/v1/auth/login', { data: { username: USER, password: PASSWORD } });
  expect(response.status(), await response.text()).toBe(200);
  session = (await response.json()) as Session;
  return session;
}

/** A small client for set-up and checks, with the admin's token. */
export class Api {
  constructor(private request: APIRequestContext, private token: string) {}
  private headers() {
    return { authorization: `Bearer ${this.token}` };
  }
  async get<T = any>(path: string): Promise<T> {
    const response = await this.request.get(`/api/v1${path}`, { headers: this.headers() });
    expect(response.ok(), `${path}: ${response.status()}`).toBe(true);
    return (await response.json()) as T;
  }
  async send(method: 'POST' | 'PATCH' | 'DELETE' | 'PUT', path: string, data?: unknown) {
    return this.request.fetch(`/api/v1${path}`, { method, headers: this.headers(), data });
  }
}

type Fixtures = { signedIn: Page; api: Api; problems: string[] };

export const test = base.extend<Fixtures>({
  problems: async ({ page }, use) => {
    const problems: string[] = [];
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (event) => {
        console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI} ${event.sourceFile}:${event.lineNumber}`);
      });
    });
    page.on('console', (message) => {
      const text = message.text();
      if (message.type() === 'error' && /Content Security Policy|CSP violation/i.test(text)) problems.push(text);
    });
    page.on('pageerror', (error) => problems.push(`uncaught: ${error.message}`));
    await use(problems);
    expect(problems, 'CSP violations or uncaught errors').toEqual([]);
  },
  api: async ({ request }, use) => {
    const { access_token } = await login(request);
    await use(new Api(request, access_token));
  },
  signedIn: async ({ page, request, problems }, use) => {
    void problems;
    const answer = await login(request);
    // The app keeps its session in localStorage: put one there before the first page loads.
    await page.addInitScript((saved) => {
      if (!localStorage.getItem('musiclib.auth')) localStorage.setItem('musiclib.auth', saved);
    }, JSON.stringify({ token: answer.access_token, user: answer.user, expiresAt: Date.now() + answer.expires_in * 1000 }));
    await use(page);
  },
});

export { expect };

/** The playback time of the first <audio> (the one playing). */
export function audioTime(page: Page): Promise<number> {
  return page.evaluate(() => document.querySelector('audio')?.currentTime ?? -1);
}

export async function screenshot(page: Page, name: string) {
  await page.screenshot({ path: `test-results/${name}.png` });
}

/** A short WAV of noise, different on every run (so it is new to the library). */
export function wav(seconds = 1, rate = 8000): Buffer {
  const samples = seconds * rate;
  const data = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) data.writeInt16LE(Math.floor((Math.random() - 0.5) * 20000), i * 2);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + data.length, 4);
  header.write('WAVEfmt ', 8);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(rate, 24);
  header.writeUInt32LE(rate * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36);
  header.writeUInt32LE(data.length, 40);
  return Buffer.concat([header, data]);
}
