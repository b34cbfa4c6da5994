// @ts-check
// The platform: clock (advance, back to real time), ledger check, fund any wallet, active
// faults, and a reset of the sandbox's data.

import { confirmDialog } from '../../../../web/ui/dialogs.js'
import { h } from '../../../../web/ui/dom.js'
import { formatDuration, formatUtcTime } from '../../../../web/ui/format.js'
import { action, form } from '../../../../web/ui/forms.js'
import { table } from '../../../../web/ui/tables.js'
import { toast } from '../../../../web/ui/toast.js'
import { del, get, hasRoute, post, servedDocument } from '../api.js'
import { advanceClock, MAX_ADVANCE_SECONDS, resetClock, setClock } from '../clock.js'
import { badge, card, code, facts, field, pageTitle, select } from '../parts.js'
import { render } from '../router.js'
import { fundForm, reveal, revealPanel } from '../shared.js'

/** @typedef {import('../../../../web/api/routes').Body<'/sandbox/faults', 'POST'>} FaultBody */
/** @typedef {import('../types').Fault} Fault */
/** @typedef {{ routes: string[], ids: string[] }} V2Operations the /v2 routes (`GET /v2/me`) and their operationIds */

/** @type {[label: string, seconds: number][]} */
const ADVANCE_PRESETS = [
  ['+1 min', 60],
  ['+1 hour', 3600],
  ['+1 day', 86_400],
  ['+30 days', 30 * 86_400],
]
/** @type {[text: string, seconds: number][]} */
const UNITS = [
  ['seconds', 1],
  ['minutes', 60],
  ['hours', 3600],
  ['days', 86_400],
]

/**
 * A sandbox route this Plinth may not have yet: null when it does not.
 * @template {string} P
 * @param {P} path
 */
async function optional(path) {
  return (await hasRoute(path)) ? get(path) : null
}

export async function platformPage() {
  const [clock, check, mainnetCheck, faults, canReset, apps, v2] = await Promise.all([
    get('/sandbox/clock'),
    get('/sandbox/ledger/check'),
    get('/sandbox/ledger/check?network=Pi%20Network'),
    optional('/sandbox/faults'),
    hasRoute('/sandbox/reset', 'post'),
    get('/sandbox/apps?limit=100'),
    v2Operations(),
  ])
  setClock(clock)
  const custom = form(
    { class: 'inline-form', 'data-testid': 'advance-clock' },
    [
      field('Advance by', h('input', { name: 'amount', type: 'number', min: 1, step: 'any', required: true, value: 1 })),
      field('Unit', select('unit', UNITS, 3600)),
      h('button', { type: 'submit', class: 'primary' }, 'Advance'),
    ],
    /** @param {{ amount: string, unit: string }} values */
    async (values) => {
      const seconds = Math.round(Number(values.amount) * Number(values.unit))
      if (!(seconds > 0)) throw new Error('Advance by a positive amount.')
      if (seconds > MAX_ADVANCE_SECONDS) {
        throw new Error(`The clock moves at most ten years at a time (${MAX_ADVANCE_SECONDS / 86_400} days); advance by less.`)
      }
      await advanceClock(seconds)
      await render()
    },
  )
  const presets = ADVANCE_PRESETS.map(([label, seconds]) =>
    action(
      label,
      async () => {
        await advanceClock(seconds)
        await render()
      },
      { kind: 'small' },
    ),
  )
  return [
    revealPanel('platform', render),
    pageTitle(
      'Clock & ledger',
      'The platform clock drives token expiry, approval windows, ad verdicts and quotas. It moves forward, or back to real time with a reset, which keeps everything the moved time expired expired.',
    ),
    card(
      'Platform clock',
      null,
      h(
        'div',
        { class: 'figures' },
        facts([
          ['Now', formatUtcTime(clock.now), 'platform-now'],
          ['Offset', formatDuration(clock.offset_seconds), 'platform-offset'],
        ]),
      ),
      h('div', { class: 'actions' }, presets),
      custom,
      h(
        'div',
        { class: 'actions' },
        action(
          'Reset to real time',
          async () => {
            await resetClock()
            await render()
          },
          { kind: 'small danger', confirm: 'Click again to reset', testid: 'reset-clock' },
        ),
      ),
    ),
    card(
      'Ledger check',
      action('Run again', render, { kind: 'small' }),
      // Each network's ledger has its own books (docs/ledger.md, "Two networks").
      h('div', { class: 'figures' }, [checkFacts('Pi Testnet', check, 'ledger'), checkFacts('Pi Network', mainnetCheck, 'mainnet-ledger')]),
      h('p', {}, h('a', { href: '#/ledger' }, 'Browse the ledger’s transactions (Pi Testnet) →')),
    ),
    card(
      'Fund a wallet',
      null,
      h('p', { class: 'muted' }, 'Grant Pi to any ledger account on a network (it is created there if needed).'),
      fundForm('', render),
    ),
    faults === null ? null : faultsCard(faults.faults, apps.apps, v2),
    canReset ? resetCard() : null,
  ]
}

