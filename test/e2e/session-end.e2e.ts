import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { accountLimits } from '../../src/config.js'
import { adminOf, freshName, signedUp } from '../helpers/accounts.js'
import { closePagesAfterEach, FAST, launchBrowser, newPage, type RunningPlinth, startPlinth } from './harness.js'

/**
 * An open platform page whose session ends (docs/accounts.md, "Sessions"): the page's polls are
 * background requests, so a page left open does not keep an idle session alive; and a session
 * ended by the platform (idle, suspended, signed out elsewhere) sends the page back to sign-in
 * within one poll, saying why, with nothing of the person left and no poll after.
 */
describe('production: an open page whose session ends, in Chromium', () => {
  /** Seconds without a user's act before a session ends: short, so a page left open sees it. */
  const IDLE_SECONDS = 6
  const POLL_MS = Number(FAST.refresh_ms)
  let plinth: RunningPlinth
  let browser: Browser
  closePagesAfterEach(() => browser)

  /** The platform's account limits: the services read this object at each call (the third test lengthens the idle limit). */
  const limits = { ...accountLimits(), sessionIdleSeconds: IDLE_SECONDS, signupPerAddress: { attempts: 1000, windowSeconds: 3600 } }

  before(async () => {
    plinth = await startPlinth({ mode: 'production', accounts: limits })
    browser = await launchBrowser()
  })
  after(async () => {
    await browser?.close()
    await plinth?.close()
  })

  /** The account API's answers the page received, in order: path, status, and whether it was a background request. */
  const watchAccountCalls = (page: Page) => {
    const calls: Array<{ path: string; status: number; background: boolean; at: number }> = []
    page.on('response', (response) => {
      const url = new URL(response.url())
      if (!url.pathname.startsWith('/account')) return
      const background = response.request().headers()['x-plinth-background'] === '1'
      calls.push({ path: url.pathname, status: response.status(), background, at: Date.now() })
    })
    return calls
  }

  /** A new person signed up through the page, on the apps view. */
  const signUp = async (page: Page): Promise<string> => {
    const username = freshName('se').slice(0, 32)
    await page.goto(`${plinth.url}/?${new URLSearchParams(FAST)}`)
    await page.getByLabel('Username (3 to 32').fill(username)
    await page.getByLabel('Password (8 to 128').fill('lantern orbit velvet quarry')
    await page.getByRole('button', { name: 'Create account' }).click()
    await page.locator('#user-chip').getByText(username).waitFor()
    return username
  }

  /** The sign-in view with `reason`, and nothing of `username` on screen. */
  const backAtSignIn = async (page: Page, username: string, reason: RegExp) => {
    await page.locator('#account-error').getByText(reason).waitFor({ timeout: 60_000 })
    await page.getByRole('heading', { name: 'Sign in' }).waitFor()
    assert.equal(await page.locator('#user-chip').isVisible(), false)
    assert.equal(await page.locator('#wallet-button').isVisible(), false)
    assert.equal(await page.locator('#drawer').isVisible(), false)
    assert.equal(await page.getByText(username).count(), 0, 'the username is gone from the page')
  }

  /** No account call for four poll intervals: the page stopped polling. */
  const noMorePolls = async (calls: Array<{ at: number }>) => {
    const count = calls.length
    await new Promise((resolve) => setTimeout(resolve, 4 * POLL_MS))
    assert.equal(calls.length, count, 'no account call after the page went back to sign-in')
  }

  it('a page left open does not keep its session alive: its polls are background requests, and the idle session ends', async () => {
    const { page, errors } = await newPage(browser)
    const calls = watchAccountCalls(page)
    const username = await signUp(page)
    // Left open: the page polls /account every POLL_MS, in the background, until the idle limit ends the session.
    await backAtSignIn(page, username, /without activity/)
    const polls = calls.filter((call) => call.background)
    assert.ok(polls.filter((call) => call.status === 200).length >= 3, `the page polled while signed in: ${JSON.stringify(polls)}`)
    await noMorePolls(calls)
    assert.deepEqual(
      errors.filter((e) => !/401/.test(e)),
      [],
    )
  })

  it('a suspension sends the open page back to sign-in within one poll, saying why; no poll follows', async () => {
    const { page } = await newPage(browser)
    const calls = watchAccountCalls(page)
    const username = await signUp(page)
    // The wallet open: before, its memos stayed on screen, unnamed, as every poll failed.
    await page.locator('#wallet-button').click()
    await page.getByTestId('wallet-balance').waitFor()
    const operator = await signedUp(() => plinth.platform.app)
    await adminOf(plinth.platform).grant(operator.username, 'operator')
    const suspended = await operator.call('POST', `/operator/users/${username}/suspend`, { reason: 'a fraud report' })
    assert.equal(suspended.status, 200, JSON.stringify(suspended.body))
    const at = Date.now()
    await backAtSignIn(page, username, /suspended this account/)
    const refused = calls.filter((call) => call.at >= at && call.status === 401)
    // One poll reads /account (and the open wallet its payments): the first refusal ends it.
    assert.ok(refused.length >= 1 && refused.length <= 2, `refused calls: ${JSON.stringify(refused)}`)
    await noMorePolls(calls)
  })

  it('signing out everywhere in another browser sends this page back to sign-in, saying so', async (t) => {
    // Not the idle limit: signing the other browser in (a password hash) took more than its 6 s on a
    // loaded CI machine, and this page's session ended as idle first (its chip hidden, so the act
    // below could not be made). This test is about the sign-out, so its sessions may idle for an hour.
    limits.sessionIdleSeconds = 3600
    t.after(() => {
      limits.sessionIdleSeconds = IDLE_SECONDS
    })
    const { page } = await newPage(browser)
    const username = await signUp(page)
    const calls = watchAccountCalls(page)
    const other = await newPage(browser)
    await other.page.goto(`${plinth.url}/?${new URLSearchParams(FAST)}`)
    await other.page.locator('#signin-username').fill(username)
    await other.page.locator('#signin-password').fill('lantern orbit velvet quarry')
    await other.page.getByRole('button', { name: 'Sign in', exact: true }).click()
    await other.page.locator('#user-chip').getByText(username).waitFor()
    // A user's act in this page (the account panel) just before: its session is not idle when it ends.
    await page.locator('#user-chip').click()
    await page.getByTestId('account-username').waitFor()
    await other.page.locator('#user-chip').click()
    await other.page.locator('#drawer').getByRole('button', { name: 'Sign out everywhere' }).click()
    await other.page.getByRole('heading', { name: 'Sign in' }).waitFor()
    await backAtSignIn(page, username, /signed out/)
    assert.ok(calls.some((call) => call.status === 401 && call.background))
    await noMorePolls(calls)
  })
})
