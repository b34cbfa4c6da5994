// @ts-check
/**
 * The operator console's money sections (docs/operators.md): issuing (an issue above the approval
 * threshold becomes a request for a second operator), the requests waiting for a second operator
 * (Approve, Reject), and the ledger check (the supply three ways). Each maker answers
 * `{ element, shown? }` for the console's tabs; `attempt` and `section` are the console's.
 */

import { h } from '../../../web/ui/dom.js'
import { formatPi } from '../../../web/ui/format.js'
import { pagedRows } from '../../../web/ui/tables.js'
import { toast } from '../../../web/ui/toast.js'
import { account } from '../api.js'
import { receiptLink } from '../receipt.js'
import { alertLine, askReason, confirmAct, facts, query, when } from '../widgets.js'

const enc = encodeURIComponent

/**
 * A request's one-line summary (an issue has an amount; a grant of a role has none).
 * @param {import('./types').Approval} approval
 */
const summary = (approval) =>
  approval.kind === 'issue'
    ? `Issue ${formatPi(/** @type {string} */ (approval.amount))} to ${approval.target}`
    : `Make ${approval.target} ${approval.role === 'operator' ? 'an operator' : `a ${approval.role}`}`

/**
 * `ctx`: `attempt(work, line?)`, `section(id, title, ...children)`, `user()`, `onRequested()` (a request was made: the approvals tab reloads).
 * @param {import('./types').MoneyContext} ctx
 * @returns {import('./types').ConsoleSection}
 */
export function issueSection(ctx) {
  const target = h('input', { id: 'issue-target', required: true, maxlength: '64', autocomplete: 'off', placeholder: 'username or app_…' })
  const amount = h('input', {
    id: 'issue-amount',
    required: true,
    maxlength: '40',
    inputmode: 'decimal',
    pattern: '[0-9]+(\\.[0-9]{1,7})?',
    autocomplete: 'off',
  })
  const reason = h('input', { id: 'issue-reason', required: true, maxlength: '500', autocomplete: 'off' })
  const problem = alertLine('issue-error')
  const result = h('div', { 'data-testid': 'issue-result', 'aria-live': 'polite' })
  /** @param {import('./types').Issued} issued */
  const done = (issued) =>
    result.replaceChildren(
      h('p', { class: 'status-line ok' }, `Issued ${formatPi(issued.amount)} to ${issued.target}.`),
      facts(
        [
          ['To', issued.target],
          ['Address', h('span', { class: 'mono' }, issued.address)],
          ['Amount', formatPi(issued.amount)],
          ['Balance now', formatPi(issued.balance)],
          ['Transaction', h('span', { class: 'mono' }, receiptLink(issued.transaction, issued.transaction))],
          ['Ledger', String(issued.ledger)],
          ['Audit record', issued.audit_id],
        ],
        'Issued',
      ),
    )
  const form = h(
    'form',
    {
      class: 'stack',
      onsubmit: async (/** @type {SubmitEvent} */ event) => {
        event.preventDefault()
        const body = { target: target.value.trim(), amount: amount.value.trim(), reason: reason.value.trim() }
        result.replaceChildren()
        // The refusals known in advance (the limit, the amount, the target) come before the question (#41 U17).
        const checked = await ctx.attempt(() => account('/operator/issue/check', { method: 'POST', body }), problem)
        if (!checked.ok) return
        const plan = checked.value
        const sure = await confirmAct({
          title: 'Issue new money?',
          text:
            `${formatPi(plan.amount)} of new money into the wallet of ${plan.target}. It is a ledger transaction: it cannot be taken back. ` +
            `${formatPi(plan.issued_today)} of the ${formatPi(plan.daily_limit)} daily limit is issued so far.` +
            (plan.needs_approval ? ' Above the approval threshold: it will wait for a second operator.' : ''),
          action: plan.needs_approval ? 'Ask for approval' : 'Issue',
        })
        if (!sure) return
        result.replaceChildren()
        const answer = await ctx.attempt(() => account('/operator/issue', { method: 'POST', body }), problem)
        if (!answer.ok) return
        amount.value = ''
        reason.value = ''
        if ('approval' in answer.value) {
          result.replaceChildren(
            h(
              'p',
              { class: 'status-line', 'data-testid': 'issue-pending' },
              `${summary(answer.value.approval)}: above the approval threshold, so it waits for another operator (Approvals).`,
            ),
          )
          ctx.onRequested()
          return
        }
        done(answer.value)
      },
    },
    h('label', { for: 'issue-target' }, 'To: a username or an app id'),
    target,
    h('label', { for: 'issue-amount' }, 'Amount in Pi (at most 7 decimals)'),
    amount,
    h('label', { for: 'issue-reason' }, 'Reason (kept in the audit log)'),
    reason,
    problem.element,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Issue')),
  )
  return {
    element: ctx.section(
      'issue',
      'Issue money',
      h(
        'p',
        { class: 'muted' },
        'New money from the issuing account, within the platform’s daily limit for all operators together; a large issue waits for a second operator. Every issue is in the audit log.',
      ),
      form,
      result,
    ),
  }
}

