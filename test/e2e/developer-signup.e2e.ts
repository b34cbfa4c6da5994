import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { freshName, GOOD_PASSWORD } from '../helpers/accounts.js'
import { FAST, launchBrowser, type RunningPlinth, screenshot, startPlinth } from './harness.js'

/**
 * Becoming a developer from the platform page (docs/portal.md, "Becoming a developer"), in
 * Chromium at 1280×800 and at a phone's 390×844: under PLINTH_DEVELOPER_SIGNUP=open a new user's
 * home offers **Become a developer**, which opens the Portal; under `operator` (the default) and
 * `invite` the home says whom to ask, with the person's username, and offers no button.
 */
const SIZES = [
  { name: 'desktop', width: 1280, height: 800 },
  { name: 'phone', width: 390, height: 844 },
] as const

describe('production: becoming a developer from the platform page, in Chromium', () => {
  let browser: Browser
  const platforms: Partial<Record<'open' | 'operator' | 'invite', RunningPlinth>> = {}

  before(async () => {
    for (const policy of ['open', 'operator', 'invite'] as const) {
      platforms[policy] = await startPlinth({ mode: 'production', portal: { developerSignup: policy } })
    }
    browser = await launchBrowser()
  })
  after(async () => {
    await browser?.close()
    for (const plinth of Object.values(platforms)) await plinth?.close()
  })

  /** A new person signed up on the page of the platform under `policy`, at `size`. */
  async function signedUpOn(policy: 'open' | 'operator' | 'invite', size: (typeof SIZES)[number]) {
    const plinth = platforms[policy]
    if (plinth === undefined) throw new Error(`no platform under ${policy}`)
    const context = await browser.newContext({ viewport: { width: size.width, height: size.height } })
    context.setDefaultTimeout(15_000)
    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    const username = freshName('dev').slice(0, 32)
    await page.goto(`${plinth.url}/?${new URLSearchParams(FAST)}`)
    await page.getByLabel('Username (3 to 32').fill(username)
    await page.getByLabel('Password (8 to 128').fill(GOOD_PASSWORD)
    await page.getByRole('button', { name: 'Create account' }).click()
    await page.getByRole('heading', { name: 'Open an app' }).waitFor()
    return { page, username, errors, close: () => context.close() }
  }

  /** The section sits inside the window: nothing of it needs a sideways scroll. */
  async function fitsTheWindow(page: Page, width: number) {
    const box = await page.getByTestId('developer-signup').boundingBox()
    assert.ok(box !== null, 'the section is drawn')
    assert.ok(box.x >= 0 && box.x + box.width <= width, `the section spans ${box.x}..${box.x + box.width} of ${width} px`)
  }

  for (const size of SIZES) {
    it(`open, ${size.width}×${size.height}: Become a developer opens the Portal and the Portal tab`, async () => {
      const { page, errors, close } = await signedUpOn('open', size)
      try {
        const button = page.getByRole('button', { name: 'Become a developer' })
        await button.waitFor()
        await fitsTheWindow(page, size.width)
        if (size.name === 'desktop') await screenshot(page, 'developer-signup')
        assert.equal(await page.getByRole('button', { name: 'Portal' }).isVisible(), false, 'no Portal tab before')
        await button.click()
        await page.getByRole('heading', { name: 'Developer portal' }).waitFor()
        assert.equal(await page.getByRole('button', { name: 'Portal' }).isVisible(), true, 'the Portal tab after')
        // The role is the server's: a reload finds it there, and the home no longer offers the button.
        await page.reload()
        await page.getByRole('button', { name: 'Apps' }).click()
        await page.getByRole('heading', { name: 'Open an app' }).waitFor()
        assert.equal(await page.getByRole('button', { name: 'Become a developer' }).count(), 0)
        assert.deepEqual(errors, [])
      } finally {
        await close()
      }
    })

    for (const policy of ['operator', 'invite'] as const) {
      it(`${policy}, ${size.width}×${size.height}: the home says whom to ask, with the username, and offers no button`, async () => {
        const { page, username, errors, close } = await signedUpOn(policy, size)
        try {
          const ask = page.getByTestId('developer-signup-ask')
          await ask.waitFor()
          const text = await ask.innerText()
          assert.match(text, policy === 'invite' ? /Ask a developer to add you/ : /operator grants the developer role/)
          assert.ok(text.includes(username), 'the username to give')
          assert.equal(await page.getByRole('button', { name: 'Become a developer' }).count(), 0)
          await fitsTheWindow(page, size.width)
          assert.deepEqual(errors, [])
        } finally {
          await close()
        }
      })
    }
  }
})
