import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser } from 'playwright-core'
import { stableState } from '../helpers/platform.js'
import { fill, label, routeTable } from '../helpers/route-table.js'
import { expectStatus, launchBrowser, newPage, type RunningPlinth, type Served, serve, startPlinth } from './harness.js'

/**
 * A page of another origin (another port of 127.0.0.1: the same site, as a developer's other local
 * servers are) tries every request a page may send without asking against every sandbox route that
 * no Key or Bearer credential guards, in Chromium: HTML forms (urlencoded, multipart, text/plain),
 * `fetch` in `no-cors` mode with no body, a text/plain body, an urlencoded and a multipart body,
 * a CORS `fetch` for the methods no-cors refuses, and an image for every sandbox read (the payment
 * listings apply approval windows that fell due). The database is the same afterwards, and the
 * server's log shows every request reached it and was refused (docs/security.md).
 */
describe('a page of another origin against the sandbox API, in Chromium', () => {
  let plinth: RunningPlinth
  let site: Served
  let browser: Browser
  const lines: Array<{ route?: string; status?: number; msg?: string; method?: string }> = []

  before(async () => {
    plinth = await startPlinth({
      logStream: {
        write: (line: string) => {
          lines.push(JSON.parse(line) as (typeof lines)[number])
        },
      },
    })
    site = await serve({ '/': '<!doctype html><title>another origin</title><iframe name="sink"></iframe>' })
    browser = await launchBrowser()
  })
  after(async () => {
    await browser?.close()
    await site?.close()
    await plinth?.close()
  })

  it('changes nothing whatever the page sends', async () => {
    // Something for every route to act on: an app with a user, a snapshot, a fault, and a
    // user-to-app payment whose approval window has passed (a listing would cancel it).
    const app = await plinth.createApp('target')
    const user = await plinth.createUser()
    const { accessToken } = expectStatus(
      await plinth.api<{ accessToken: string }>('POST', `/sandbox/apps/${app.app_id}/authenticate`, {
        body: { user_id: user.user_id, scopes: ['username', 'payments'] },
      }),
      200,
      'authenticate',
    )
    const payment = expectStatus(
      await plinth.api<{ identifier: string }>('POST', '/v2/client/payments', {
        token: accessToken,
        body: { amount: 1, memo: 'due', metadata: {} },
      }),
      201,
      'payment',
    )
    expectStatus(await plinth.api('POST', '/sandbox/snapshots', { body: { name: 'snap' } }), 201, 'snapshot')
    const fault = expectStatus(
      await plinth.api<{ id: string }>('POST', '/sandbox/faults', {
        body: { app_id: app.app_id, effect: { status: 500 }, times: 1 },
      }),
      201,
      'fault',
    )
    await plinth.advanceClock(120)

    const operations = await routeTable(plinth.platform)
    const values = {
      app_id: app.app_id,
      user_id: user.user_id,
      key_id: 'key_x',
      name: 'snap',
      fault_id: fault.id,
      payment_id: payment.identifier,
      adId: 'ad_x',
      id: 'x',
    }
    const sandboxRoutes = operations.filter((op) => op.auth !== 'key' && op.auth !== 'token' && !op.path.startsWith('/ledger'))
    const writes = sandboxRoutes.filter((op) => op.method !== 'GET' && op.method !== 'HEAD')
    const reads = sandboxRoutes.filter((op) => op.method === 'GET' && op.auth === 'admin')
    assert.ok(writes.length >= 25 && reads.length >= 10, `${writes.length} writes, ${reads.length} reads`)
    const targets = {
      writes: writes.map((op) => ({ method: op.method, url: `${plinth.url}${fill(op, values)}`, what: label(op) })),
      reads: reads.map((op) => ({ url: `${plinth.url}${fill(op, values)}`, what: label(op) })),
    }

    const before = await stableState(plinth.platform.db)
    const seen = lines.length
    const { page } = await newPage(browser)
    await page.goto(`${site.url}/`)
    const sent = (await page.evaluate(`(async () => {
      const targets = ${JSON.stringify(targets)}
      const body = '{"name":"evil","advance_seconds":3600,"username":"evil","seed":"x","user_id":"x","scopes":["payments"]}'
      let count = 0
      const submitForm = (url, enctype) => new Promise((resolve) => {
        const sink = document.querySelector('iframe[name=sink]')
        const form = document.createElement('form')
        form.method = 'POST'
        form.action = url
        form.enctype = enctype
        form.target = 'sink'
        const field = document.createElement('input')
        field.name = 'name'
        field.value = enctype === 'text/plain' ? '{"name":"evil","x":"' : 'evil'
        form.append(field)
        document.body.append(form)
        sink.addEventListener('load', () => resolve(), { once: true })
        form.submit()
        count++
      })
      const noCors = async (url, init) => {
        count++
        try { await fetch(url, { mode: 'no-cors', credentials: 'include', ...init }) } catch {}
      }
      const multipart = () => { const data = new FormData(); data.append('name', 'evil'); return data }
      for (const target of targets.writes) {
        if (target.method === 'POST') {
          for (const enctype of ['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain']) await submitForm(target.url, enctype)
          await noCors(target.url, { method: 'POST' })
          await noCors(target.url, { method: 'POST', body: body })
          await noCors(target.url, { method: 'POST', body: body, headers: { 'Content-Type': 'text/plain' } })
          await noCors(target.url, { method: 'POST', body: new URLSearchParams({ name: 'evil' }) })
          await noCors(target.url, { method: 'POST', body: multipart() })
        } else {
          // no-cors allows GET, HEAD and POST only: the page can but ask, and the preflight is refused.
          try { await fetch(target.url, { method: target.method, body: body, headers: { 'Content-Type': 'text/plain' } }) } catch {}
        }
      }
      for (const target of targets.reads) {
        await new Promise((resolve) => {
          const image = new Image()
          image.onload = image.onerror = () => resolve()
          image.src = target.url
          count++
        })
      }
      return count
    })()`)) as number
    await page.context().close()
    // Eight forms for each POST route (three HTML forms, five no-cors fetches), an image for each read.
    const posts = writes.filter((op) => op.method === 'POST').length
    assert.equal(sent, posts * 8 + reads.length)

    assert.equal(await stableState(plinth.platform.db), before, 'the database changed')
    // Every request the page sent reached Plinth and was refused there, not only hidden from the page.
    const answered = lines.slice(seen).filter((line) => line.msg === 'request completed' || line.msg === 'request errored')
    const preflights = answered.filter((line) => line.method === 'OPTIONS')
    const refused = answered.filter((line) => line.method !== 'OPTIONS')
    assert.equal(refused.length, sent, `sent ${sent}, Plinth answered ${refused.length}`)
    for (const line of refused) assert.equal(line.status, 403, JSON.stringify(line))
    // The methods no-cors refuses went no further than their preflight, which Plinth does not grant.
    assert.equal(preflights.length, writes.filter((op) => op.method !== 'POST').length)
    for (const line of preflights) assert.ok((line.status ?? 0) >= 400, JSON.stringify(line))

    // The payment whose window passed is still as it was: no listing cancelled it.
    const still = await plinth.platform.db
      .selectFrom('payments')
      .select('cancelled')
      .where('identifier', '=', payment.identifier)
      .executeTakeFirst()
    assert.equal(still?.cancelled, false)
  })
})