/** @type {Promise<V2Operations> | undefined} */
let operations
/** The /v2 routes and operationIds this Plinth serves (from its OpenAPI document), read once. */
function v2Operations() {
  operations ??= servedDocument().then((doc) => {
    /** @type {string[]} */
    const routes = []
    /** @type {string[]} */
    const ids = []
    for (const [path, methods] of Object.entries(doc.paths ?? {})) {
      if (!path.startsWith('/v2/')) continue
      for (const [method, op] of Object.entries(methods)) {
        if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue
        routes.push(`${method.toUpperCase()} ${path}`)
        if (op.operationId) ids.push(op.operationId)
      }
    }
    return { routes: routes.sort(), ids: ids.sort() }
  })
  return operations
}

/** @type {[text: string, value: string][]} */
const EFFECTS = [
  ['answer 503 (unavailable)', 'status:503'],
  ['answer 500 (server error)', 'status:500'],
  ['answer 502 (bad gateway)', 'status:502'],
  ['answer 429 (rate limited)', 'status:429'],
  ['delay the answer', 'delay'],
  ['drop the connection', 'drop'],
]

/**
 * Whole numbers within bounds, checked before sending (the API's bounds).
 * @param {string} text
 * @param {string} label
 * @param {number} min
 * @param {number} max
 */