/**
 * The requests for a second operator: the pending ones first (Approve, Reject), then the decided.
 * @param {import('./types').MoneyContext} ctx
 */
export function approvalsSection(ctx) {
  const problem = alertLine('approvals-error')
  let status = 'pending'
  /**
   * @param {import('./types').Approval} approval
   * @param {'approve' | 'reject'} decision
   */
  const decide = async (approval, decision) => {
    /** @type {{ reason: string } | undefined} */
    let body
    if (decision === 'reject') {
      const reason = await askReason({
        title: `Reject: ${summary(approval)}?`,
        text: approval.requested_by === ctx.user()?.username ? 'You withdraw your own request.' : 'It will never run.',
        action: 'Reject',
      })
      if (reason === undefined) return
      body = { reason }
    } else {
      const sure = await confirmAct({
        title: `Approve: ${summary(approval)}?`,
        text: `Asked by ${approval.requested_by}: “${approval.reason || 'no reason given'}”. It runs now, and cannot be taken back.`,
        action: 'Approve',
      })
      if (!sure) return
    }
    const path = /** @type {const} */ (`/operator/approvals/${enc(approval.approval_id)}`)
    // One call a decision, so that each is typed by its own route (an approval takes no body).
    const answer = await ctx.attempt(
      () =>
        decision === 'approve'
          ? account(`${path}/approve`, { method: 'POST' })
          : account(`${path}/reject`, { method: 'POST', ...(body === undefined ? {} : { body }) }),
      problem,
    )
    if (!answer.ok) return
    toast(`${summary(approval)}: ${decision === 'approve' ? 'approved, done' : 'rejected'}.`)
    rows.reload()
  }
  /** @param {import('./types').Approval} approval */
  const row = (approval) => {
    const mine = approval.requested_by === ctx.user()?.username
    const pending = approval.status === 'pending'
    return h(
      'li',
      { class: 'wrap', 'data-approval-id': approval.approval_id, 'data-status': approval.status },
      h(
        'span',
        { class: 'grow' },
        h('strong', {}, summary(approval)),
        h(
          'span',
          { class: 'muted' },
          ` asked by ${approval.requested_by} ${when(approval.created_at)}: “${approval.reason || 'no reason given'}”`,
        ),
        h('span', { class: `tag ${pending ? '' : approval.status === 'approved' ? 'ok' : 'bad'}` }, approval.status),
        pending ? h('span', { class: 'muted small block' }, `Expires ${when(approval.expires_at)}`) : '',
        approval.decided_by === null
          ? ''
          : h(
              'span',
              { class: 'muted small block' },
              `${approval.status} by ${approval.decided_by} ${when(approval.decided_at)}${approval.decision_reason === null ? '' : `: “${approval.decision_reason}”`}`,
            ),
      ),
      pending
        ? h(
            'span',
            { class: 'row-actions' },
            mine
              ? h('span', { class: 'muted' }, 'Another operator approves it')
              : h(
                  'button',
                  {
                    type: 'button',
                    class: 'primary',
                    'aria-label': `Approve: ${summary(approval)}`,
                    onclick: () => decide(approval, 'approve'),
                  },
                  'Approve',
                ),
            h(
              'button',
              {
                type: 'button',
                class: 'danger',
                'aria-label': `${mine ? 'Withdraw' : 'Reject'}: ${summary(approval)}`,
                onclick: () => decide(approval, 'reject'),
              },
              mine ? 'Withdraw' : 'Reject',
            ),
          )
        : '',
    )
  }
  const rows = pagedRows({
    container: h('ul', { class: 'list tall', 'aria-label': 'Requests for a second operator' }),
    key: 'approvals',
    load: (cursor) => account(`/operator/approvals${query({ status, before: cursor })}`),
    row,
    empty: () => h('li', { class: 'muted' }, status === 'pending' ? 'Nothing waits for a second operator.' : 'No request.'),
    attempt: ctx.attempt,
  })
  const filter = h(
    'select',
    {
      id: 'approvals-status',
      onchange: () => {
        status = filter.value
        rows.reload()
      },
    },
    ...[
      ['pending', 'Waiting'],
      ['', 'All'],
      ['approved', 'Approved'],
      ['rejected', 'Rejected'],
      ['expired', 'Expired'],
    ].map(([value, label]) => h('option', { value }, label)),
  )
  return {
    element: ctx.section(
      'approvals',
      'Approvals',
      h(
        'p',
        { class: 'muted' },
        'Issues above the approval threshold and grants of the operator role wait here for a second operator. Nobody approves their own; a request expires after a day.',
      ),
      h('div', { class: 'actions' }, h('label', { for: 'approvals-status' }, 'Show'), filter),
      problem.element,
      rows.container,
      rows.more,
    ),
    shown: () => rows.reload(),
    reload: () => rows.reload(),
  }
}

