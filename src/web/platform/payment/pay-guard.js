// @ts-check
/**
 * When a press of the payment dialog's Pay counts (issue 38: a fast tap must not confirm a
 * payment), without a DOM: payment-dialog.js feeds it what happened and when, and asks. As the
 * browsers' own permission prompts do (Chromium's InputEventActivationProtector):
 *
 * - Pay is armed only once it has been enabled, and the dialog shown and still, for ARM_MS: the
 *   dialog's appearing, any change of its size or place, the window's, and the page coming back
 *   into view restart the clock.
 * - A pointer press counts only when its pointerdown began on Pay while Pay was armed. Any other
 *   press the page sees disarms Pay for REPEAT_MS: a tap in a stream of taps is not a decision,
 *   wherever it lands, and Pay stays disarmed while the taps go on.
 * - A key (Enter or Space) counts only when it went down on Pay, armed, and was not a repeat of a
 *   key held from before: focus must have been moved to Pay (the dialog never puts it there).
 *
 * Times are milliseconds from one clock (performance.now or event.timeStamp).
 */

/** How long Pay must have been enabled, and the dialog shown and still, before a press counts. */
export const ARM_MS = 600
/** A press disarms Pay for this long: a press within it of the previous one is part of a stream of taps. */
export const REPEAT_MS = 500
/** How far (CSS pixels) the point of the last press must stay from Pay's box. */
export const AVOID_PX = 48

export function createPayGuard() {
  /** When the dialog was last shown, moved or resized. */
  let stillSince = Number.POSITIVE_INFINITY
  /** When Pay last became enabled (the payment approved, the balance enough); undefined while it is not. */
  /** @type {number | undefined} */
  let enabledSince
  let lastPressAt = Number.NEGATIVE_INFINITY
  /** The press (pointer or key) under way on Pay: whether it counts. */
  let pointerPress = false
  let keyPress = false

  const armedAt = () =>
    enabledSince === undefined ? Number.POSITIVE_INFINITY : Math.max(Math.max(stillSince, enabledSince) + ARM_MS, lastPressAt + REPEAT_MS)

  return {
    /** The dialog appeared, or its size or place changed, or the page came back into view: the clock restarts. */
    /** @param {number} t */
    moved(t) {
      stillSince = t
      pointerPress = false
      keyPress = false
    },
    /** Whether Pay may be pressed by its state (approved, funds enough); the clock starts when it becomes so. */
    /**
     * @param {boolean} enabled
     * @param {number} t
     */
    setEnabled(enabled, t) {
      if (!enabled) enabledSince = undefined
      else if (enabledSince === undefined) enabledSince = t
    },
    /** When Pay is (or will be) armed; Infinity while it is not enabled. */
    armedAt,
    /** @param {number} t */
    isArmed: (t) => t >= armedAt(),
    /**
     * A pointerdown anywhere in the page; `onPay` when it landed on Pay. Answers whether it is a
     * press of Pay that counts; one that does not disarms Pay for REPEAT_MS.
     * @param {{ t: number, onPay: boolean, primary?: boolean }} press
     */
    pointerDown({ t, onPay, primary = true }) {
      pointerPress = onPay && primary && t >= armedAt()
      if (!pointerPress) lastPressAt = t
      return pointerPress
    },
    /**
     * A keydown on Pay: Enter or Space, `repeat` when the key was held down.
     * @param {{ t: number, key: string, repeat: boolean }} press
     */
    keyDown({ t, key, repeat }) {
      if (key !== 'Enter' && key !== ' ') return
      keyPress = !repeat && t >= armedAt()
    },
    /**
     * Pay was clicked: `pointer` for a pointer's click (detail > 0), else a key's. Answers whether it counts (once).
     * @param {{ pointer: boolean }} click
     */
    accept({ pointer }) {
      const counts = pointer ? pointerPress : keyPress
      pointerPress = false
      keyPress = false
      return counts
    },
  }
}

/**
 * Whether `point` (`{x, y}`) lies within `margin` of `box` (a DOMRect's left, top, right, bottom).
 * @param {{ x: number, y: number } | undefined} point
 * @param {{ left: number, top: number, right: number, bottom: number }} box
 */
export function near(point, box, margin = AVOID_PX) {
  if (point === undefined) return false
  return point.x >= box.left - margin && point.x <= box.right + margin && point.y >= box.top - margin && point.y <= box.bottom + margin
}

/** The places the payment dialog may take in the window, in the order they are tried. */
export const PLACES = ['center', 'top', 'bottom', 'left', 'right']
