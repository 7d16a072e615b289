// Short messages for the listener: shown as a toast and read by screen readers (role=status).
class ToastStore {
  message = $state('');
  #timer: ReturnType<typeof setTimeout> | undefined;

  say = (message: string) => {
    this.message = message;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => (this.message = ''), 4000);
  };
}

export const toast = new ToastStore();
