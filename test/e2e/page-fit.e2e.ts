/**
 * No page of either mode is wider than the window (#41 U1, U2; docs/portal.md, "On a phone"): every
 * view of VIEWS (views.ts) at 1280×800 and at a phone's 390×844 has
 * document.documentElement.scrollWidth ≤ innerWidth, and the account chip (the person's name, the
 * way to the account panel and its Sign out) is whole inside the window.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { launchBrowser, screenshot } from './harness.js'
import { pageAt, SIZES, startWorld, VIEWS, type World } from './views.js'

interface Fit {
  scrollWidth: number
  innerWidth: number
  chip: { left: number; right: number } | null
  /** The innermost elements that end past the window's right edge (what to fix), at most three. */
  culprits: string[]
}

const fitOf = (page: Page) =>
  page.evaluate<Fit>(`(() => {
    const chip = document.getElementById('user-chip')
    const box = chip === null || chip.hidden ? null : chip.getBoundingClientRect()
    const past = [...document.body.querySelectorAll('*')].filter((el) => el.getBoundingClientRect().right > window.innerWidth + 0.5)
    const culprits = past
      .filter((el) => !past.some((other) => other !== el && el.contains(other)))
      .slice(0, 3)
      .map((el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className ? '.' + String(el.className).split(' ').join('.') : '') + ' ' + Math.round(el.getBoundingClientRect().right))
    return {
      culprits,
      scrollWidth: document.documentElement.scrollWidth,
      innerWidth: window.innerWidth,
      chip: box === null ? null : { left: box.left, right: box.right },
    }
  })()`)

/** The views whose phone-size screenshots show U1 (the portal) and U2 (the top bar's chip). */
const SHOTS: Record<string, string> = { 'portal: an app': 'u1', 'operator: Users': 'u2' }

describe('every page of both modes fits the window, at 1280×800 and 390×844', () => {
  let world: World
  let browser: Browser

  before(async () => {
    world = await startWorld()
    browser = await launchBrowser()
  })
  after(async () => {
    await browser?.close()
    await world?.close()
  })

  for (const size of SIZES) {
    it(`${size.width}×${size.height}: no sideways scroll on any view; the account chip is inside the window`, async () => {
      const { page, errors, close } = await pageAt(browser, size)
      try {
        const wide: string[] = []
        for (const view of VIEWS) {
          await view.open(page, world)
          const fit = await fitOf(page)
          if (fit.scrollWidth > fit.innerWidth)
            wide.push(`${view.name}: ${fit.scrollWidth} px wide in ${fit.innerWidth} (${fit.culprits.join(', ')})`)
          if (fit.chip !== null && (fit.chip.left < 0 || fit.chip.right > fit.innerWidth)) {
            wide.push(`${view.name}: the account chip spans ${fit.chip.left}..${fit.chip.right} of ${fit.innerWidth}`)
          }
          const shot = SHOTS[view.name]
          if (shot !== undefined && size.name === 'phone') await screenshot(page, `${shot}-after`)
        }
        assert.deepEqual(wide, [])
        assert.deepEqual(errors, [])
      } finally {
        await close()
      }
    })
  }
})
