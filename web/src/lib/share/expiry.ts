// A share's expiry as the dialogs offer it (never, a day, a week, a month, a date) and as the
// API takes it (`expires_at`: RFC 3339, null for never, absent to keep the current one).

export type ExpiryChoice = 'keep' | 'never' | 'day' | 'week' | 'month' | 'date';

const DAY = 24 * 60 * 60 * 1000;

/**
 * `expires_at` for a choice: null for never, undefined to keep (or when the date is missing);
 * a date is the end of that day where the listener is.
 */
export function expiresAt(choice: ExpiryChoice, date: string, now: Date = new Date()): string | null | undefined {
  switch (choice) {
    case 'keep':
      return undefined;
    case 'never':
      return null;
    case 'day':
      return new Date(now.getTime() + DAY).toISOString();
    case 'week':
      return new Date(now.getTime() + 7 * DAY).toISOString();
    case 'month': {
      const later = new Date(now);
      later.setMonth(later.getMonth() + 1);
      // 31 January and a month: the end of February, not 3 March.
      if (later.getDate() !== now.getDate()) later.setDate(0);
      return later.toISOString();
    }
    case 'date': {
      const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
      if (!match) return undefined;
      return new Date(Number(match[1]), Number(match[2]) - 1, Number(match[3]), 23, 59, 59).toISOString();
    }
  }
}

/** Today (where the listener is) as `YYYY-MM-DD`, the earliest date a date input offers. */
export function today(now: Date = new Date()): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
}
