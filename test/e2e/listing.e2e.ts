/**
 * Mainnet listing and the faucet on the platform page, in Chromium (docs/portal.md, "Listing";
 * docs/production.md, "Test-π from the faucet"): a developer registers a Mainnet app and the
 * portal says it waits for review; it is not in the directory; an operator approves it in the
 * console's Listings tab; the portal says approved and the app is in another person's directory.
 * That person gets test-π from the wallet's button, then is refused past the daily limit, the
 * reason next to the button.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { adminOf, freshName, GOOD_PASSWORD } from '../helpers/accounts.js'
import { launchBrowser, newPage, type RunningPlinth, screenshot, startPlinth } from './harness.js'

describe('Mainnet listing and the faucet, in Chromium', () => {
  let plinth: RunningPlinth
  let browser: Browser
  const who = ['olga', 'dev', 'sam'] as const
  const pages = {} as Record<(typeof who)[number], Page>
  const errors = {} as Record<(typeof who)[number], string[]>
  const names = Object.fromEntries(who.map((w) => [w, freshName(w).slice(0, 32)])) as Record<(typeof who)[number], string>
  const APP_NAME = 'Comet Market'

  before(async () => {
    plinth = await startPlinth({ mode: 'production', faucet: { amount: '100', dailyPerAddress: 1 } })
    await adminOf(plinth.platform).createOperator(names.olga, GOOD_PASSWORD)
    for (const w of ['dev', 'sam'] as const) {
      const made = await fetch(`${plinth.url}/account/signup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: names[w], password: GOOD_PASSWORD }),
      })
      assert.equal(made.status, 201)
    }
    await adminOf(plinth.platform).grant(names.dev, 'developer')
    browser = await launchBrowser()
    for (const w of who) {
      const opened = await newPage(browser)
      pages[w] = opened.page
      errors[w] = opened.errors
    }
  })
  after(async () => {
    await browser?.close()
    await plinth?.close()
  })

  const signIn = async (w: (typeof who)[number]) => {
    const page = pages[w]
    await page.goto(`${plinth.url}/`)
    await page.locator('#signin-username').fill(names[w])
    await page.locator('#signin-password').fill(GOOD_PASSWORD)
    await page.getByRole('button', { name: 'Sign in', exact: true }).click()
    await page.getByRole('heading', { name: 'Open an app' }).waitFor()
    return page
  }
  const inDirectory = (page: Page) =>
    page.evaluate(
      `fetch('/account/apps', { credentials: 'same-origin' }).then((r) => r.json()).then((b) => b.apps.map((a) => a.name))`,
    ) as Promise<string[]>

  it('a Mainnet app waits for review in the portal; the operator approves it in the console; it is listed', async () => {
    const dev = await signIn('dev')
    await dev.getByRole('button', { name: 'Portal', exact: true }).click()
    const portal = dev.locator('#portal-view')
    await portal.getByRole('button', { name: 'Register an app' }).click()
    await portal.getByLabel('Name').fill(APP_NAME)
    await portal.getByLabel('Frontend URL (http or https)').fill('https://comet-market.example/')
    await portal.getByLabel('Network').selectOption('Pi Network')
    await portal.getByRole('button', { name: 'Register', exact: true }).click()
    const state = portal.getByTestId('listing-state')
    await state.getByText('waiting for the platform’s review').waitFor()
    assert.equal(await state.getAttribute('data-state'), 'pending')
    const appId = await portal.getByTestId('portal-app-id').innerText()
    // Its domain taken as proven (the portal's own suite drives the domain check).
    await plinth.platform.db.updateTable('apps').set({ verified_at: new Date(), verified_by: 'domain' }).where('id', '=', appId).execute()

    const sam = await signIn('sam')
    assert.equal((await inDirectory(sam)).includes(APP_NAME), false, 'not in the directory while pending')

    const olga = await signIn('olga')
    await olga.getByRole('button', { name: 'Operator', exact: true }).click()
    const console_ = olga.locator('#operator-view')
    await console_.getByRole('button', { name: 'Listings', exact: true }).click()
    const row = console_.locator(`li[data-app-id="${appId}"]`)
    await row.getByText(`by ${names.dev}`).waitFor()
    await screenshot(olga, 'operator-listings')
    await row.getByRole('button', { name: `Approve ${APP_NAME}` }).click()
    await olga.getByRole('dialog').getByRole('button', { name: 'Approve' }).click()
    await console_.getByText('No app waits for a listing review.').waitFor()

    await dev.reload()
    await dev.getByRole('button', { name: 'Portal', exact: true }).click()
    await portal
      .getByRole('button', { name: new RegExp(APP_NAME) })
      .first()
      .click()
    await portal.getByTestId('listing-state').getByText('approved').waitFor()
    await sam.reload()
    await sam.getByRole('button', { name: `Open ${APP_NAME}` }).waitFor()
  })

  it('the wallet’s “Get test-π” pays 100 test-π, and says why when the daily limit refuses', async () => {
    const sam = pages.sam
    await sam.locator('#wallet-button').click()
    const faucet = sam.getByTestId('faucet')
    await faucet.getByRole('button', { name: 'Get test-π' }).click()
    await faucet.getByTestId('faucet-result').getByText('The faucet paid you 100 test-π on Pi Testnet.').waitFor()
    await sam.getByTestId('wallet-balance').getByText('100 π').waitFor()
    await sam.getByTestId('faucet').getByRole('button', { name: 'Get test-π' }).click()
    await sam.getByTestId('faucet').getByTestId('faucet-result').getByText('PLINTH_FAUCET_DAILY_PER_ADDRESS').waitFor()
    await screenshot(sam, 'wallet-faucet')
    const unexpected = Object.values(errors).flatMap((list) =>
      list.filter((e) => !/^Failed to load resource: the server responded with a status of (401|429) /.test(e)),
    )
    assert.deepEqual(unexpected, [])
  })
})
