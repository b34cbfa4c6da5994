// @ts-check
/**
 * Mainnet listing on the platform page (docs/portal.md, "Listing"): the operator console's queue
 * (approve, reject with a reason) and the portal's line saying where an app's review stands, with
 * the owner's "Ask for a review again" after a rejection.
 */
import { h } from '../../web/ui/dom.js'
import { toast } from '../../web/ui/toast.js'
import { account } from './api.js'
import { askReason, confirmAct } from './widgets.js'

const enc = encodeURIComponent

/**
 * @typedef {import('../api/routes').Answer<'/operator/listings'>['apps'][number]} WaitingApp
 * @typedef {import('./types').PortalApp} PortalApp
 */

/**
 * The console's Listings section: `ctx` is the console's money context (`attempt`, `section`).
 * @param {{ attempt: import('./types').Attempt, section(id: string, title: string, ...children: import('../ui/types').Child[]): HTMLElement }} ctx
 */
export function listingQueueSection(ctx) {
  const list = h('ul', { class: 'rows', 'aria-label': 'Apps waiting for listing' })
  const load = async () => {
    const done = await ctx.attempt(() => account('/operator/listings'))
    if (!done.ok) return
    list.replaceChildren(
      ...(done.value.apps.length === 0
        ? [h('li', { class: 'muted' }, 'No app waits for a listing review.')]
        : done.value.apps.map((app) => row(app))),
    )
  }
  /**
   * @param {WaitingApp} app
   * @param {'approve' | 'reject'} decision
   */
  const decide = async (app, decision) => {
    /** @type {{ reason: string } | undefined} */
    let body
    if (decision === 'reject') {
      const reason = await askReason({
        title: `Reject the listing of ${app.name}?`,
        text: 'Its developers see your reason and may ask again.',
        action: 'Reject',
      })
      if (reason === undefined) return
      body = { reason }
    } else {
      const sure = await confirmAct({
        title: `List ${app.name} on Mainnet?`,
        text: 'It enters the directory, and anyone may pay it or be paid by it.',
        action: 'Approve',
      })
      if (!sure) return
    }
    const done = await ctx.attempt(() =>
      account(`/operator/apps/${enc(app.app_id)}/listing/${decision}`, { method: 'POST', ...(body === undefined ? {} : { body }) }),
    )
    if (!done.ok) return
    toast(`${app.name}: ${decision === 'approve' ? 'listed' : 'rejected'}.`)
    await load()
  }
  /** @param {WaitingApp} app */
  const row = (app) =>
    h(
      'li',
      { class: 'wrap', 'data-app-id': app.app_id },
      h(
        'span',
        { class: 'grow' },
        h('strong', {}, app.name),
        h(
          'span',
          { class: 'muted' },
          ` by ${app.owner ?? 'nobody'} · ${app.url ?? 'no URL'} · ${app.verified ? 'verified' : 'not verified'}`,
        ),
      ),
      h(
        'span',
        { class: 'row-actions' },
        h('button', { type: 'button', onclick: () => decide(app, 'approve'), 'aria-label': `Approve ${app.name}` }, 'Approve'),
        h(
          'button',
          { type: 'button', class: 'danger', onclick: () => decide(app, 'reject'), 'aria-label': `Reject ${app.name}` },
          'Reject',
        ),
      ),
    )
  return {
    element: ctx.section('listings', 'Listings', h('p', { class: 'muted' }, 'Mainnet apps waiting for review, oldest first.'), list),
    shown: load,
  }
}

/** @type {Record<string, [tone: string, text: string]>} */
const STATES = {
  pending: [
    '',
    'Mainnet listing: waiting for the platform’s review. Until then it is not in the directory, and only its members pay it or are paid by it.',
  ],
  approved: ['ok', 'Mainnet listing: approved. It is in the directory.'],
  rejected: ['bad', 'Mainnet listing: rejected'],
}

/**
 * The portal's line for an app's listing (nothing on Testnet); the owner asks again after a rejection, then `reload()`.
 * @param {PortalApp} app
 * @param {() => Promise<unknown>} reload
 */
export function listingLine(app, reload) {
  if (app.listing === null || app.listing === undefined) return ''
  const [tone, text] = STATES[app.listing.state] ?? ['', app.listing.state]
  const again = async () => {
    try {
      await account(`/portal/apps/${enc(app.app_id)}/listing/request`, { method: 'POST' })
      toast('Review asked for again.')
      await reload()
    } catch (failure) {
      toast(/** @type {Error} */ (failure).message)
    }
  }
  return h(
    'p',
    { class: `status-line ${tone}`, 'data-testid': 'listing-state', 'data-state': app.listing.state },
    app.listing.state === 'rejected' ? `${text}: “${app.listing.reason ?? ''}”. ` : text,
    app.listing.state === 'rejected' && app.role === 'owner'
      ? h('button', { type: 'button', onclick: again }, 'Ask for a review again')
      : '',
  )
}
