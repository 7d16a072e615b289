// Who is signed in: the token and user, kept in localStorage so a reload stays signed in.
import type { components } from '../api/schema';

type User = components['schemas']['UserOut'];
type TokenOut = components['schemas']['TokenOut'];

const KEY = 'musiclib.auth';

interface Saved {
  token: string;
  user: User;
  expiresAt: number;
}

function load(): Saved | null {
  try {
    const saved = JSON.parse(localStorage.getItem(KEY) ?? 'null') as Saved | null;
    if (saved && typeof saved.token === 'string' && saved.expiresAt > Date.now()) return saved;
  } catch {
    // A damaged entry is the same as none.
  }
  return null;
}

class AuthStore {
  #saved = $state<Saved | null>(load());
  /** Set when the server refused the token, so the sign-in page can say why. */
  expired = $state(false);

  get token(): string | null {
    return this.#saved?.token ?? null;
  }
  get user(): User | null {
    return this.#saved?.user ?? null;
  }
  get signedIn(): boolean {
    return this.#saved !== null;
  }

  signIn = (answer: TokenOut) => {
    this.#saved = {
      token: answer.access_token,
      user: answer.user,
      expiresAt: Date.now() + answer.expires_in * 1000,
    };
    this.expired = false;
    localStorage.setItem(KEY, JSON.stringify(this.#saved));
  };

  signOut = () => {
    this.#saved = null;
    localStorage.removeItem(KEY);
    for (const listener of this.#onSignOut) listener();
  };

  expire = () => {
    if (!this.#saved) return;
    this.expired = true;
    this.signOut();
  };

  #onSignOut: (() => void)[] = [];
  /** Other stores clear what belongs to the user (queue, likes) when they sign out. */
  onSignOut = (listener: () => void) => {
    this.#onSignOut.push(listener);
  };
}

export const auth = new AuthStore();
