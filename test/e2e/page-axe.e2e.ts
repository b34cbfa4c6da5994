/**
 * Every page and view of both modes passes axe-core's WCAG 2.1 A and AA rules with no serious or
 * critical violation (#41 U5; docs/testing.md, "Accessibility"), at 1280×800 and at 390×844: each
 * view of VIEWS (views.ts), and the dialogs of the console (Reset sandbox, Restore snapshot), of
 * the portal (Revoke a key), of the account panel (a new passkey's name) and of the operator's
 * console (Issue money's confirmation). axe-core runs inside the page (its source injected).
 *
 * EXCEPTIONS names each violation left on purpose, with its reason; it is empty when none is.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { after, before, describe, it } from 'node:test'
import type { ImpactValue } from 'axe-core'
import type { Browser, Page } from 'playwright-core'
import { launchBrowser, screenshot } from './harness.js'
import { pageAt, SIZES, startWorld, VIEWS, type View, type World } from './views.js'

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

/** `rule id @ view name` → why it is left. */
const EXCEPTIONS: Record<string, string> = {}

interface Violation {
  id: string
  impact: ImpactValue | null
  help: string
  targets: string[]
}

/** axe's serious and critical violations in the page as it is now. */
async function violations(page: Page): Promise<Violation[]> {
  // Evaluated, not added as a script tag: the pages' Content-Security-Policy refuses inline scripts.
  if (!(await page.evaluate<boolean>('typeof window.axe === "object"'))) await page.evaluate(AXE_SOURCE)
  return page.evaluate<Violation[]>(`(async () => {
    /** @type {import('axe-core').AxeResults} */
    const result = await window.axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
      resultTypes: ['violations'],
    })
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.slice(0, 4).map((n) => n.target.join(' ') + (n.failureSummary ? ' — ' + n.failureSummary.split('\\n').slice(1, 2).join('') : '')) }))
  })()`)
}

/** Dialogs: opened from the view before, checked, then cancelled. */
const DIALOGS: View[] = [
  {
    name: 'portal: Revoke a key (confirm)',
    open: async (page, world) => {
      // Still signed in from VIEWS' production views.
      await page.goto(`${world.production.url}/`)
      await page.locator('#portal-tab').click()
      await page
        .locator('#portal-view')
        .getByRole('button', { name: new RegExp(world.appName) })
        .click()
      await page
        .locator('#portal-view')
        .getByRole('button', { name: /^Revoke the key/ })
        .first()
        .click()
      await page.getByRole('dialog').waitFor()
    },
  },
  {
    name: 'account: Add a passkey (its name)',
    open: async (page, world) => {
      await page.goto(`${world.production.url}/`)
      await page.locator('#user-chip').click()
      await page.locator('#drawer').getByRole('button', { name: 'Add a passkey' }).click()
      await page.getByRole('dialog', { name: 'Add a passkey' }).waitFor()
    },
  },
  {
    name: 'operator: Issue money (confirm, after its check)',
    open: async (page, world) => {
      await page.goto(`${world.production.url}/?view=operator`)
      const view = page.locator('#operator-view')
      await view.getByRole('button', { name: 'Issue money', exact: true }).click()
      await view.getByLabel('To: a username or an app id').fill(world.operator)
      await view.getByLabel('Amount in Pi').fill('1')
      await view.getByLabel('Reason (kept in the audit log)').fill('axe')
      await view.getByRole('button', { name: 'Issue', exact: true }).click()
      await page.getByRole('dialog', { name: 'Issue new money?' }).waitFor()
    },
  },
  {
    name: 'console: Reset sandbox (confirm)',
    open: async (page, world) => {
      await page.goto(`${world.sandbox.url}/console/#/platform`)
      await page.getByTestId('reset-data').click()
      await page.locator('dialog[open]').waitFor()
    },
  },
  {
    name: 'console: Restore snapshot (confirm)',
    open: async (page, world) => {
      await page.goto(`${world.sandbox.url}/console/#/snapshots`)
      await page.getByTestId('restore-snapshot').first().click()
      await page.locator('dialog[open]').waitFor()
    },
  },
]

describe('axe-core: no serious or critical violation on any page of both modes', () => {
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
    it(`${size.width}×${size.height}: every view and confirm dialog`, async () => {
      const { page, close } = await pageAt(browser, size)
      try {
        const found: string[] = []
        for (const view of [...VIEWS, ...DIALOGS]) {
          await view.open(page, world)
          for (const v of await violations(page)) {
            if (EXCEPTIONS[`${v.id} @ ${view.name}`] !== undefined) continue
            found.push(`${view.name}: ${v.id} (${v.impact}) ${v.help}: ${v.targets.join('; ')}`)
          }
          if (view.name === 'console: Reset sandbox (confirm)' && size.name === 'desktop') await screenshot(page, 'u5-after')
          if (DIALOGS.includes(view)) {
            await page.keyboard.press('Escape')
            await page.locator('dialog[open], .modal').first().waitFor({ state: 'detached' })
          }
        }
        assert.deepEqual(found, [])
      } finally {
        await close()
      }
    })
  }
})
