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

  /** Words of the console's titles drawn on more than one line (a word broken mid-word). */
  const brokenWords = (page: Page) =>
    page.evaluate<string[]>(`(() => {
      const broken = []
      for (const title of document.querySelectorAll('main h1, main h2, main h3')) {
        const text = title.firstChild
        if (text === null || text.nodeType !== 3) continue
        const re = /\\S+/g
        let m
        while ((m = re.exec(text.data)) !== null) {
          const range = document.createRange()
          range.setStart(text, m.index)
          range.setEnd(text, m.index + m[0].length)
          const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)))
          if (lines.size > 1) broken.push(m[0])
        }
      }
      return broken
    })()`)

  it('the console’s request log at 1280×800: each time on one line, each request id whole; at 390 no title breaks mid-word (#41 U7, U8)', async () => {
    const { page, close } = await pageAt(browser, SIZES[0])
    try {
      await page.goto(`${world.sandbox.url}/console/#/apps/${world.sandboxAppId}/requests`)
      await page.locator('[data-testid="request-row"] td').first().waitFor()
      const seen = await page.evaluate<{ times: number[]; ids: string[] }>(`(() => {
        const rows = [...document.querySelectorAll('[data-testid="request-row"]')]
        const wrap = document.querySelector('[data-testid="requests"]').closest('.table-wrap').getBoundingClientRect()
        return {
          times: rows.map((row) => new Set([...row.cells[0].querySelector('a').getClientRects()].map((r) => Math.round(r.top))).size),
          ids: rows.map((row) => row.cells[row.cells.length - 1].querySelector('code'))
            .filter((code) => code.scrollWidth > code.clientWidth + 1 || code.getBoundingClientRect().right > wrap.right + 0.5)
            .map((code) => code.textContent),
        }
      })()`)
      assert.deepEqual(
        seen.times.filter((lines) => lines > 1),
        [],
        'each time on one line',
      )
      assert.deepEqual(seen.ids, [], 'no request id clipped')
      await page.setViewportSize({ width: SIZES[1].width, height: SIZES[1].height })
      const broken: string[] = []
      for (const hash of ['#/apps', `#/apps/${world.sandboxAppId}`, `#/apps/${world.sandboxAppId}/requests`, '#/platform']) {
        await page.goto(`${world.sandbox.url}/console/${hash}`)
        await page.locator('main h2').first().waitFor()
        broken.push(...(await brokenWords(page)).map((word) => `${hash}: ${word}`))
      }
      assert.deepEqual(broken, [])
    } finally {
      await close()
    }
  })
})
