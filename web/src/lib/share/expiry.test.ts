import { describe, expect, it } from 'vitest';
import { expiresAt, today } from './expiry';

describe('share expiry', () => {
  const now = new Date(2026, 0, 31, 12, 0, 0);
  it('turns each choice into expires_at', () => {
    expect(expiresAt('never', '', now)).toBeNull();
    expect(expiresAt('keep', '', now)).toBeUndefined();
    expect(expiresAt('day', '', now)).toBe(new Date(2026, 1, 1, 12).toISOString());
    expect(expiresAt('week', '', now)).toBe(new Date(2026, 1, 7, 12).toISOString());
    expect(expiresAt('month', '', now)).toBe(new Date(2026, 1, 28, 12).toISOString()); // the end of February
    expect(expiresAt('date', '2026-03-04', now)).toBe(new Date(2026, 2, 4, 23, 59, 59).toISOString());
    expect(expiresAt('date', '', now)).toBeUndefined();
  });
  it('writes today as a date input does', () => {
    expect(today(now)).toBe('2026-01-31');
  });
});
