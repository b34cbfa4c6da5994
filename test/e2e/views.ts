/**
 * Every page and view of both modes, for the suites that check them all alike (page-fit, page-axe):
 * a production platform with an operator who is also a developer and owns an app (so that the
 * top bar holds every tab, the wallet, the bell and the account chip) and was issued π (a
 * transaction with a receipt), and a sandbox platform with
 * an app, a user and a payment (the sandbox page and the console).
 *
 * `VIEWS` lists each view with how to reach it from a fresh page at a given size; a test opens
 * each in turn and checks what it checks.
 */
import type { Browser, Page } from 'playwright-core'
import { adminOf, freshName, GOOD_PASSWORD } from '../helpers/accounts.js'
import { expectStatus, FAST, type RunningPlinth, startPlinth } from './harness.js'

export const SIZES = [
  { name: 'desktop', width: 1280, height: 800 },
  { name: 'phone', width: 390, height: 844 },
] as const
export type Size = (typeof SIZES)[number]

export interface World {
  production: RunningPlinth
  sandbox: RunningPlinth
  /** An operator with the developer role too (the widest top bar), its username 32 characters long. */
  operator: string
  appName: string
  sandboxAppId: string
  /** A transaction of the production ledger (an issue to the operator), for its receipt (#41 U13). */
  receiptHash: string
  close(): Promise<void>
}

export async function startWorld(): Promise<World> {
  const production = await startPlinth({ mode: 'production', requestLog: true })
  const admin = adminOf(production.platform)
  const operator = `${freshName('op')}_wide_username_xx`.slice(0, 32)
  await admin.createOperator(operator, GOOD_PASSWORD)
  await admin.grant(operator, 'developer')
  const appName = 'Supercalifragilistic Marketplace'
  await admin.createApp({ owner: operator, name: appName, url: 'https://shop.example/' })
  const issued = await admin.issue({ target: operator, amount: '2', reason: 'a transaction to show the receipt of' })
  const sandbox = await startPlinth()
  const app = await sandbox.createApp('Supercalifragilistic Marketplace', 'http://127.0.0.1:3000/')
  const user = await sandbox.createUser('averyveryverylongusername_32chr')
  const auth = expectStatus(
    await sandbox.api<{ accessToken: string }>('POST', `/sandbox/apps/${app.app_id}/authenticate`, {
      body: { user_id: user.user_id, scopes: ['username', 'payments'] },
    }),
    200,
    'authenticate',
  )
  const body = { amount: 3.14, memo: 'A mug with a rather long description of what is printed on it', metadata: {} }
  const payment = expectStatus(
    await sandbox.api<{ identifier: string }>('POST', '/v2/client/payments', { token: auth.accessToken, body }),
    201,
    'create payment',
  )
  // A long path and a long username in the request log's row (the widest row the log draws).
  expectStatus(await sandbox.api('POST', `/v2/payments/${payment.identifier}/approve`, { key: app.api_key }), 200, 'approve')
  expectStatus(await sandbox.api('POST', '/sandbox/snapshots', { body: { name: 'before-the-big-refactor' } }), 201, 'snapshot')
  return {
    production,
    sandbox,
    operator,
    appName,
    sandboxAppId: app.app_id,
    receiptHash: issued.transaction,
    close: async () => {
      await production.close()
      await sandbox.close()
    },
  }
}

export interface View {
  name: string
  /** Opens the view in `page` (fresh or left on the view before it in VIEWS). */
  open(page: Page, world: World): Promise<void>
}

const signIn = async (page: Page, world: World) => {
  await page.goto(`${world.production.url}/?${new URLSearchParams(FAST)}`)
  await page.locator('#signin-username').fill(world.operator)
  await page.locator('#signin-password').fill(GOOD_PASSWORD)
  await page.getByRole('button', { name: 'Sign in', exact: true }).click()
  await page.getByRole('heading', { name: 'Open an app' }).waitFor()
}

const operatorSection = (label: string, heading: string): View => ({
  name: `operator: ${label}`,
  open: async (page) => {
    await page.locator('#operator-tab').click()
    await page.locator('#operator-view').getByRole('button', { name: label, exact: true }).click()
    await page.locator('#operator-view').getByRole('heading', { name: heading, exact: true }).waitFor()
  },
})

/** A console page, once `ready` (something its data draws) shows. */
const consolePage = (hash: string, ready: string): View => ({
  name: `console ${hash}`,
  open: async (page, world) => {
    await page.goto(`${world.sandbox.url}/console/${hash.replace('{app}', world.sandboxAppId)}`)
    await page.locator(ready).first().waitFor()
  },
})

/** In order: each view is opened from the page the one before it left. */
export const VIEWS: View[] = [
  {
    name: 'production: sign in',
    open: async (page, world) => {
      await page.goto(`${world.production.url}/`)
      await page.locator('#signin-username').waitFor()
    },
  },
  { name: 'production: home', open: signIn },
  {
    name: 'production: account',
    open: async (page) => {
      await page.locator('#user-chip').click()
      await page.getByRole('button', { name: 'Sign out everywhere' }).waitFor()
    },
  },
  {
    name: 'production: wallet',
    open: async (page) => {
      await page.locator('#wallet-button').click()
      await page.locator('#drawer').waitFor()
    },
  },
  {
    name: 'portal: apps',
    open: async (page) => {
      await page.locator('#drawer-close').click()
      await page.locator('#portal-tab').click()
      await page.getByRole('heading', { name: 'Developer portal' }).waitFor()
    },
  },
  {
    name: 'portal: an app',
    open: async (page, world) => {
      await page
        .locator('#portal-view')
        .getByRole('button', { name: new RegExp(world.appName) })
        .click()
      await page.locator('#portal-view').getByRole('heading', { name: world.appName, exact: true }).waitFor()
      await page.locator('#portal-view').getByRole('heading', { name: 'Members', exact: true }).waitFor()
    },
  },
  operatorSection('Support', 'Support'),
  operatorSection('Users', 'Users'),
  operatorSection('Apps', 'Apps'),
  operatorSection('Ledger', 'Ledger'),
  operatorSection('Audit log', 'Audit log'),
  {
    name: 'production: a transaction receipt',
    open: async (page, world) => {
      await page.goto(`${world.production.url}/?view=receipt&tx=${world.receiptHash}`)
      await page.getByTestId('receipt').waitFor()
    },
  },
  {
    name: 'sandbox: choose a user',
    open: async (page, world) => {
      await page.goto(`${world.sandbox.url}/sandbox/?${new URLSearchParams(FAST)}`)
      await page.locator('#user-list li button').first().waitFor()
    },
  },
  {
    name: 'sandbox: open an app',
    open: async (page) => {
      await page.locator('#user-list li button').first().click()
      await page.locator('#picker-view').waitFor()
    },
  },
  consolePage('#/apps', '[data-testid="app-row"] td'),
  consolePage('#/apps/{app}', '[data-testid="payment-state-pill"]'),
  consolePage('#/apps/{app}/requests', '[data-testid="request-row"] td'),
  consolePage('#/platform', '[data-testid="create-fault"]'),
  consolePage('#/snapshots', '[data-testid="snapshot-row"] td'),
]

/** A page of its own at `size`, with its script errors collected. */
export async function pageAt(browser: Browser, size: Size): Promise<{ page: Page; errors: string[]; close(): Promise<void> }> {
  const context = await browser.newContext({ viewport: { width: size.width, height: size.height } })
  context.setDefaultTimeout(15_000)
  const page = await context.newPage()
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(error.message))
  return { page, errors, close: () => context.close() }
}