/**
 * The supply three ways: issued, balances + fees, the audit log's issues; which one differs.
 * @param {import('./types').MoneyContext} ctx
 * @returns {import('./types').ConsoleSection}
 */
export function ledgerSection(ctx) {
  const result = h('div', { 'data-testid': 'ledger-check', 'aria-live': 'polite' })
  const names = { issued: 'Issued', balances_and_fees: 'In balances + fees', audit: 'The audit log’s issues' }
  const check = async () => {
    const done = await ctx.attempt(() => account('/operator/ledger/check'))
    if (!done.ok) return
    const books = done.value
    const differs = books.differs.length === 3 ? 'no two figures agree' : `${names[books.differs[0]] ?? ''} differs from the other two`
    result.replaceChildren(
      h(
        'p',
        { class: `status-line ${books.balanced ? 'ok' : 'bad'}` },
        books.balanced
          ? 'Balanced: every Pi issued is in a balance or was paid as a fee, and every issue is in the audit log.'
          : `NOT balanced${books.differs.length === 0 ? '' : `: ${differs}`}. Look into it now.`,
      ),
      facts(
        [
          ['Issued', formatPi(books.total_issued)],
          ['In balances', formatPi(books.total_balances)],
          ['Fees', formatPi(books.total_fees)],
          ['Issued by the audit log', formatPi(books.total_audited)],
          ['Differs', books.differs.length === 0 ? 'nothing' : books.differs.map((d) => names[d]).join(', ')],
          ['Negative balances', String(books.negative_balances)],
          ['Mismatched accounts', String(books.mismatched_accounts)],
        ],
        'The books',
      ),
    )
  }
  return {
    element: ctx.section('ledger', 'Ledger', h('button', { type: 'button', onclick: check }, 'Check the ledger'), result),
    shown: check,
  }
}
