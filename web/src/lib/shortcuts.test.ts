import { describe, expect, it, vi } from 'vitest';
import { handleShortcut } from './shortcuts';

function actions() {
  return { toggle: vi.fn(), seekBy: vi.fn(), next: vi.fn(), previous: vi.fn(), focusSearch: vi.fn() };
}
function key(key: string, tagName = 'BODY', extra: Partial<KeyboardEvent> = {}, inside = false): KeyboardEvent {
  const target = { tagName, isContentEditable: false, closest: () => (inside ? {} : null) };
  return { key, target, defaultPrevented: false, ctrlKey: false, metaKey: false, altKey: false, shiftKey: false, ...extra } as unknown as KeyboardEvent;
}

describe('keyboard shortcuts', () => {
  it('maps space, arrows, n, p and /', () => {
    const a = actions();
    for (const k of [' ', 'ArrowLeft', 'ArrowRight', 'n', 'p', '/']) expect(handleShortcut(key(k), a)).toBe(true);
    expect(a.toggle).toHaveBeenCalledOnce();
    expect(a.seekBy.mock.calls).toEqual([[-5], [5]]);
    expect(a.next).toHaveBeenCalledOnce();
    expect(a.previous).toHaveBeenCalledOnce();
    expect(a.focusSearch).toHaveBeenCalledOnce();
  });

  it('does nothing while typing in a field or with a modifier', () => {
    const a = actions();
    for (const tag of ['INPUT', 'TEXTAREA', 'SELECT']) expect(handleShortcut(key('n', tag), a)).toBe(false);
    expect(handleShortcut(key('n', 'BODY', { ctrlKey: true }), a)).toBe(false);
    expect(a.next).not.toHaveBeenCalled();
  });

  it('leaves space to a focused button', () => {
    const a = actions();
    expect(handleShortcut(key(' ', 'BUTTON', {}, true), a)).toBe(false);
    expect(a.toggle).not.toHaveBeenCalled();
  });
});
