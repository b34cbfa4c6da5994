/**
 * An error in a portal section shows where the person acted (#41 U3; docs/portal.md, "Errors"):
 * adding a member who is no developer, far down the app's page, shows the refusal next to the
 * Add member button, inside the window and announced (role=alert), at 1280×800 and at 390×844;
 * acting again clears it.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { adminOf, freshName, GOOD_PASSWORD, signedUp } from '../helpers/accounts.js'
import { FAST, launchBrowser, type RunningPlinth, screenshot, startPlinth } from './harness.js'
import { pageAt, SIZES } from './views.js'

describe('production: a portal section’s error shows next to the control that caused it', () => {
  let plinth: RunningPlinth
  let browser: Browser
  const developer = freshName('dev').slice(0, 32)
  let stranger = ''

  before(async () => {
    plinth = await startPlinth({ mode: 'production' })
    const admin = adminOf(plinth.platform)
    await admin.createOperator(freshName('op').slice(0, 32), GOOD_PASSWORD)
    const made = await signedUp(() => plinth.platform.app, developer)
    await admin.grant(made.username, 'developer')
    await admin.createApp({ owner: developer, name: 'Comet Notes', url: 'https://comet.example/' })
    stranger = (await signedUp(() => plinth.platform.app)).username
    browser = await launchBrowser()
  })
  after(async () => {
    await browser?.close()
    await plinth?.close()
  })

  /** A box in the window's coordinates. */
  type Box = { top: number; bottom: number }
  /** The alert's box and the button's, in the window's coordinates. */
  const boxes = (page: Page, alert: string, button: string) =>
    page.evaluate<{ alert: Box | null; button: Box | null; text: string; height: number }>(`(() => {
      const alert = document.querySelector(${JSON.stringify(alert)})
      const button = document.querySelector(${JSON.stringify(button)})
      return {
        alert: alert && !alert.hidden ? alert.getBoundingClientRect().toJSON() : null,
        button: button ? button.getBoundingClientRect().toJSON() : null,
        text: alert ? alert.textContent : '',
        height: window.innerHeight,
      }
    })()`)

  for (const size of SIZES) {
    it(`${size.width}×${size.height}: Add member with a non-developer: the refusal is beside the button, in view, announced`, async () => {
      const { page, errors, close } = await pageAt(browser, size)
      try {
        await page.goto(`${plinth.url}/?${new URLSearchParams(FAST)}`)
        await page.locator('#signin-username').fill(developer)
        await page.locator('#signin-password').fill(GOOD_PASSWORD)
        await page.getByRole('button', { name: 'Sign in', exact: true }).click()
        await page.locator('#portal-tab').click()
        await page
          .locator('#portal-view')
          .getByRole('button', { name: /Comet Notes/ })
          .click()
        const members = page.locator('section[aria-labelledby="portal-members-title"]')
        await members.getByLabel('Add a member by username').fill(stranger)
        await members.getByRole('button', { name: 'Add member' }).click()
        const alert = members.getByRole('alert')
        await alert.filter({ hasText: 'not a developer' }).waitFor()
        const seen = await boxes(
          page,
          'section[aria-labelledby="portal-members-title"] [role="alert"]:not([hidden])',
          'section[aria-labelledby="portal-members-title"] form button[type="submit"]',
        )
        assert.ok(seen.alert !== null && seen.button !== null, 'both drawn')
        assert.ok(
          seen.alert.top >= 0 && seen.alert.bottom <= seen.height + 1,
          `the alert (${seen.alert.top}..${seen.alert.bottom}) is in the window`,
        )
        assert.ok(
          Math.abs(seen.alert.top - seen.button.bottom) < 120,
          `the alert is beside the button (${seen.alert.top} vs ${seen.button.bottom})`,
        )
        if (size.name === 'phone') await screenshot(page, 'u3-after')
        // Acting again clears it.
        await members.getByLabel('Add a member by username').fill(developer)
        await members.getByRole('button', { name: 'Add member' }).click()
        await alert.filter({ hasText: 'not a developer' }).waitFor({ state: 'detached' })
        assert.deepEqual(
          errors.filter((e) => !/status of (404|409|400)/.test(e)),
          [],
        )
      } finally {
        await close()
      }
    })
  }
})
