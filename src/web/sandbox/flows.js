/**
 * What the sandbox page does for each SDK request: the consent dialog, the payment dialog,
 * the ad player, the share and open-URL dialogs. Each handler answers through the bridge's
 * channel (`reply`): a result, an error, or for a payment a stream of events.
 */
import { call, sandbox } from './api.js'
import { formatPi, h, isModalOpen, openModal, short, toast } from './dom.js'

export const SCOPE_TEXT = {
  username: 'Your username',
  payments: 'Ask you for payments and show you ads',
  wallet_address: 'Your wallet address (so that the app can pay you)',
  roles: 'Your roles on the platform',
  in_app_notifications: 'Send you notifications',
  platform: 'Information about your platform account',
  preferred_language: 'Your preferred language',
}
const AD_TYPES = ['rewarded', 'interstitial']
/** The ledger's fee for one payment: 100 stroops (src/ledger/ledger-rules.ts, BASE_FEE_STROOPS). */
const FEE_STROOPS = 100n
const FEE_PI = '0.00001'
/** The platform's messages speak of "the user"; the user's own dialogs speak to them. */
export const secondPerson = (text) =>
  String(text)
    .replace(/\bThe user's\b/g, 'Your')
    .replace(/\bthe user's\b/g, 'your')
    .replace(/\bThe user\b/g, 'You')
    .replace(/\bthe user\b/g, 'you')

/** '12.5' or 12.5 → stroops (BigInt), exact; undefined when it is not such a number. */
function toStroops(value) {
  const match = /^(\d+)(?:\.(\d{1,7}))?$/.exec(String(value))
  if (match === null) return undefined
  return BigInt(match[1]) * 10_000_000n + BigInt((match[2] ?? '').padEnd(7, '0'))
}
const enc = encodeURIComponent

/**
 * `ctx`: `app()` and `user()` (what is open and who is signed in), `frameAuth()` /
 * `setFrameAuth()` (the token the app's current page load was given), `tuning`
 * (`resendMs`, `pollMs`, `adMs`), `approvalWindowSeconds`, `balance()`, `refreshWallet()`,
 * `refreshNotifications()`, `setStatus(text)`.
 */
export function createFlows(ctx) {
  const busy = (reply) => {
    if (!isModalOpen()) return false
    reply.error('busy', 'The sandbox page is showing another dialog; try again once it is closed.')
    return true
  }

  const consent = (app, user, scopes, missing, reply) =>
    new Promise((resolve) => {
      const answer = (allowed) => {
        close()
        resolve(allowed)
      }
      const close = openModal({
        label: `${app.name} asks you to sign in`,
        className: 'consent',
        onDismiss: () => answer(false),
        render: () => [
          h('p', {}, 'Share with ', h('strong', {}, app.name), ' as ', h('strong', {}, user.username), ':'),
          h(
            'ul',
            { class: 'scopes' },
            scopes.map((scope) =>
              h(
                'li',
                { class: missing.includes(scope) ? 'new' : undefined },
                SCOPE_TEXT[scope],
                h('span', { class: 'muted' }, ` (${scope})`),
              ),
            ),
          ),
          h('p', { class: 'muted' }, `App id ${app.app_id}. Scopes in bold are new for this app.`),
          h(
            'div',
            { class: 'actions' },
            h('button', { type: 'button', onclick: () => answer(false) }, 'Deny'),
            h('button', { type: 'button', class: 'primary', onclick: () => answer(true) }, 'Allow'),
          ),
        ],
      })
      reply.onAbort(() => {
        close()
        resolve(undefined)
      })
    })

  async function authenticate(params, reply) {
    const scopes = params.scopes
    if (!Array.isArray(scopes) || scopes.length > 16 || !scopes.every((s) => typeof s === 'string')) {
      return reply.error('invalid_arguments', 'scopes must be an array of scope names.')
    }
    const unknown = scopes.filter((s) => !Object.hasOwn(SCOPE_TEXT, s))
    if (unknown.length > 0) {
      return reply.error('invalid_arguments', `Unknown scopes: ${unknown.join(', ')}. Known: ${Object.keys(SCOPE_TEXT).join(', ')}.`)
    }
    if (busy(reply)) return
    const app = ctx.app()
    const user = ctx.user()
    const detail = await sandbox(`/sandbox/users/${enc(user.user_id)}`)
    const granted = detail.apps.find((a) => a.app_id === app.app_id)?.scopes ?? []
    const missing = scopes.filter((s) => !granted.includes(s))
    if (missing.length > 0) {
      const allowed = await consent(app, user, scopes, missing, reply)
      if (allowed === undefined) return
      if (!allowed) {
        ctx.setStatus(`You denied ${app.name} access.`)
        return reply.error('consent_denied', `The user declined to share ${missing.join(', ')} with ${app.name}.`)
      }
    }
    if (!reply.active()) return
    const auth = await sandbox(`/sandbox/apps/${enc(app.app_id)}/authenticate`, {
      method: 'POST',
      body: { user_id: user.user_id, scopes },
    })
    // Only a token with the payments scope may read the user's payments (docs/errors.md, Scopes).
    const { payment } = scopes.includes('payments')
      ? await call('/v2/client/payments/incomplete', { token: auth.accessToken })
      : { payment: null }
    ctx.setFrameAuth({ token: auth.accessToken, user: auth.user, scopes })
    // The only message that carries the access token, posted to the app's origin only.
    reply.result({ accessToken: auth.accessToken, user: auth.user, incompletePayment: payment })
    ctx.setStatus(`Signed in to ${app.name} as ${user.username}: ${scopes.join(', ') || 'no scopes'}`)
    ctx.refreshNotifications()
  }

  async function createPayment(params, reply) {
    const auth = ctx.frameAuth()
    if (auth === undefined) return reply.error('not_authenticated', 'Call Pi.authenticate before Pi.createPayment.')
    if (busy(reply)) return
    const app = ctx.app()
    const { amount, memo, metadata } = params
    const windowMs = ctx.approvalWindowSeconds * 1000
    const timers = new Set()
    const every = (ms, fn) => timers.add(setInterval(fn, ms))
    const stopTimers = () => {
      for (const timer of timers) clearInterval(timer)
      timers.clear()
    }

    let stage = 'creating'
    let payment
    let deadline = Number.POSITIVE_INFINITY
    let paidAt = 0
    let offsetMs = 0
    const platformNow = () => Date.now() + offsetMs

    const status = h('p', { class: 'status-line', role: 'status', 'data-stage': stage }, 'Creating the payment…')
    const balance = h('dd', { class: 'balance-value' }, '…')
    /** Your balance in stroops once read; Pay needs amount + fee. */
    let balanceStroops
    /** A failed Pay's message: it stays on screen until the next Pay (the polls must not replace it). */
    let payError
    const paymentId = h('dd', { class: 'mono' }, '…')
    const payButton = h('button', { type: 'button', class: 'primary', disabled: true }, 'Pay')
    const cancelButton = h('button', { type: 'button', disabled: true }, 'Cancel')
    const closeButton = h('button', { type: 'button', hidden: true }, 'Close')
    const setStatus = (text, tone = '') => {
      status.textContent = text
      status.className = `status-line ${tone}`
      status.dataset.stage = stage
    }
    let dialogOpen = true
    const closeModal = openModal({
      label: 'Confirm payment',
      className: 'payment',
      onDismiss: () => (stage === 'approval' || stage === 'approved' ? userCancel() : closeDialog()),
      render: () => [
        h('div', { class: 'amount-big' }, formatPi(amount)),
        h(
          'dl',
          { class: 'facts' },
          h('dt', {}, 'To'),
          h('dd', {}, app.name),
          h('dt', {}, 'Memo'),
          h('dd', { class: 'memo' }, memo),
          h('dt', {}, 'Network fee'),
          h('dd', {}, formatPi(FEE_PI)),
          h('dt', {}, 'Your balance'),
          balance,
          h('dt', {}, 'Payment'),
          paymentId,
        ),
        status,
        h('div', { class: 'actions' }, cancelButton, closeButton, payButton),
      ],
    })
    const closeDialog = () => {
      dialogOpen = false
      closeModal()
    }
    ctx.balance().then(
      (value) => {
        balance.textContent = formatPi(value)
        balanceStroops = toStroops(value)
        render()
      },
      () => {
        balance.textContent = 'unknown'
      },
    )

    const shortOfFunds = () =>
      balanceStroops !== undefined && toStroops(amount) !== undefined && toStroops(amount) + FEE_STROOPS > balanceStroops
    const render = () => {
      const left = Math.max(0, Math.ceil((deadline - platformNow()) / 1000))
      payButton.disabled = stage !== 'approved' || shortOfFunds()
      cancelButton.disabled = !(stage === 'approval' || stage === 'approved')
      cancelButton.hidden = stage === 'paid' || stage === 'done'
      payButton.hidden = stage === 'paid' || stage === 'done'
      closeButton.hidden = !(stage === 'paid' || stage === 'done')
      if (stage === 'approval') {
        setStatus(`Waiting for ${app.name} to approve the payment… ${left} s left (the platform cancels it after ${windowMs / 1000} s).`)
      } else if (stage === 'approved' && payError !== undefined) {
        setStatus(payError, 'bad')
      } else if (stage === 'approved' && shortOfFunds()) {
        setStatus(
          `Your balance is too low: this payment needs ${formatPi(amount)} plus the ${formatPi(FEE_PI)} fee. Cancel it, or fund your wallet.`,
          'bad',
        )
      } else if (stage === 'approved') {
        setStatus(`${app.name} approved the payment. Pay signs and submits the transaction from your wallet.`, 'ok')
      } else if (stage === 'paying') {
        setStatus('Signing and submitting the transaction…')
      }
    }

    const finish = (text, tone, event) => {
      stage = 'done'
      stopTimers()
      setStatus(text, tone)
      render()
      reply.event(...event, true)
      ctx.refreshWallet()
      if (!dialogOpen) toast(text)
    }

    const enterPaid = (paid) => {
      if (stage === 'paid' || stage === 'done') return
      payment = paid
      stage = 'paid'
      paidAt = platformNow()
      const txid = paid.transaction.txid
      setStatus(`Paid: transaction ${short(txid)}. Waiting for ${app.name} to complete the payment…`, 'ok')
      render()
      const sendCompletion = () => reply.event('readyForServerCompletion', [paid.identifier, txid])
      sendCompletion()
      every(ctx.tuning.resendMs, () => {
        if (stage !== 'paid') return
        if (platformNow() < paidAt + windowMs) return sendCompletion()
        // The app will meet this payment again through onIncompletePaymentFound.
        stage = 'done'
        stopTimers()
        setStatus(`${app.name} has not completed the payment; it will see it again at its next Pi.authenticate.`, 'bad')
        render()
        reply.event('closed', [payment], true)
      })
      ctx.refreshWallet()
    }

    const apply = (current) => {
      payment = current
      if (stage === 'done') return
      const s = current.status
      if (s.developer_completed) {
        finish(`Completed: ${app.name} completed the payment.`, 'ok', ['completed', [current]])
        setTimeout(closeDialog, 2000)
        return
      }
      if (s.user_cancelled) return finish('You cancelled the payment.', 'bad', ['cancel', [current.identifier]])
      if (s.cancelled) {
        stage = 'done'
        // Someone may have moved the platform clock: read it before telling expiry from the app's cancel.
        return readClock().finally(() => {
          const expired = !s.developer_approved && current.transaction === null && platformNow() >= deadline - 1000
          const [code, text] = expired
            ? ['payment_expired', `${app.name} did not approve the payment within ${windowMs / 1000} s; the platform cancelled it.`]
            : ['payment_cancelled', `${app.name} cancelled the payment.`]
          finish(text, 'bad', ['error', [{ code, message: text }, current]])
        })
      }
      if (current.transaction !== null) return enterPaid(current)
      if (s.developer_approved && stage === 'approval') stage = 'approved'
      render()
    }

    const userCancel = async () => {
      cancelButton.disabled = true
      try {
        const cancelled = await call(`/v2/client/payments/${enc(payment.identifier)}/cancel`, { method: 'POST', token: auth.token })
        apply(cancelled)
        closeDialog()
      } catch (error) {
        setStatus(error.message, 'bad')
        if (error.body?.payment) apply(error.body.payment)
        render()
      }
    }

    payButton.addEventListener('click', async () => {
      stage = 'paying'
      payError = undefined
      render()
      try {
        apply(await call(`/v2/client/payments/${enc(payment.identifier)}/submit`, { method: 'POST', token: auth.token }))
      } catch (error) {
        // The message stays until the next Pay (render() shows it, not "approved…"), and the app hears of it.
        stage = 'approved'
        payError = `The payment failed: ${secondPerson(error.message)}`
        if (error.body?.payment) apply(error.body.payment)
        render()
        reply.event('error', [{ code: error.code ?? 'unknown_error', message: error.message }, error.body?.payment ?? payment])
        ctx.refreshWallet()
      }
    })
    cancelButton.addEventListener('click', userCancel)
    closeButton.addEventListener('click', closeDialog)

    const readClock = async () => {
      try {
        offsetMs = (await sandbox('/sandbox/clock')).offset_seconds * 1000
      } catch {
        // Without the platform clock the countdown reads the wall clock.
      }
    }
    await readClock()
    try {
      payment = await call('/v2/client/payments', { method: 'POST', token: auth.token, body: { amount, memo, metadata } })
    } catch (error) {
      stage = 'done'
      setStatus(error.message, 'bad')
      render()
      return reply.error(error.code ?? 'unknown_error', error.message, error.body?.payment)
    }
    if (!reply.active()) return closeDialog()
    reply.result(payment, true)
    reply.onAbort(() => {
      stopTimers()
      closeDialog()
    })
    paymentId.textContent = payment.identifier
    deadline = Date.parse(payment.created_at) + windowMs
    stage = 'approval'
    render()

    const id = payment.identifier
    reply.event('readyForServerApproval', [id])
    every(ctx.tuning.resendMs, () => {
      if (stage === 'approval' && platformNow() < deadline) reply.event('readyForServerApproval', [id])
    })
    let polling = false
    every(ctx.tuning.pollMs, async () => {
      if (polling || stage === 'done' || stage === 'paying') return
      polling = true
      try {
        apply(await call(`/v2/client/payments/${enc(id)}`, { token: auth.token }))
      } catch {
        // Polled again on the next tick.
      } finally {
        polling = false
      }
    })
    every(500, () => {
      if (stage === 'approval') render()
    })
  }

  const adPlayer = (type, reply) =>
    new Promise((resolve) => {
      const duration = ctx.tuning.adMs
      const started = Date.now()
      const progress = h('progress', { max: String(Math.max(duration, 1)), value: '0' })
      const remaining = h('span', { class: 'muted' }, '')
      let timer
      const end = (action) => {
        clearInterval(timer)
        close()
        resolve(action)
      }
      const close = openModal({
        label: type === 'rewarded' ? 'Rewarded ad' : 'Ad',
        className: 'ad',
        onDismiss: () => end('skipped'),
        render: () => [
          h('div', { class: 'ad-creative' }, 'Your ad here'),
          progress,
          h(
            'div',
            { class: 'actions' },
            remaining,
            h('button', { type: 'button', onclick: () => end('skipped') }, type === 'rewarded' ? 'Skip ad (no reward)' : 'Skip ad'),
          ),
        ],
      })
      const tick = () => {
        const elapsed = Date.now() - started
        progress.value = Math.min(elapsed, duration)
        remaining.textContent = `${Math.max(0, Math.ceil((duration - elapsed) / 1000))} s`
        if (elapsed >= duration) end('watched')
      }
      timer = setInterval(tick, 100)
      tick()
      reply.onAbort(() => {
        clearInterval(timer)
        close()
        resolve(undefined)
      })
    })

  async function showAd(params, reply) {
    const type = params.type
    if (!AD_TYPES.includes(type)) return reply.error('invalid_arguments', 'The ad type must be "rewarded" or "interstitial".')
    const auth = ctx.frameAuth()
    if (auth === undefined) return reply.result({ type, result: 'USER_UNAUTHENTICATED' })
    if (busy(reply)) return
    try {
      const { ready } = await call(`/v2/client/ads/${type}/ready`, { token: auth.token })
      // An ad that is not available is not played; the mediator's answer says why.
      const action = ready ? await adPlayer(type, reply) : 'watched'
      if (action === undefined) return
      reply.result(await call(`/v2/client/ads/${type}/show`, { method: 'POST', token: auth.token, body: { user_action: action } }))
    } catch (error) {
      reply.result({ type, result: error.status === 401 ? 'USER_UNAUTHENTICATED' : 'AD_NETWORK_ERROR' })
    }
  }

  async function isAdReady(params, reply) {
    const type = params.type
    if (!AD_TYPES.includes(type)) return reply.error('invalid_arguments', 'The ad type must be "rewarded" or "interstitial".')
    const auth = ctx.frameAuth()
    if (auth === undefined) return reply.result({ type, ready: false })
    const { ready } = await call(`/v2/client/ads/${type}/ready`, { token: auth.token })
    reply.result({ type, ready })
  }

  function openShareDialog(params, reply) {
    const { title, message } = params
    if (typeof title !== 'string' || typeof message !== 'string')
      return reply.error('invalid_arguments', 'title and message must be strings.')
    if (busy(reply)) return
    const close = openModal({
      label: 'Share',
      onDismiss: () => close(),
      render: () => [
        h('p', {}, h('strong', {}, title.slice(0, 200))),
        h('p', {}, message.slice(0, 2000)),
        h('p', { class: 'muted' }, `Shared from ${ctx.app().name}. The sandbox has no share targets: copy the text instead.`),
        h(
          'div',
          { class: 'actions' },
          h(
            'button',
            {
              type: 'button',
              onclick: () =>
                navigator.clipboard?.writeText(`${title}\n${message}`).then(
                  () => toast('Copied'),
                  () => toast('Could not copy'),
                ),
            },
            'Copy',
          ),
          h('button', { type: 'button', class: 'primary', onclick: () => close() }, 'Close'),
        ),
      ],
    })
    reply.onAbort(close)
    reply.result(null)
  }

  function openUrl(params, reply) {
    let url
    try {
      url = new URL(params.url)
    } catch {
      url = undefined
    }
    if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      return reply.error('invalid_arguments', 'The URL must be an http or https URL.')
    }
    if (busy(reply)) return
    const answer = (opened) => {
      close()
      if (opened) reply.result(null)
      else reply.error('user_cancelled', 'The user did not open the URL.')
    }
    // The user opens it with a click of their own: a link, never window.open from a message.
    const close = openModal({
      label: 'Open in your browser?',
      onDismiss: () => answer(false),
      render: () => [
        h('p', {}, `${ctx.app().name} wants to open a page outside the sandbox:`),
        h('p', { class: 'mono' }, url.href),
        h(
          'div',
          { class: 'actions' },
          h('button', { type: 'button', onclick: () => answer(false) }, 'Cancel'),
          h(
            'a',
            { class: 'button primary', href: url.href, target: '_blank', rel: 'noopener noreferrer', onclick: () => answer(true) },
            'Open',
          ),
        ),
      ],
    })
    reply.onAbort(close)
  }

  return { authenticate, createPayment, showAd, isAdReady, openShareDialog, openUrl }
}
