import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { freshName, GOOD_PASSWORD } from '../helpers/accounts.js'
import { REPO_ROOT, runCommand } from '../helpers/server-process.js'
import { walkSteps } from '../helpers/walks.js'
import { launchBrowser, type RunningPlinth, type Served, serve, startPlinth } from './harness.js'
import { SIZES, type Size, signUp } from './walk-pages.js'

/**
 * The production developer's walk (issue #41): docs/portal.md in order, in Chromium at 1280×800
 * and at 390×844 (a developer, a second developer to share the app with, and an app for each
 * size), on a production platform where developers sign themselves up
 * (`PLINTH_DEVELOPER_SIGNUP=open`) and Verify may reach an app on this machine
 * (`PLINTH_ALLOW_PRIVATE_APP_URLS=1`, docs/production.md's local trial). What the doc does through
 * the API (the network's move, a personal access token) is done from the signed-in page, as a
 * developer's script there would; the command-line steps run bin/plinth.mjs of this checkout.
 */
const FILE = 'test/e2e/walk-production-developer.e2e.ts'
const PORTAL = 'docs/portal.md'
const doc = readFileSync(join(REPO_ROOT, PORTAL), 'utf8')

interface Walker {
  size: Size
  page: Page
  member: Page
  name: string
  memberName: string
  appName: string
  appId: string
  apiKey: string
  validationKey: string
}

