// Keyboard shortcuts of the player. They never fire while the listener types in a field, nor
// take Space or arrows from a control that uses them itself (buttons, sliders, links).
export interface ShortcutActions {
  toggle(): void;
  seekBy(seconds: number): void;
  next(): void;
  previous(): void;
  focusSearch(): void;
}

const TYPING = new Set(['INPUT', 'TEXTAREA', 'SELECT']);

export function handleShortcut(event: KeyboardEvent, actions: ShortcutActions): boolean {
  if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return false;
  const target = event.target as HTMLElement | null;
  if (target && (TYPING.has(target.tagName) || target.isContentEditable)) return false;
  const onControl = !!target?.closest('button, a, [role="slider"], summary, dialog');
  switch (event.key) {
    case ' ':
      if (onControl) return false;
      actions.toggle();
      return true;
    case 'ArrowLeft':
      if (onControl && target?.closest('[role="slider"]')) return false;
      actions.seekBy(event.shiftKey ? -30 : -5);
      return true;
    case 'ArrowRight':
      if (onControl && target?.closest('[role="slider"]')) return false;
      actions.seekBy(event.shiftKey ? 30 : 5);
      return true;
    case 'n':
    case 'N':
      actions.next();
      return true;
    case 'p':
    case 'P':
      actions.previous();
      return true;
    case '/':
      actions.focusSearch();
      return true;
  }
  return false;
}
