// @ts-check
/**
 * Where the platform page puts the focus when what had it is gone: the app's frame when an app is
 * open, else the heading of the view shown (never <body>). Its modal dialogs use it too.
 */
import { setModalHost } from '../../web/ui/dialogs.js'
import { focusable } from '../../web/ui/focus.js'

/**
 * Where focus goes when the element that had it is gone: the app's frame when an app is open,
 * else the heading of the view shown (never <body>).
 */
export function focusFallback() {
  const frame = document.getElementById('app-frame')
  if (frame !== null && focusable(frame)) return frame.focus()
  const heading = document.querySelector('#main > section:not([hidden]) h1')
  if (heading instanceof HTMLElement) {
    heading.setAttribute('tabindex', '-1')
    heading.focus()
  } else document.getElementById('main')?.focus()
}

/**
 * After an act that drew its part of the page again (#41 U14): the focus goes to what the act made
 * (`selector`: a new key's field, the next form's field, the toggled button), never to <body>;
 * focusFallback when it is not there.
 * @param {string} selector
 */
export function focusAfterAct(selector) {
  const target = document.querySelector(selector)
  if (target instanceof HTMLElement && focusable(target)) target.focus()
  else focusFallback()
}

/** Whether anything in the page has had the focus: until then, the page is as it loaded. */
let focusedOnce = false
// (`globalThis.document`: the payment machine's unit tests load this module in Node, without a page.)
globalThis.document?.addEventListener('focusin', () => {
  focusedOnce = true
})

/**
 * After a view changed: focus that was on something now gone or hidden goes to focusFallback, never
 * stays on <body>. A page nobody has focused yet is left alone: its first Tab reaches the skip link.
 */
export function refocus() {
  if (focusedOnce && !focusable(document.activeElement)) focusFallback()
}

/**
 * What the rest of the page is while a dialog is open: inert (no focus, no clicks). The app's frame
 * is left out: inert would drop the focus inside it, which goes back to the app's own button on
 * close; the overlay covers it and Tab stays in the dialog anyway.
 */
setModalHost({
  layer: 'modal-layer',
  behind: '.skip-link, .topbar, #drawer, #main > section:not(#browser-view), #browser-view .appbar, #sdk-status',
  fallback: focusFallback,
})
