// @ts-check
/**
 * The payment dialog (Pi.createPayment): payment-machine.js decides the state, this module runs
 * what each state needs (the platform calls, the app's callbacks, the timers) and draws it.
 * Every event goes through `dispatch`; entering a state runs its `onEnter` effect once.
 */

import { openModal } from '../../../web/ui/dialogs.js'
import { h } from '../../../web/ui/dom.js'
import { formatPi } from '../../../web/ui/format.js'
import { toast } from '../../../web/ui/toast.js'
import { call } from '../api.js'
import { receiptLink } from '../receipt.js'
import { createPayGuard, near, PLACES } from './pay-guard.js'
import { canCancel, FEE_PI, FINAL_STATES, initialState, shortOfFunds, toStroops, transition, view } from './payment-machine.js'

const enc = encodeURIComponent
const now = () => performance.now()

/**
 * What the dialog needs of the page (flows.js hands it its context).
 * @typedef {{
 *   app(): { app_id: string, name: string, network: string },
 *   platform(): import('../platform.js').Platform,
 *   tuning: { resendMs: number, pollMs: number, adMs: number },
 *   approvalWindowSeconds: number,
 *   stepUpAmount?: string,
 *   balance(): Promise<string>,
 *   refreshWallet(): unknown,
 * }} PaymentContext
 * @typedef {import('../../api/routes').Answer<'/v2/client/payments/{payment_id}'>} ApiPayment the platform's payment
 * @typedef {{ amount: number, memo: string, metadata: Record<string, unknown> }} PaymentParams
 * @typedef {{ type: string, payment?: import('./payment-machine.js').Payment, message?: string, expired?: boolean }} DialogEvent
 * @typedef {import('../api.js').ApiError & { body?: { payment?: ApiPayment, step_up_amount?: string } }} Refusal what call() and pay() throw
 */

/**
 * Where the last press the platform page saw landed. Presses inside the app's frame are the app's
 * (another origin): the page sees them from the moment a dialog covers the frame, so a stream of
 * taps is known from its second tap, and the next dialog opens with Pay away from it.
 */
/** @type {{ x: number, y: number } | undefined} */
let lastPress
globalThis.document?.addEventListener(
  'pointerdown',
  (event) => {
    lastPress = { x: event.clientX, y: event.clientY }
  },
  true,
)

