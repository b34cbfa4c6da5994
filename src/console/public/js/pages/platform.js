// The platform: clock (advance, back to real time), ledger check, fund any wallet, active
// faults, and a reset of the sandbox's data.

import { del, get, hasRoute, post } from '../api.js'
import { advanceClock, MAX_ADVANCE_SECONDS, resetClock, setClock } from '../clock.js'
import { action, confirmDialog, form, table } from '../components.js'
import { badge, card, code, facts, field, formatDuration, formatTime, h, pageTitle, select } from '../dom.js'
import { render } from '../router.js'
import { fundForm } from '../shared.js'
import { toast } from '../toast.js'

const ADVANCE_PRESETS = [
  ['+1 min', 60],
  ['+1 hour', 3600],
  ['+1 day', 86_400],
  ['+30 days', 30 * 86_400],
]
const UNITS = [
  ['seconds', 1],
  ['minutes', 60],
  ['hours', 3600],
  ['days', 86_400],
]

/** A sandbox route this Plinth may not have yet: null when it does not. */
async function optional(path) {
  return (await hasRoute(path)) ? get(path) : null
}

export async function platformPage() {
  const [clock, check, faults, canReset] = await Promise.all([
    get('/sandbox/clock'),
    get('/sandbox/ledger/check'),
    optional('/sandbox/faults'),
    hasRoute('/sandbox/reset', 'post'),
  ])
  setClock(clock)
  const custom = form(
    { class: 'inline-form', 'data-testid': 'advance-clock' },
    [
      field('Advance by', h('input', { name: 'amount', type: 'number', min: 1, step: 'any', required: true, value: 1 })),
      field('Unit', select('unit', UNITS, 3600)),
      h('button', { type: 'submit', class: 'primary' }, 'Advance'),
    ],
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
    pageTitle(
      'Clock & ledger',
      'The platform clock drives token expiry, approval windows, ad verdicts and quotas. It moves forward, or back to real time with a reset, which keeps everything the moved time expired expired.',
    ),
    card(
      'Platform clock',
      null,
      facts([
        ['Now', formatTime(clock.now), 'platform-now'],
        ['Offset', formatDuration(clock.offset_seconds), 'platform-offset'],
      ]),
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
      h('p', {}, check.ok ? badge('books balance', 'ok') : badge('MISMATCH', 'off')),
      facts([
        ['Sum of balances', check.total_balances],
        ['Total funded', check.total_funded],
        ['Fees burned', check.total_fees],
        ['Negative balances', String(check.negative_balances)],
        ['Mismatched accounts', String(check.mismatched_accounts)],
      ]),
      h('p', {}, h('a', { href: '#/ledger' }, 'Browse the ledger’s transactions →')),
    ),
    card(
      'Fund a wallet',
      null,
      h('p', { class: 'muted' }, 'Grant test Pi to any ledger account (it is created if needed).'),
      fundForm('', render),
    ),
    faults === null ? null : faultsCard(faults.faults),
    canReset ? resetCard() : null,
  ]
}

function faultsCard(faults) {
  const active = faults.filter((fault) => fault.times_left !== 0)
  const effect = (e) =>
    e.status !== undefined ? `answers ${e.status}` : e.delay_ms !== undefined ? `delays ${e.delay_ms} ms` : 'drops the connection'
  const rows = active.map((fault) =>
    h(
      'tr',
      { 'data-testid': 'fault-row' },
      h('td', {}, h('a', { href: `#/apps/${encodeURIComponent(fault.app_id)}` }, code(fault.app_id))),
      h(
        'td',
        {},
        fault.match.route ?? fault.match.operation_id ?? 'every /v2 call',
        fault.match.user_uid ? ` (user ${fault.match.user_uid})` : '',
      ),
      h('td', {}, `${effect(fault.effect)} ${fault.when}`),
      h('td', {}, fault.times_left === null ? 'until cleared' : String(fault.times_left)),
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
    `Active faults (${active.length})`,
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
    table(['App', 'Calls', 'Effect', 'Calls left', ''], rows, 'No fault injected: calls behave normally.'),
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
      const result = await post('/sandbox/reset', { seed: seed.value })
      toast(result.demo === undefined ? 'Sandbox reset: it is empty' : `Sandbox reset with ${result.demo.app_name}`)
      location.hash = '#/apps'
    },
    { kind: 'danger', testid: 'reset-data' },
  )
  return card('Reset the data', null, h('div', { class: 'inline-form' }, field('Seed it again with', seed), reset))
}
