import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser } from 'playwright-core'
import { adminOf, signedUp } from '../helpers/accounts.js'
import { stableState } from '../helpers/platform.js'
import { launchBrowser, newPage, type RunningPlinth, type Served, serve, startPlinth } from './harness.js'

/**
 * A stolen personal access token in a page of another origin, in Chromium (docs/security.md,
 * "Personal access tokens"): the page sets `Authorization: Bearer <token>` itself, so the browser
 * asks a CORS preflight first, /portal grants none, and the request is never sent; a `no-cors`
 * fetch cannot carry the header at all (the browser drops it), reaches Plinth without it and is
 * refused by the site check. Run from another port of 127.0.0.1 (same site) and from `localhost`
 * (another site). Nothing changes; the token was never used; the same token from a script works.
 */
describe('a stolen personal access token in a page of another origin, in Chromium', () => {
  let plinth: RunningPlinth
  let browser: Browser
  let site: Served
  let token = ''
  let tokenId = ''
  let appId = ''
  const lines: Array<{ method?: string; url?: string; status?: number; msg?: string }> = []

  before(async () => {
    plinth = await startPlinth({
      mode: 'production',
      logStream: { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) },
    })
    const owner = await signedUp(() => plinth.platform.app)
    await adminOf(plinth.platform).grant(owner.username, 'developer')
    const made = await owner.call('POST', '/portal/apps', { name: 'Tokened', url: 'http://127.0.0.1:9/' })
    appId = String((made.body.app as { app_id: string }).app_id)
    const issued = await owner.call('POST', '/account/tokens', { name: 'ci', scope: 'write', expires_in_days: 30 })
    assert.equal(issued.status, 201, JSON.stringify(issued.body))
    token = String(issued.body.token)
    tokenId = String(issued.body.id)
    site = await serve({ '/': '<!doctype html><title>another origin</title>' })
    browser = await launchBrowser()
  })
  after(async () => {
    await browser?.close()
    await site?.close()
    await plinth?.close()
  })

  for (const where of ['127.0.0.1', 'localhost'] as const) {
    it(`from http://${where}:<another port>: nothing is sent with the token, nothing is read, nothing changes`, async () => {
      const state = await stableState(plinth.platform.db)
      const seen = lines.length
      const { page } = await newPage(browser)
      await page.goto(`${site.url.replace('127.0.0.1', where)}/`)
      const targets = [
        { method: 'GET', url: `${plinth.url}/portal/apps` },
        { method: 'POST', url: `${plinth.url}/portal/apps`, body: { name: 'Evil', url: 'https://evil.example/' } },
        { method: 'POST', url: `${plinth.url}/portal/apps/${appId}/keys`, body: {} },
        { method: 'POST', url: `${plinth.url}/portal/apps/${appId}/members`, body: { username: 'mallory' } },
        { method: 'DELETE', url: `${plinth.url}/portal/apps/${appId}` },
      ]
      const outcomes = (await page.evaluate(
        `(async () => {
          const token = ${JSON.stringify(token)}
          const targets = ${JSON.stringify(targets)}
          const results = []
          for (const target of targets) {
            // As the CLI sends it: the token in Authorization, JSON when there is a body.
            const headers = { Authorization: 'Bearer ' + token }
            if (target.body) headers['Content-Type'] = 'application/json'
            try {
              const answer = await fetch(target.url, { method: target.method, headers, body: target.body ? JSON.stringify(target.body) : undefined })
              results.push({ kind: 'cors', method: target.method, read: await answer.text() })
            } catch (error) {
              results.push({ kind: 'cors', method: target.method, refused: String(error) })
            }
          }
          // no-cors allows GET, HEAD and POST with safelisted headers only: Authorization is dropped.
          for (const target of targets.filter((t) => t.method === 'POST')) {
            const answer = await fetch(target.url, {
              method: 'POST', mode: 'no-cors', headers: { Authorization: 'Bearer ' + token, 'Content-Type': 'text/plain' },
              body: JSON.stringify(target.body),
            })
            results.push({ kind: 'no-cors', method: 'POST', opaque: answer.type === 'opaque' })
          }
          return results
        })()`,
      )) as Array<{ kind: string; method: string; read?: string; refused?: string; opaque?: boolean }>
      await page.context().close()

      const cors = outcomes.filter((o) => o.kind === 'cors')
      assert.equal(cors.length, targets.length)
      for (const outcome of cors)
        assert.match(outcome.refused ?? `read: ${outcome.read}`, /TypeError: Failed to fetch/, JSON.stringify(outcome))
      const noCors = outcomes.filter((o) => o.kind === 'no-cors')
      assert.equal(noCors.length, 3)
      for (const outcome of noCors) assert.equal(outcome.opaque, true)

      const answered = lines.slice(seen).filter((line) => line.msg === 'request completed')
      const preflights = answered.filter((line) => line.method === 'OPTIONS')
      const sent = answered.filter((line) => line.method !== 'OPTIONS')
      // Each CORS attempt stopped at its preflight, which grants nothing.
      assert.equal(preflights.length, targets.length, JSON.stringify(answered))
      // Only the no-cors POSTs arrived, without the token, and the site check refused them.
      assert.equal(sent.length, 3, JSON.stringify(sent))
      for (const line of sent) assert.equal(line.status, 403, JSON.stringify(line))

      assert.equal(await stableState(plinth.platform.db), state, 'the database changed')
      const row = await plinth.platform.db
        .selectFrom('personal_tokens')
        .select('last_used_at')
        .where('id', '=', tokenId)
        .executeTakeFirstOrThrow()
      assert.equal(row.last_used_at, null, 'the token was never presented to Plinth')
    })
  }

  it('the same token from a script (no Origin, no Sec-Fetch-Site) lists the app: the refusals above were the browser’s', async () => {
    const answer = await fetch(`${plinth.url}/portal/apps`, { headers: { authorization: `Bearer ${token}` } })
    assert.equal(answer.status, 200)
    const body = (await answer.json()) as { apps: Array<{ app_id: string }> }
    assert.ok(body.apps.some((app) => app.app_id === appId))
  })
})
