/**
 * The two-person rule in the operator's console, in Chromium (docs/operators.md, "Two
 * operators"): one operator issues more than the approval threshold and the console says it waits
 * for another operator; in the Approvals tab she can only withdraw her own request; a second
 * operator, in another browser page, approves it, and the money arrives; the ledger check then
 * shows the supply three ways, balanced.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { adminOf, freshName, GOOD_PASSWORD } from '../helpers/accounts.js'
import { launchBrowser, newPage, type RunningPlinth, screenshot, startPlinth } from './harness.js'

describe('approving another operator’s issue, in Chromium', () => {
  let plinth: RunningPlinth
  let browser: Browser
  const pages = {} as Record<'olga' | 'oscar', Page>
  const errors = {} as Record<'olga' | 'oscar', string[]>
  const names = { olga: freshName('olga').slice(0, 32), oscar: freshName('oscar').slice(0, 32) }

  before(async () => {
    plinth = await startPlinth({ mode: 'production', portal: { operatorApprovalThreshold: 1000 } })
    for (const who of ['olga', 'oscar'] as const) await adminOf(plinth.platform).createOperator(names[who], GOOD_PASSWORD)
    browser = await launchBrowser()
    for (const who of ['olga', 'oscar'] as const) {
      const opened = await newPage(browser)
      pages[who] = opened.page
      errors[who] = opened.errors
    }
  })
  after(async () => {
    await browser?.close()
    await plinth?.close()
  })

  const console_ = async (who: 'olga' | 'oscar') => {
    const page = pages[who]
    await page.goto(`${plinth.url}/`)
    await page.locator('#signin-username').fill(names[who])
    await page.locator('#signin-password').fill(GOOD_PASSWORD)
    await page.getByRole('button', { name: 'Sign in', exact: true }).click()
    await page.getByRole('button', { name: 'Operator', exact: true }).click()
    return page.locator('#operator-view')
  }

  it('an issue above the threshold waits; the requester cannot approve it; another operator approves and it is paid', async () => {
    const olga = await console_('olga')
    await olga.getByRole('button', { name: 'Issue money', exact: true }).click()
    await olga.getByLabel('To: a username or an app id').fill(names.olga)
    await olga.getByLabel('Amount in Pi').fill('1500')
    await olga.getByLabel('Reason (kept in the audit log)').fill('Launch prizes')
    await olga.getByRole('button', { name: 'Issue', exact: true }).click()
    // Checked before the question (#41 U17): the dialog already says it will wait for another operator.
    await pages.olga.getByRole('dialog').getByText('Above the approval threshold: it will wait for a second operator.').waitFor()
    await pages.olga.getByRole('dialog').getByRole('button', { name: 'Ask for approval' }).click()
    await olga.getByTestId('issue-pending').getByText('waits for another operator').waitFor()
    await olga.getByRole('button', { name: 'Approvals', exact: true }).click()
    const own = olga.locator('li[data-status="pending"]')
    await own.getByText('Another operator approves it').waitFor()
    assert.equal(await own.getByRole('button', { name: /^Approve/ }).count(), 0, 'no Approve on one’s own request')

    const oscar = await console_('oscar')
    await oscar.getByRole('button', { name: 'Approvals', exact: true }).click()
    const request = oscar.locator('li[data-status="pending"]')
    await request.getByText(`asked by ${names.olga}`).waitFor()
    await screenshot(pages.oscar, 'operator-approvals')
    await request.getByRole('button', { name: /^Approve: Issue 1,500 π/ }).click()
    await pages.oscar.getByRole('dialog').getByRole('button', { name: 'Approve' }).click()
    await oscar.getByText('Nothing waits for a second operator.').waitFor()

    await oscar.getByRole('button', { name: 'Ledger', exact: true }).click()
    const books = oscar.getByTestId('ledger-check')
    await books.getByText('Balanced: every Pi issued').waitFor()
    await books.getByText('1,500.00001 π').first().waitFor()
    const paid = await plinth.platform.db
      .selectFrom('users as u')
      .innerJoin('ledger_accounts as a', 'a.address', 'u.wallet_address')
      .select('a.balance')
      .where('u.username', '=', names.olga)
      // Issued π is Pi Network's (docs/ledger.md, "Two networks"): the user's Testnet account has none of it.
      .where('a.network', '=', 'Pi Network')
      .executeTakeFirstOrThrow()
    assert.equal(Number(paid.balance), 1500)
    // No script error; the signed-out page's first GET /account is the browser's note of a 401.
    const unexpected = Object.values(errors).flatMap((list) =>
      list.filter((e) => !/^Failed to load resource: the server responded with a status of 401 /.test(e)),
    )
    assert.deepEqual(unexpected, [])
  })
})
