/**
 * The portal's "Shown once" box (docs/portal.md, "In the page"), at 1280×800 and 390×844:
 * - #41 U9: an underscore in a shown-once key is drawn (the field's line is tall enough for the
 *   monospace font's underscore): the field with "_____" looks different from the same field
 *   with spaces, pixel for pixel.
 * - #41 U10: revoking a key that the box still shows takes it out of the box (a key nobody can use
 *   is not offered to copy); the box's other secrets (a new app's wallet seed) stay.
 * And what follows the portal's acts (#41 U14–U16): the focus goes to the new key's field after
 * Make a key, back to the field after Add member, to the toggled button after the operator's
 * Grant, never to <body>; another browser's Sign out is named apart from this browser's; a
 * session row shows its "last used" whole.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser } from 'playwright-core'
import { adminOf, freshName, GOOD_PASSWORD, signedUp } from '../helpers/accounts.js'
import { FAST, launchBrowser, type RunningPlinth, startPlinth } from './harness.js'
import { pageAt, SIZES } from './views.js'

describe('production: the portal’s shown-once box', () => {
  let plinth: RunningPlinth
  let browser: Browser
  const developer = freshName('dev').slice(0, 32)
  const friend = freshName('fr').slice(0, 32)
  const operator = freshName('op').slice(0, 32)

  before(async () => {
    plinth = await startPlinth({ mode: 'production' })
    const admin = adminOf(plinth.platform)
    const made = await signedUp(() => plinth.platform.app, developer)
    await admin.grant(made.username, 'developer')
    await admin.createApp({ owner: developer, name: 'Comet Notes', url: 'https://comet.example/' })
    await admin.grant((await signedUp(() => plinth.platform.app, friend)).username, 'developer')
    await admin.createOperator(operator, GOOD_PASSWORD)
    browser = await launchBrowser()
  })
  after(async () => {
    await browser?.close()
    await plinth?.close()
  })

  /** Puts `value` in the shown-once key's field, scrolled to its start (page code as a string: harness.ts). */
  const setValue = (value: string) =>
    `(() => { const el = document.querySelector('#portal-view [data-testid="secret-api-key"]'); el.blur(); el.value = ${JSON.stringify(value)}; el.scrollLeft = 0 })()`

  /** The focused element, as a test names it: its data-testid, id or accessible label. */
  const focused = (page: import('playwright-core').Page) =>
    page.evaluate<string>(`(() => {
      const el = document.activeElement
      return el === null || el === document.body ? 'body' : el.dataset.testid ?? (el.id || el.getAttribute('aria-label') || el.tagName)
    })()`)

  for (const size of SIZES) {
    it(`${size.width}×${size.height}: a new key's underscores are drawn; revoking it clears it from the box`, async () => {
      const { page, errors, close } = await pageAt(browser, size)
      try {
        await page.goto(`${plinth.url}/?${new URLSearchParams(FAST)}`)
        await page.locator('#signin-username').fill(developer)
        await page.locator('#signin-password').fill(GOOD_PASSWORD)
        await page.getByRole('button', { name: 'Sign in', exact: true }).click()
        await page.locator('#portal-tab').click()
        const view = page.locator('#portal-view')
        await view.getByRole('button', { name: /Comet Notes/ }).click()
        const name = `key ${size.name}`
        await view.getByLabel('A new key’s name').fill(name)
        await view.getByRole('button', { name: 'Make a key' }).click()
        const field = view.getByTestId('shown-once').getByTestId('secret-api-key')
        await field.waitFor()
        assert.equal(await focused(page), 'secret-api-key', 'the focus is on the new key, to copy it')

        // U9: the same field drawn with underscores and with spaces.
        await page.evaluate(setValue('plinth_a_b_c_d'))
        const underscores = await field.screenshot()
        await page.evaluate(setValue('plinth a b c d'))
        const spaces = await field.screenshot()
        assert.notDeepEqual(underscores, spaces, 'underscores are drawn')

        // U10: revoking the key takes it out of the box.
        await view.getByRole('button', { name: `Revoke the key ${name}` }).click()
        await page.getByRole('dialog').getByRole('button', { name: 'Revoke', exact: true }).click()
        await view
          .locator(`li:has-text("${name}")`)
          .getByText(/revoked/)
          .waitFor()
        assert.equal(await view.getByTestId('secret-api-key').count(), 0, 'the revoked key is no longer offered to copy')

        // U14: Add member gives the focus back to its field, for the next one.
        if (size.name === 'desktop') {
          await view.getByLabel('Add a member by username').fill(friend)
          await view.getByRole('button', { name: 'Add member' }).click()
          await view.locator(`li[data-username="${friend}"]`).waitFor()
          assert.equal(await focused(page), 'new-member')
        }

        // U15, U16: the account panel, with the session made by signing up elsewhere.
        await page.locator('#user-chip').click()
        const drawer = page.locator('#drawer')
        await drawer
          .getByRole('button', { name: /^Sign out the other browser, since .*, last used / })
          .first()
          .waitFor()
        assert.equal(await drawer.getByRole('button', { name: 'Sign out', exact: true }).count(), 1, 'one button named Sign out')
        const cut = await page.evaluate<string[]>(`[...document.querySelectorAll('#drawer ul[aria-label="Sessions"] li .grow')]
          .filter((el) => el.scrollWidth > el.clientWidth + 1).map((el) => el.textContent)`)
        assert.deepEqual(cut, [], 'no session row is cut')
        assert.deepEqual(errors, [])
      } finally {
        await close()
      }
    })
  }

  it('the operator’s Grant leaves the focus on the same person’s button, now Withdraw', async () => {
    const { page, errors, close } = await pageAt(browser, SIZES[0])
    try {
      await page.goto(`${plinth.url}/?${new URLSearchParams(FAST)}`)
      await page.locator('#signin-username').fill(operator)
      await page.locator('#signin-password').fill(GOOD_PASSWORD)
      await page.getByRole('button', { name: 'Sign in', exact: true }).click()
      await page.locator('#operator-tab').click()
      const view = page.locator('#operator-view')
      await view.getByRole('button', { name: 'Users', exact: true }).click()
      await view.getByLabel('Find users by name').fill(friend)
      await view.getByRole('button', { name: 'Search' }).click()
      await view.getByRole('button', { name: `Withdraw the developer role from ${friend}` }).click()
      await view.getByRole('button', { name: `Grant the developer role to ${friend}` }).waitFor()
      assert.equal(await focused(page), `Grant the developer role to ${friend}`)
      assert.deepEqual(errors, [])
    } finally {
      await close()
    }
  })
})