describe('the production developer’s walk: docs/portal.md, in Chromium at both sizes', () => {
  const { step, done } = walkSteps(FILE, it)
  let plinth: RunningPlinth
  let browser: Browser
  let site: Served
  /** What the app's site serves at /validation-key.txt, by its path's app (nothing until published). */
  const published = new Set<string>()
  const walkers = new Map<string, Walker>()
  let token = ''

  before(async () => {
    plinth = await startPlinth({ mode: 'production', portal: { developerSignup: 'open', allowPrivateAppUrls: true } })
    site = await serve({
      '/': '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Comet</title></head><body><h1>Comet</h1></body></html>',
      '/validation-key.txt': async () =>
        published.size === 0
          ? { status: 404, type: 'text/plain', body: 'not found' }
          : { type: 'text/plain', body: [...published].at(-1) ?? '' },
    })
    browser = await launchBrowser()
    for (const size of SIZES) {
      const open = async () => {
        const context = await browser.newContext({ viewport: { width: size.width, height: size.height } })
        // A machine shared with other suites can be slow: the walk waits on conditions, never sleeps.
        context.setDefaultTimeout(30_000)
        context.setDefaultNavigationTimeout(60_000)
        return context.newPage()
      }
      walkers.set(size.name, {
        size,
        page: await open(),
        member: await open(),
        name: freshName(`dana${size.width}`).slice(0, 32),
        memberName: freshName(`grace${size.width}`).slice(0, 32),
        appName: `Comet ${size.width}`,
        appId: '',
        apiKey: '',
        validationKey: '',
      })
    }
  })
  after(async () => {
    await browser?.close()
    await site?.close()
    await plinth?.close()
  })

  const each = (heading: string, what: string, fn: (walker: Walker) => Promise<void>) => {
    for (const size of SIZES) {
      step(PORTAL, heading, `${what} (${size.name})`, async () => {
        await fn(walkers.get(size.name) as Walker)
      })
    }
  }
  const view = (page: Page) => page.locator('#portal-view')
  /** No part of the page needs a sideways scroll at the walker's width. */
  const fits = async (w: Walker) => {
    const wide = Number(await w.page.evaluate('document.documentElement.scrollWidth'))
    const past = await w.page.evaluate(
      `[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > ${w.size.width} + 0.5 && e.getClientRects().length > 0).slice(0, 5).map((e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + '.' + [...e.classList].join('.') + '[' + Math.round(e.getBoundingClientRect().right) + ']')`,
    )
    assert.ok(wide <= w.size.width, `the page is ${wide} px wide in a ${w.size.width} px window: ${JSON.stringify(past)}`)
  }
  const keyCall = (key: string) =>
    fetch(`${plinth.url}/v2/payments/incomplete_server_payments`, { headers: { authorization: `Key ${key}` } })
  /** A same-origin JSON request of the signed-in page, as the doc's routes are called. */
  const call = (page: Page, method: string, path: string, body?: unknown) =>
    page.evaluate(
      `fetch(${JSON.stringify(path)}, { method: ${JSON.stringify(method)}, credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: ${body === undefined ? 'undefined' : JSON.stringify(JSON.stringify(body))} }).then(async (r) => ({ status: r.status, body: await r.json() }))`,
    ) as Promise<{ status: number; body: Record<string, unknown> }>

  each('Becoming a developer', 'under open, Become a developer on the home opens the Portal', async (w) => {
    for (const [page, name] of [
      [w.page, w.name],
      [w.member, w.memberName],
    ] as const) {
      await signUp(page, plinth.url, name)
      await page.getByRole('button', { name: 'Become a developer' }).click()
      await view(page).getByRole('heading', { name: 'Developer portal' }).waitFor()
      await page.getByRole('button', { name: 'Portal', exact: true }).waitFor()
    }
  })

  each('In the page', 'Register an app: the key and seed shown once, the domain, keys, members, wallet, activity', async (w) => {
    const v = view(w.page)
    await v.getByRole('button', { name: 'Register an app' }).click()
    await v.getByLabel('Name').fill(w.appName)
    await v.getByLabel('Frontend URL (http or https)').fill(`${site.url}/`)
    // "Networks": the form preselects Pi Testnet; this walk's app is a Pi Network app, to walk "Listing" and then
    // "Changing an app's network" as the doc orders them.
    assert.equal(await v.getByLabel('Network').inputValue(), 'Pi Testnet')
    await v.getByLabel('Network').selectOption('Pi Network')
    await v.getByRole('button', { name: 'Register', exact: true }).click()
    const once = v.getByTestId('shown-once')
    await once.getByText('Shown once: copy it now.').waitFor()
    w.apiKey = await once.getByTestId('secret-api-key').inputValue()
    assert.match(await once.getByTestId('secret-wallet-seed').inputValue(), /^S[A-Z2-7]{55}$/)
    assert.equal(await w.page.evaluate('document.activeElement?.dataset.testid'), 'secret-api-key', 'the focus on the new key')
    w.appId = await v.getByTestId('portal-app-id').innerText()
    for (const title of ['Server API keys', 'Members', 'Wallet', 'Activity']) {
      await v.getByRole('heading', { name: title, exact: true }).first().waitFor()
    }
    await v.getByRole('button', { name: 'Verify the domain' }).waitFor()
    await fits(w)
  })

  each('Apps and roles', 'the owner adds a member, who sees the app without the owner’s buttons', async (w) => {
    const v = view(w.page)
    await v.getByLabel('Add a member by username').fill(w.memberName)
    await v.getByRole('button', { name: 'Add member' }).click()
    await v.getByRole('list', { name: 'Members' }).locator(`li[data-username="${w.memberName}"]`).waitFor()
    await w.member.reload()
    await w.member.getByRole('button', { name: 'Portal', exact: true }).click()
    const mv = view(w.member)
    await mv
      .getByRole('button', { name: new RegExp(w.appName) })
      .first()
      .click()
    await mv.getByText('You are a member').waitFor()
    for (const owners of ['Make a key', 'Add member']) assert.equal(await mv.getByRole('button', { name: owners }).count(), 0, owners)
    await mv.getByRole('button', { name: 'Leave the app' }).waitFor()
  })

  each('Listing', 'a Pi Network app waits for the platform’s review', async (w) => {
    const state = view(w.page).getByTestId('listing-state')
    await state.getByText('waiting for the platform’s review').waitFor()
    assert.equal(await state.getAttribute('data-state'), 'pending')
  })

  each('Changing an app’s network', 'to Pi Testnet: no review; a member may not move it', async (w) => {
    const refused = await call(w.member, 'POST', `/portal/apps/${w.appId}/network`, { network: 'Pi Testnet' })
    assert.equal(refused.status, 403)
    const moved = await call(w.page, 'POST', `/portal/apps/${w.appId}/network`, { network: 'Pi Testnet' })
    assert.equal(moved.status, 200, JSON.stringify(moved.body))
    assert.equal((moved.body.app as { listing: unknown } | undefined)?.listing ?? moved.body.listing, null)
    await w.page.reload()
    await view(w.page).getByRole('heading', { name: w.appName }).waitFor()
    assert.equal(await view(w.page).getByTestId('listing-state').count(), 0, 'no listing line on Testnet')
  })

  each('Verifying the domain', 'refused before the key is published, verified once the site serves it', async (w) => {
    const v = view(w.page)
    if (published.size === 0) {
      await v.getByRole('button', { name: 'Verify the domain' }).click()
      await v.getByTestId('verify-error').getByText('answered HTTP 404').waitFor()
    }
    w.validationKey = await v.getByTestId('validation-key').inputValue()
    assert.match(w.validationKey, /^plinth-.{32}$/)
    published.add(w.validationKey)
    await v.getByRole('button', { name: 'Verify the domain' }).click()
    await v.getByTestId('verified-line').getByText(`Verified at ${site.url}`).waitFor()
    published.delete(w.validationKey)
  })

  each('Keys’ last use', 'a call with the key shows as the key’s last use', async (w) => {
    const v = view(w.page)
    const row = v.getByRole('list', { name: 'Server API keys' }).locator('li').first()
    await row.getByText('last used —').waitFor()
    assert.equal((await keyCall(w.apiKey)).status, 200)
    await w.page.reload()
    await v.getByRole('heading', { name: w.appName }).waitFor()
    const text = await v.getByRole('list', { name: 'Server API keys' }).locator('li').first().innerText()
    assert.match(text, /last used (?!—)\S/)
  })

  each('Request log', 'off until the owner turns it on; then a call with the key shows', async (w) => {
    const v = view(w.page)
    await v.getByRole('button', { name: 'Request log', exact: true }).click()
    await v.getByTestId('request-log-state').getByText('The request log is off').waitFor()
    await v.getByRole('switch', { name: 'Keep the app’s request log' }).click()
    await v.getByTestId('request-log-state').getByText('The request log is on').waitFor()
    assert.equal((await keyCall(w.apiKey)).status, 200)
    await v.getByRole('button', { name: 'Show', exact: true }).click()
    await v
      .getByRole('table', { name: 'Logged calls, newest first' })
      .locator('tr[data-request-id]')
      .first()
      .getByText('/v2/payments/incomplete_server_payments')
      .waitFor()
    await fits(w)
  })

  each('The app’s tools', 'the Overview, Find by request id, the exports and Copy as curl', async (w) => {
    const v = view(w.page)
    const tools = v.getByTestId('portal-tools')
    await tools.getByTestId('portal-overview').getByText('0 payments in all.').waitFor()
    // The call's X-Request-Id, as a user reporting a problem would quote it.
    const requestId = String((await keyCall(w.apiKey)).headers.get('x-request-id'))
    await tools.getByLabel('Find in the app').fill(requestId)
    await tools.getByRole('button', { name: 'Find', exact: true }).click()
    await tools.getByTestId('portal-find-hits').locator('li[data-request-id]').first().waitFor()
    assert.match((await tools.getByRole('link', { name: 'Payments (CSV)' }).getAttribute('href')) ?? '', /format=csv/)
    await v
      .getByRole('table', { name: 'Logged calls, newest first' })
      .locator('tr[data-request-id]')
      .first()
      .getByRole('button', { name: /^Request / })
      .click()
    const dialog = w.page.getByRole('dialog')
    await dialog.getByRole('button', { name: 'Copy as curl' }).click()
    const curl = String(await dialog.getByTestId('request-curl').locator('pre').textContent())
    assert.match(curl, /Authorization: Key \$PI_API_KEY/)
    assert.ok(!curl.includes(w.apiKey), 'no key in the command')
    await dialog.getByRole('button', { name: 'Close' }).click()
    await fits(w)
  })

  step(PORTAL, 'The portal from the command line', 'a personal access token, then the doc’s curl of /portal/apps', async () => {
    const w = walkers.get(SIZES[0].name) as Walker
    // Signed in long enough ago that the token needs the password again (the five minutes of accounts.md).
    const confirmed = await call(w.page, 'POST', '/account/reauthenticate', { password: GOOD_PASSWORD })
    assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body))
    const made = await call(w.page, 'POST', '/account/tokens', { name: 'ci', scope: 'write', expires_in_days: 30 })
    assert.equal(made.status, 201, JSON.stringify(made.body))
    token = String(made.body.token)
    const line = [...doc.matchAll(/^```sh\n(curl [^\n]*\/portal\/apps[^\n]*)\n```$/gm)][0]?.[1]
    assert.ok(line, 'portal.md has the curl line')
    // Not execFileSync: the platform answers in this very process.
    const answer = await runCommand('bash', ['-c', line.replace('localhost:8080', plinth.url)], { env: { PLINTH_TOKEN: token } })
    assert.equal(answer.code, 0, answer.stderr)
    const apps = (JSON.parse(answer.stdout) as { apps: { app_id: string }[] }).apps
    assert.deepEqual(
      apps.map((app) => app.app_id),
      [w.appId],
    )
  })

  step(PORTAL, '`plinth portal`', 'login checks the token; apps list --json; members add; login --username makes one', async () => {
    const w = walkers.get(SIZES[0].name) as Walker
    const root = execFileSync('git', ['-C', REPO_ROOT, 'rev-parse', '--show-toplevel'], { encoding: 'utf8' }).trim()
    const plinthCli = (args: string[], env: Record<string, string>, input = '') =>
      runCommand(process.execPath, [join(root, 'bin', 'plinth.mjs'), 'portal', ...args], { env: { PLINTH_URL: plinth.url, ...env }, input })
    const login = await plinthCli(['login'], { PLINTH_TOKEN: token })
    assert.equal(login.code, 0, login.stderr)
    assert.match(login.stdout, new RegExp(`${w.name} \\(developer\\), token scope write`))
    const listed = await plinthCli(['apps', 'list', '--json'], { PLINTH_TOKEN: token })
    assert.equal(listed.code, 0, listed.stderr)
    assert.deepEqual(
      (JSON.parse(listed.stdout) as { app_id: string }[]).map((app) => app.app_id),
      [w.appId],
    )
    const other = (walkers.get(SIZES[1].name) as Walker).name
    const added = await plinthCli(['members', 'add', '--app', w.appId, other], { PLINTH_TOKEN: token })
    assert.equal(added.code, 0, added.stderr)
    const again = await plinthCli(['login', '--username', w.name], {}, `${GOOD_PASSWORD}\n`)
    assert.equal(again.code, 0, again.stderr)
    assert.match(again.stdout, /plinth_pat_/)
  })

  done()
})
