// @ts-check
/**
 * Focus management both pages share: what can take the focus, and keeping Tab inside a dialog.
 */

export const FOCUSABLE =
  'a[href], button:not([disabled]):not([hidden]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])'

/**
 * Whether focus may go back to `element`: still in the page, shown, not disabled.
 * @param {Element | null} element
 * @returns {element is HTMLElement}
 */
export const focusable = (element) =>
  element instanceof HTMLElement &&
  element !== document.body &&
  element.isConnected &&
  !(/** @type {HTMLButtonElement} */ (element).disabled) &&
  element.getClientRects().length > 0

/**
 * Tab and Shift+Tab cycle inside `container` (a modal dialog): the page behind it is out of reach,
 * and a focus that got outside comes back in.
 * @param {Element} container
 * @param {KeyboardEvent} event
 */
export function keepFocusIn(container, event) {
  const items = /** @type {HTMLElement[]} */ ([...container.querySelectorAll(FOCUSABLE)]).filter((el) => el.offsetParent !== null)
  const first = items[0]
  const last = items[items.length - 1]
  if (first === undefined || last === undefined) {
    event.preventDefault()
    return
  }
  const inside = container.contains(document.activeElement)
  if (event.shiftKey && (document.activeElement === first || !inside)) {
    event.preventDefault()
    last.focus()
  } else if (!event.shiftKey && (document.activeElement === last || !inside)) {
    event.preventDefault()
    first.focus()
  }
}

/**
 * Keeps Tab and Shift+Tab inside `container` from now on.
 * @param {HTMLElement} container
 */
export function trapFocus(container) {
  container.addEventListener('keydown', (event) => {
    if (event.key === 'Tab') keepFocusIn(container, event)
  })
}