function wholeNumber(text, label, min, max) {
  const n = Number(text)
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${label} is a whole number from ${min} to ${max} (got "${text}").`)
  return n
}

/**
 * The body of POST /sandbox/faults from the form's values; every field the API takes.
 * @param {{ app_id?: string, effect: string, when: NonNullable<FaultBody['when']>, route?: string, operation_id?: string, user_uid?: string, retry_after_seconds?: string, delay_ms?: string, times?: string, probability?: string }} values
 */
function faultBody(values) {
  if (!values.app_id) throw new Error('Choose the app whose calls fail.')
  /** @type {NonNullable<FaultBody['match']>} */
  const match = {}
  for (const name of /** @type {const} */ (['route', 'operation_id', 'user_uid'])) {
    const value = (values[name] ?? '').trim()
    if (value !== '') match[name] = value
  }
  /** @type {FaultBody['effect']} */
  let effect
  if (values.effect.startsWith('status:')) {
    // The effect select offers these four statuses only.
    const status = /** @type {500 | 429 | 503 | 502} */ (Number(values.effect.slice(7)))
    /** @type {{ status: typeof status, retry_after_seconds?: number }} */
    const answer = { status }
    const retry = (values.retry_after_seconds ?? '').trim()
    if (retry !== '' && [429, 503].includes(status)) answer.retry_after_seconds = wholeNumber(retry, 'Retry-After', 0, 86_400)
    effect = answer
  } else if (values.effect === 'delay') {
    effect = { delay_ms: wholeNumber((values.delay_ms ?? '').trim(), 'The delay (ms)', 1, 30_000) }
  } else {
    effect = { drop: true }
  }
  /** @type {FaultBody} */
  const body = { app_id: values.app_id, effect, when: values.when }
  if (Object.keys(match).length > 0) body.match = match
  const times = (values.times ?? '').trim()
  if (times !== '') body.times = wholeNumber(times, 'For how many calls', 1, 1_000_000)
  const probability = (values.probability ?? '').trim()
  if (probability !== '') {
    const p = Number(probability)
    if (!(p > 0 && p <= 1)) throw new Error(`The probability is more than 0 and at most 1, such as 0.25 (got "${probability}").`)
    body.probability = p
  }
  return body
}

/**
 * @param {import('../types').AppItem[]} apps
 * @param {V2Operations} v2
 */
function faultForm(apps, v2) {
  const effect = select('effect', EFFECTS, 'status:503')
  const retry = field(
    'Retry-After (s, optional)',
    h('input', { name: 'retry_after_seconds', type: 'number', min: 0, max: 86_400, placeholder: '1' }),
  )
  const delay = field('Delay (ms)', h('input', { name: 'delay_ms', type: 'number', min: 1, max: 30_000, value: 2000 }))
  // Only the inputs of the chosen effect show: Retry-After for 429 and 503, the delay for a delay.
  const showEffectFields = () => {
    retry.hidden = !['status:429', 'status:503'].includes(effect.value)
    delay.hidden = effect.value !== 'delay'
  }
  effect.addEventListener('change', showEffectFields)
  showEffectFields()
  /**
   * @param {string} id
   * @param {string[]} values
   */
  const list = (id, values) =>
    h(
      'datalist',
      { id },
      values.map((value) => h('option', { value })),
    )
  return form(
    { class: 'inline-form fault-form', 'data-testid': 'create-fault' },
    [
      field(
        'App',
        select(
          'app_id',
          apps.map((app) => [`${app.name} (${app.app_id})`, app.app_id]),
        ),
      ),
      field(
        'Route (optional)',
        h('input', {
          name: 'route',
          list: 'fault-routes',
          maxlength: 300,
          placeholder: 'POST /v2/payments/{payment_id}/approve',
          class: 'wide',
        }),
      ),
      field(
        'or operationId (optional)',
        h('input', { name: 'operation_id', list: 'fault-operations', maxlength: 100, placeholder: 'approvePayment' }),
      ),
      field('Only the user with uid (optional)', h('input', { name: 'user_uid', maxlength: 64, placeholder: 'every user' })),
      field('Effect', effect),
      retry,
      delay,
      field(
        'When',
        select('when', [
          ['before the call runs (nothing changes)', 'before'],
          ['after it runs (the change happens)', 'after'],
        ]),
      ),
      field('For how many calls', h('input', { name: 'times', type: 'number', min: 1, max: 1_000_000, placeholder: 'until cleared' })),
      field('Probability (over 0, at most 1)', h('input', { name: 'probability', type: 'number', min: 0, max: 1, step: 'any', value: 1 })),
      list('fault-routes', v2.routes),
      list('fault-operations', v2.ids),
      h('button', { type: 'submit', class: 'primary' }, 'Add fault'),
    ],
    /** @param {Parameters<typeof faultBody>[0]} values */
    async (values) => {
      const created = await post('/sandbox/faults', faultBody(values))
      toast(`Fault added: ${describeCalls(created.match)} ${describeEffect(created.effect)}`)
      await render()
    },
  )
}

/** @param {Fault['match']} match */
const describeCalls = (match) =>
  [match.route ?? match.operation_id ?? 'every /v2 call', match.user_uid ? `of user uid ${match.user_uid}` : null].filter(Boolean).join(' ')

/** @param {Fault['effect']} e */
function describeEffect(e) {
  if ('status' in e) return `answers ${e.status}${e.retry_after_seconds === undefined ? '' : `, Retry-After ${e.retry_after_seconds} s`}`
  return 'delay_ms' in e ? `delays ${e.delay_ms} ms` : 'drops the connection'
}

/** @param {number} p */
const percent = (p) => `${Math.round(p * 10_000) / 100}%`

/**
 * @param {Fault[]} faults
 * @param {import('../types').AppItem[]} apps
 * @param {V2Operations} v2
 */
function faultsCard(faults, apps, v2) {
  const names = new Map(apps.map((app) => [app.app_id, app.name]))
  const active = faults.filter((fault) => fault.times_left !== 0)
  const rows = active.map((fault) =>
    h(
      'tr',
      { 'data-testid': 'fault-row' },
      h('td', {}, h('a', { href: `#/apps/${encodeURIComponent(fault.app_id)}` }, names.get(fault.app_id) ?? code(fault.app_id))),
      h(
        'td',
        {},
        fault.match.route ? code(fault.match.route) : null,
        fault.match.operation_id ? code(fault.match.operation_id) : null,
        fault.match.route || fault.match.operation_id ? null : 'every /v2 call',
        fault.match.user_uid ? h('div', { class: 'small' }, 'user uid ', code(fault.match.user_uid)) : null,
      ),
      h('td', { 'data-testid': 'fault-effect' }, describeEffect(fault.effect)),
      h('td', { 'data-testid': 'fault-when' }, fault.when),
      h('td', { class: 'num', 'data-testid': 'fault-probability', title: `probability ${fault.probability}` }, percent(fault.probability)),
      h('td', { 'data-testid': 'fault-times-left' }, fault.times_left === null ? 'until cleared' : String(fault.times_left)),
      h('td', {}, formatUtcTime(fault.created_at)),
      h(
        'td',
        {},
        action(
          'Clear',
          async () => {
            await del(`/sandbox/faults/${encodeURIComponent(fault.id)}`)
            toast('Fault cleared')
            await render()
          },
          { kind: 'small', testid: 'clear-fault' },
        ),
      ),
    ),
  )
  return card(
    `Faults (${active.length} active)`,
    active.length === 0
      ? null
      : action(
          'Clear all',
          async () => {
            await del('/sandbox/faults')
            toast('Every fault cleared')
            await render()
          },
          { kind: 'small danger', testid: 'clear-faults' },
        ),
    h(
      'p',
      { class: 'muted' },
      'Make chosen /v2 calls of an app fail, to test your backend’s retries: a status, a delay or a dropped connection. A faulted call shows “Injected fault” in the request log.',
    ),
    table(['App', 'Calls', 'Effect', 'When', 'Probability', 'Calls left', 'Added', ''], rows, 'No fault injected: calls behave normally.'),
    h('h3', {}, 'Add a fault'),
    apps.length === 0 ? h('p', { class: 'muted' }, 'Create an app first.') : faultForm(apps, v2),
  )
}

