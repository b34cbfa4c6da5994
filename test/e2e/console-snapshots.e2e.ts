import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { expectStatus, launchBrowser, newPage, type RunningPlinth, screenshot, startPlinth } from './harness.js'

interface Snapshot {
  name: string
  bytes: number
}

/**
 * The console's snapshots page (docs/console.md): save the platform under a name, list, restore
 * (after a confirmation), download the export as a file, import a file, delete (two clicks).
 */
describe('console: snapshots in a browser', () => {
  let plinth: RunningPlinth
  let browser: Browser
  let page: Page
  let errors: string[]

  before(async () => {
    plinth = await startPlinth()
    browser = await launchBrowser()
    ;({ page, errors } = await newPage(browser))
  })
  after(async () => {
    await browser?.close()
    await plinth?.close()
  })

  const snapshots = async () =>
    expectStatus(await plinth.api<{ snapshots: Snapshot[] }>('GET', '/sandbox/snapshots'), 200, 'snapshots').snapshots.map((s) => s.name)
  const row = (name: string) => page.locator(`[data-testid="snapshot-row"][data-name="${name}"]`)

  it('saves, lists, restores, downloads, imports and deletes snapshots', async () => {
    const kept = await plinth.createApp('Kept Shop')
    await page.goto(`${plinth.url}/console/`)
    await page.getByRole('link', { name: 'Snapshots', exact: true }).click()
    await page.getByText('No snapshot saved yet.').waitFor()

    const save = page.getByTestId('save-snapshot')
    await save.locator('input[name="name"]').fill('before-shop')
    await save.getByRole('button', { name: 'Save snapshot' }).click()
    await row('before-shop').waitFor()
    assert.deepEqual(await snapshots(), ['before-shop'])

    // An existing name is refused unless "replace" is ticked.
    await save.locator('input[name="name"]').fill('before-shop')
    await save.getByRole('button', { name: 'Save snapshot' }).click()
    await page
      .getByTestId('toast')
      .getByText(/exists/)
      .waitFor()
    await save.locator('input[name="name"]').fill('before-shop')
    await save.locator('input[name="replace"]').check()
    await save.getByRole('button', { name: 'Save snapshot' }).click()
    await page.getByTestId('toast').getByText('Saved before-shop').waitFor()

    // Restore asks first; then the app made since is gone and the one saved is back.
    const later = await plinth.createApp('Later Shop')
    await row('before-shop').getByTestId('restore-snapshot').click()
    await page.getByTestId('restore-dialog').getByRole('button', { name: 'Cancel' }).click()
    expectStatus(await plinth.api('GET', `/sandbox/apps/${later.app_id}`), 200, 'Cancel restores nothing')
    await row('before-shop').getByTestId('restore-snapshot').click()
    await page.getByTestId('restore-dialog-yes').click()
    await page.getByTestId('toast').getByText('Restored before-shop').waitFor()
    assert.equal((await plinth.api('GET', `/sandbox/apps/${later.app_id}`)).status, 404)
    expectStatus(await plinth.api('GET', `/sandbox/apps/${kept.app_id}`), 200, 'the saved app')

    // Download: the export, as a file.
    const [download] = await Promise.all([page.waitForEvent('download'), row('before-shop').getByTestId('download-snapshot').click()])
    assert.equal(download.suggestedFilename(), 'before-shop.plinth-snapshot.json')
    const path = await download.path()
    const file = JSON.parse(await readFile(path, 'utf8')) as { plinth_snapshot: number; name: string; tables: Record<string, unknown[]> }
    assert.equal(file.name, 'before-shop')
    assert.equal(typeof file.plinth_snapshot, 'number')
    assert.ok(JSON.stringify(file.tables).includes(kept.app_id), 'the file holds the saved app')

    // Import that file under another name.
    const upload = page.getByTestId('import-snapshot')
    await upload.locator('input[type="file"]').setInputFiles(path)
    await upload.locator('input[name="name"]').fill('from-file')
    await upload.getByRole('button', { name: 'Import' }).click()
    await row('from-file').waitFor()
    assert.deepEqual((await snapshots()).sort(), ['before-shop', 'from-file'])
    await screenshot(page, 'console-snapshots')

    // Delete takes two clicks.
    const remove = row('from-file').getByTestId('delete-snapshot')
    await remove.click()
    assert.equal(await remove.textContent(), 'Click again to delete')
    assert.deepEqual((await snapshots()).sort(), ['before-shop', 'from-file'], 'one click deletes nothing')
    await remove.click()
    await row('from-file').waitFor({ state: 'detached' })
    assert.deepEqual(await snapshots(), ['before-shop'])
  })

  it('checks a name before sending, in plain words', async () => {
    const save = page.getByTestId('save-snapshot')
    await page.evaluate(`document.querySelector('[data-testid="save-snapshot"] input[name="name"]').removeAttribute('pattern')`)
    await save.locator('input[name="name"]').fill('Bad Name')
    await save.getByRole('button', { name: 'Save snapshot' }).click()
    await page.getByTestId('toast').getByText('A snapshot name is lower-case letters').waitFor()
    assert.deepEqual(await snapshots(), ['before-shop'])
  })

  it('left no script errors in the page', () => {
    // The refused save of an existing name is the browser's only complaint.
    assert.deepEqual(
      errors.filter((text) => !text.startsWith('Failed to load resource')),
      [],
    )
  })
})