/** The platform's messages speak of "the user"; the user's own dialogs speak to them. */
const secondPerson = (/** @type {unknown} */ text) =>
  String(text)
    .replace(/\bThe user's\b/g, 'Your')
    .replace(/\bthe user's\b/g, 'your')
    .replace(/\bThe user\b/g, 'You')
    .replace(/\bthe user\b/g, 'you')

/**
 * Runs one payment dialog for the app's request `params` (`amount`, `memo`, `metadata`), answering through `reply`.
 * @param {PaymentContext} ctx
 * @param {{ token: string }} auth the app's page load's access token
 * @param {Record<string, unknown>} params
 * @param {import('../bridge.js').Channel} reply
 */
export async function runPaymentDialog(ctx, auth, params, reply) {
  const app = ctx.app()
  // As the SDK sends them (it checks them); the platform refuses a bad one when creating the payment.
  const { amount, memo, metadata } = /** @type {PaymentParams} */ (params)
  const windowMs = ctx.approvalWindowSeconds * 1000

  /** @type {Set<ReturnType<typeof setInterval>>} */
  const timers = new Set()
  /**
   * @param {number} ms
   * @param {() => unknown} fn
   */
  const every = (ms, fn) => timers.add(setInterval(fn, ms))
  const stopTimers = () => {
    for (const timer of timers) clearInterval(timer)
    timers.clear()
  }

  let state = initialState()
  let deadline = Number.POSITIVE_INFINITY
  let offsetMs = 0
  const platformNow = () => Date.now() + offsetMs
  /** Your balance in stroops once read; Pay needs amount + fee. @type {bigint | undefined} */
  let balanceStroops
  /** Why creating the payment failed, for the status line. @type {string | undefined} */
  let createMessage
  /** The payment of a state past `creating`, which always has one. */
  const current = () => /** @type {ApiPayment} */ (state.payment)

  const status = h('p', { class: 'status-line', role: 'status', 'data-stage': state.name }, 'Creating the payment…')
  // Paid: what was paid, to whom, and the receipt, announced once the transaction is on the ledger (#41 U23).
  const success = h('div', { class: 'pay-success', role: 'status', 'aria-live': 'polite', 'data-testid': 'pay-success' })
  const balance = h('dd', { class: 'balance-value' }, '…')
  const paymentId = h('dd', { class: 'mono' }, '…')
  const payButton = h('button', { type: 'button', class: 'primary', disabled: true }, 'Pay')
  const cancelButton = h('button', { type: 'button', disabled: true }, 'Cancel')
  const closeButton = h('button', { type: 'button', hidden: true }, 'Close')
  // Production: above the step-up amount the user confirms with their password; the server refuses the pay without it.
  let stepUp = ctx.stepUpAmount !== undefined && (toStroops(amount) ?? 0n) > (toStroops(ctx.stepUpAmount) ?? 0n)
  const passwordId = `pay-password-${Math.random().toString(36).slice(2)}`
  const passwordInput = h('input', { id: passwordId, type: 'password', autocomplete: 'current-password', maxlength: '512' })
  const passwordLabel = h('label', { for: passwordId }, `Your password: this payment is more than ${formatPi(ctx.stepUpAmount ?? '0')}`)
  const stepUpBox = h('div', { class: 'step-up stack', hidden: true }, passwordLabel, passwordInput)

  let dialogOpen = true
  const closeModal = openModal({
    label: 'Confirm payment',
    className: 'payment',
    // Never on Pay: keyboard activation needs the user to move the focus there (pay-guard.js).
    focusAction: false,
    onDismiss: () => (canCancel(state) ? dispatch({ type: 'cancel' }) : closeDialog()),
    render: () => [
      h('div', { class: 'amount-big' }, formatPi(amount)),
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, 'To'),
        h('dd', {}, app.name),
        // The app's network: the payment is on its ledger, and the balance below is the one there.
        h('dt', {}, 'Network'),
        h('dd', { 'data-testid': 'payment-network' }, app.network),
        h('dt', {}, 'Memo'),
        h('dd', { class: 'memo' }, memo),
        h('dt', {}, 'Network fee'),
        h('dd', {}, formatPi(FEE_PI)),
        h('dt', {}, 'Your balance'),
        balance,
        h('dt', {}, 'Payment'),
        paymentId,
      ),
      stepUpBox,
      success,
      status,
      h('div', { class: 'actions' }, cancelButton, closeButton, payButton),
    ],
  })
  const closeDialog = () => {
    dialogOpen = false
    stopGuard()
    closeModal()
  }

  // The tap-jack guard (pay-guard.js): Pay is armed once enabled and the dialog shown and still
  // for a while, it counts only a press that began on it armed, and it is moved from under the
  // point of the last press.
  const guard = createPayGuard()
  // openModal drew Pay inside its dialog.
  const dialogElement = /** @type {HTMLElement} */ (payButton.closest('[role="dialog"]'))
  let place = 'center'
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let armTimer
  const scheduleArming = () => {
    clearTimeout(armTimer)
    const wait = guard.armedAt() - now()
    if (Number.isFinite(wait) && wait > 0 && dialogOpen) armTimer = setTimeout(render, wait + 10)
  }
  const moved = () => {
    guard.moved(now())
    render()
  }
  /** Moves the dialog to the first place where Pay is away from `point`; the clock restarts. */
  /** @param {{ x: number, y: number } | undefined} point */
  const keepPayAway = (point) => {
    if (point === undefined || payButton.hidden || !near(point, payButton.getBoundingClientRect())) return
    for (const candidate of PLACES) {
      dialogElement.dataset.place = candidate
      if (!near(point, payButton.getBoundingClientRect())) {
        place = candidate
        return moved()
      }
    }
    // Nowhere is away from it (a tiny window): Pay stays, and a stream of taps still never counts.
    dialogElement.dataset.place = place
  }
  /** A press on one of the dialog's own controls but Pay (Cancel, the password): a choice of the user's, which must not move the dialog from under it. */
  const onOtherControl = (/** @type {EventTarget | null} */ target) =>
    target instanceof Element &&
    dialogElement.contains(target) &&
    !payButton.contains(target) &&
    target.closest('button, input, label, a') !== null
  /** @param {PointerEvent} event */
  const onPointerDown = (event) => {
    const counts = guard.pointerDown({
      t: now(),
      onPay: payButton.contains(/** @type {Node | null} */ (event.target)),
      primary: event.isPrimary && event.button === 0,
    })
    if (counts) return
    // Any other press disarms Pay for a moment (a stream of taps keeps it disarmed), and moves it from under the press.
    if (!onOtherControl(event.target)) keepPayAway({ x: event.clientX, y: event.clientY })
    render()
  }
  const onVisible = () => {
    if (document.visibilityState === 'visible') moved()
  }
  const resizes = new ResizeObserver(moved)
  document.addEventListener('pointerdown', onPointerDown, true)
  document.addEventListener('visibilitychange', onVisible)
  window.addEventListener('resize', moved)
  function stopGuard() {
    clearTimeout(armTimer)
    resizes.disconnect()
    document.removeEventListener('pointerdown', onPointerDown, true)
    document.removeEventListener('visibilitychange', onVisible)
    window.removeEventListener('resize', moved)
  }

  const render = () => {
    const shown = view(state, {
      appName: app.name,
      amount,
      windowSeconds: windowMs / 1000,
      secondsLeft: Math.max(0, Math.ceil((deadline - platformNow()) / 1000)),
      shortOfFunds: shortOfFunds(amount, balanceStroops),
      message: createMessage,
      production: ctx.platform().mode === 'production',
    })
    if (shown.text !== undefined) {
      status.textContent = shown.text
      status.className = `status-line ${shown.tone}`
    }
    status.dataset.stage = state.name
    stepUpBox.hidden = !stepUp || shown.pay.hidden
    // Above the step-up amount Pay waits for the password: its clock starts once one is typed.
    const enabled = !shown.pay.disabled && !(stepUp && passwordInput.value === '')
    guard.setEnabled(enabled, now())
    const armed = enabled && guard.isArmed(now())
    // Disabled until armed; a focused Pay that is disarmed (the dialog moved) hands the focus to the dialog, not <body>.
    if (!armed && document.activeElement === payButton) dialogElement.focus()
    payButton.disabled = !armed
    payButton.dataset.armed = String(armed)
    scheduleArming()
    payButton.textContent = state.name === 'approved' && state.error !== undefined ? 'Pay again' : 'Pay'
    payButton.hidden = shown.pay.hidden
    cancelButton.disabled = shown.cancel.disabled
    cancelButton.hidden = shown.cancel.hidden
    closeButton.hidden = shown.close.hidden
  }

  /** The end of the flow the app hears of: its callback, the wallet read again, a toast if the dialog was closed. */
  /** @param {[name: string, args: unknown[]]} event */
  const finish = (event) => {
    stopTimers()
    reply.event(...event, true)
    ctx.refreshWallet()
    if (!dialogOpen) toast(status.textContent)
  }

  const readClock = async () => {
    try {
      offsetMs = await ctx.platform().clockOffsetMs()
    } catch {
      // Without the platform clock the countdown reads the wall clock.
    }
  }

  /**
   * Once the payment exists: the app is told to approve it (again every `resendMs` while the
   * window is open), the payment is polled until the flow ends, and the countdown ticks.
   */
  /** @param {ApiPayment} created */
  const watch = (created) => {
    const id = created.identifier
    paymentId.textContent = id
    deadline = Date.parse(created.created_at) + windowMs
    reply.event('readyForServerApproval', [id])
    every(ctx.tuning.resendMs, () => {
      if (state.name === 'awaiting_approval' && platformNow() < deadline) reply.event('readyForServerApproval', [id])
    })
    let polling = false
    every(ctx.tuning.pollMs, async () => {
      // A submit's own answer moves the payment on; a cancel by the platform is being explained.
      if (polling || FINAL_STATES.has(state.name) || state.name === 'submitting' || state.name === 'confirming_cancel') return
      polling = true
      try {
        dispatch({ type: 'update', payment: await call(`/v2/client/payments/${enc(id)}`, { token: auth.token }) })
      } catch {
        // Polled again on the next tick.
      } finally {
        polling = false
      }
    })
    every(500, () => {
      if (state.name === 'awaiting_approval') render()
    })
  }

  /**
   * What entering each state does (states without an entry are only drawn).
   * @type {Record<string, (() => unknown) | undefined>}
   */
  const onEnter = {
    submitting: async () => {
      const id = current().identifier
      try {
        // Sandbox: the user's token pays; production: the signed-in person's account does (platform.js).
        const password = stepUp ? passwordInput.value : undefined
        passwordInput.value = ''
        dispatch({ type: 'submitted', payment: await ctx.platform().pay(id, auth.token, password) })
      } catch (caught) {
        const error = /** @type {Refusal} */ (caught)
        // The platform knows the step-up amount best: a refusal for want of the password shows the field.
        if (error.code === 'step_up_required') {
          stepUp = true
          passwordLabel.textContent = `Your password: this payment is more than ${formatPi(error.body?.step_up_amount ?? ctx.stepUpAmount ?? '0')}`
        }
        // The message stays until the next Pay (and after the app's cancel), and the app hears of it.
        const payment = error.body?.payment
        const status = error.status > 0 ? ` (HTTP ${error.status})` : ''
        dispatch({ type: 'pay_failed', message: `Pay failed${status}: ${secondPerson(error.message)}`, payment })
        // Still open (approved): the user may Pay again or cancel, so the app must not cancel it.
        const retryable = state.name === 'approved'
        reply.event('error', [{ code: error.code ?? 'unknown_error', message: error.message, retryable }, payment ?? state.payment])
        ctx.refreshWallet()
      }
    },
    cancelling: async () => {
      try {
        dispatch({
          type: 'update',
          payment: await call(`/v2/client/payments/${enc(current().identifier)}/cancel`, { method: 'POST', token: auth.token }),
        })
        closeDialog()
      } catch (caught) {
        const error = /** @type {Refusal} */ (caught)
        dispatch({ type: 'cancel_failed', message: error.message, payment: error.body?.payment })
      }
    },
    confirming_cancel: async () => {
      const payment = current()
      // Someone may have moved the platform clock: read it before telling expiry from the app's cancel.
      await readClock()
      const expired = !payment.status.developer_approved && payment.transaction === null && platformNow() >= deadline - 1000
      dispatch({ type: 'cancel_explained', expired })
    },
    paid: () => {
      const paid = current()
      const paidAt = platformNow()
      // Paid: on the ledger, with its transaction.
      const txid = () => /** @type {{ txid: string }} */ (paid.transaction).txid
      const sendCompletion = () => reply.event('readyForServerCompletion', [paid.identifier, txid()])
      success.replaceChildren(
        h('p', {}, h('strong', {}, `You paid ${formatPi(amount)} to ${app.name}.`)),
        h('p', {}, receiptLink(txid(), 'View the receipt (opens in a new tab)', {})),
      )
      sendCompletion()
      every(ctx.tuning.resendMs, () => {
        if (state.name !== 'paid') return
        if (platformNow() < paidAt + windowMs) return sendCompletion()
        dispatch({ type: 'completion_timeout' })
      })
      ctx.refreshWallet()
    },
    completed: () => {
      finish(['completed', [state.payment]])
      // The sandbox's dialog closes on its own (a developer pays again and again); production's
      // stays with its receipt until the person closes it.
      if (ctx.platform().mode !== 'production') setTimeout(closeDialog, 2000)
    },
    cancelled: () => finish(['cancel', [current().identifier]]),
    cancelled_by_app: () => finish(['error', [{ code: 'payment_cancelled', message: status.textContent }, state.payment]]),
    expired: () => finish(['error', [{ code: 'payment_expired', message: status.textContent }, state.payment]]),
    not_completed: () => {
      // The app will meet this payment again through onIncompletePaymentFound.
      stopTimers()
      reply.event('closed', [state.payment], true)
    },
  }

  /**
   * One event for the machine; those that move a payment on carry it (payment-machine.js).
   * @param {DialogEvent} event
   */
  function dispatch(event) {
    const before = state
    state = transition(state, /** @type {import('./payment-machine.js').MachineEvent} */ (event))
    if (state === before) return
    render()
    if (state.name !== before.name) onEnter[state.name]?.()
  }

  guard.moved(now())
  dialogElement.dataset.place = place
  keepPayAway(lastPress)
  resizes.observe(dialogElement)

  ctx.balance().then(
    (/** @type {string} */ value) => {
      balance.textContent = formatPi(value)
      balanceStroops = toStroops(value)
      render()
    },
    () => {
      balance.textContent = 'unknown'
    },
  )
  // A click counts only as pay-guard.js says: a press that began on an armed Pay, or a fresh key on it.
  payButton.addEventListener('click', (event) => {
    if (guard.accept({ pointer: event.detail > 0 })) dispatch({ type: 'pay' })
  })
  payButton.addEventListener('keydown', (event) => guard.keyDown({ t: now(), key: event.key, repeat: event.repeat }))
  cancelButton.addEventListener('click', () => dispatch({ type: 'cancel' }))
  passwordInput.addEventListener('input', () => render())
  closeButton.addEventListener('click', closeDialog)

  await readClock()
  let created
  try {
    created = await call('/v2/client/payments', { method: 'POST', token: auth.token, body: { amount, memo, metadata } })
  } catch (caught) {
    const error = /** @type {Refusal} */ (caught)
    createMessage = error.message
    dispatch({ type: 'create_failed' })
    return reply.error(error.code ?? 'unknown_error', error.message, error.body?.payment)
  }
  if (!reply.active()) return closeDialog()
  reply.result(created, true)
  reply.onAbort(() => {
    dispatch({ type: 'abort' })
    stopTimers()
    closeDialog()
  })
  dispatch({ type: 'created', payment: created })
  watch(created)
  render()
}
