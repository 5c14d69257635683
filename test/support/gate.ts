/** @module A promise the test opens when it chooses: a step, hook or child held until then. */

/** A promise and its release. */
export function gate(): { opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((r) => {
    open = r;
  });
  return { opened, open };
}