function resetCard() {
  const seed = select('seed', [
    ['the demo app and users', 'demo'],
    ['nothing (empty)', 'empty'],
  ])
  const reset = action(
    'Reset the sandbox…',
    async () => {
      const sure = await confirmDialog({
        title: 'Reset the sandbox?',
        text: 'Every app, key, user, payment, ledger entry, ad and notification is deleted, and the clock goes back to real time. Keys your backend holds stop working.',
        confirm: 'Delete everything',
        testid: 'reset-dialog',
      })
      if (!sure) return
      // The figures on screen describe the platform being deleted: hide them until the new ones load.
      for (const el of document.querySelectorAll('#main .figures')) el.replaceChildren(h('p', { class: 'muted' }, 'Resetting…'))
      // The seed select offers these two.
      const result = await post('/sandbox/reset', { seed: /** @type {'demo' | 'empty'} */ (seed.value) })
      if (result.demo !== undefined) {
        reveal.current = {
          owner: 'platform',
          title: `Sandbox reset: ${result.demo.app_name} is new`,
          items: [
            {
              label: `Server API key of ${result.demo.app_name} (${result.demo.app_id})`,
              value: result.demo.api_key,
              testid: 'revealed-api-key',
            },
          ],
        }
      }
      // The page is drawn again from the new platform before it says it is done: no old sums.
      await render()
      toast(result.demo === undefined ? 'Sandbox reset: it is empty' : `Sandbox reset with ${result.demo.app_name}`)
    },
    { kind: 'danger', testid: 'reset-data' },
  )
  return card('Reset the data', null, h('div', { class: 'inline-form' }, field('Seed it again with', seed), reset))
}

/**
 * One network's ledger check, its figures under testids that start with `prefix`.
 * @param {string} network
 * @param {import('../../../../web/api/routes').Answer<'/sandbox/ledger/check', 'GET'>} check
 * @param {string} prefix
 */
function checkFacts(network, check, prefix) {
  return h(
    'div',
    { 'data-testid': `${prefix}-check`, 'data-network': network },
    h('h3', {}, network),
    h('p', {}, check.ok ? badge('books balance', 'ok') : badge('MISMATCH', 'off')),
    facts([
      ['Sum of balances', check.total_balances, `${prefix}-sum`],
      ['Total funded', check.total_funded, `${prefix}-funded`],
      ['Fees burned', check.total_fees, `${prefix}-fees`],
      ['Negative balances', String(check.negative_balances)],
      ['Mismatched accounts', String(check.mismatched_accounts)],
    ]),
  )
}
