import { describe, expect, it } from 'vitest';
import { lineAt, lineTime } from './lyrics';

const lines = [0, 2000, 4000, 10000].map((start_ms, i) => ({ start_ms, text: `line ${i}` }));

describe('lyrics line lookup', () => {
  it('finds the last line started', () => {
    expect(lineAt(lines, 0)).toBe(0);
    expect(lineAt(lines, 1999)).toBe(0);
    expect(lineAt(lines, 2000)).toBe(1);
    expect(lineAt(lines, 9999)).toBe(2);
    expect(lineAt(lines, 60000)).toBe(3);
  });

  it('is -1 before the first line and for no lines', () => {
    expect(lineAt([{ start_ms: 500, text: 'x' }], 100)).toBe(-1);
    expect(lineAt([], 1000)).toBe(-1);
  });

  it('applies the LRC offset: positive shows lines sooner', () => {
    expect(lineAt(lines, 1500, 500)).toBe(1);
    expect(lineTime(lines, 1, 500)).toBe(1.5);
    expect(lineTime(lines, 0, 500)).toBe(0);
    expect(lineTime(lines, 99)).toBe(0);
  });
});
