/**
 * The portal and the operator's console from elsewhere (docs/security.md, "Requests from other
 * sites"): every /portal and /operator route of the OpenAPI document, called with the session
 * cookie of someone who holds every role, as a page of another site or another port would send
 * it, is 403 cross_site_request; a state-changing one with a body a form could send is 415; a
 * forged Host is 421 on a listening server. Nothing is read or changed by any of them.
 */
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { adminOf, SESSION_COOKIE, signedUp } from '../../helpers/accounts.js'
import { stableState, startPlatform, type TestPlatform } from '../../helpers/platform.js'
import { rawRequest } from '../../helpers/raw-http.js'

const FOREIGN: Array<Record<string, string>> = [
  { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
  { origin: 'http://localhost:9999', 'sec-fetch-site': 'same-site' },
  { origin: 'https://evil.example' },
  { origin: 'null' },
]

describe('the portal and the operator’s console from another site', () => {
  let platform: TestPlatform
  let cookie = ''
  let appId = ''
  let routes: Array<{ method: string; url: string }> = []

  before(async () => {
    platform = await startPlatform({ mode: 'production' })
    const everyone = await signedUp(() => platform.app)
    await adminOf(platform).grant(everyone.username, 'developer')
    await adminOf(platform).grant(everyone.username, 'operator')
    const made = await everyone.call('POST', '/portal/apps', { name: 'Target', url: 'https://target.example/' })
    appId = String((made.body.app as { app_id: string }).app_id)
    cookie = `${SESSION_COOKIE}=${everyone.token}`
    const doc = (await platform.app.inject({ method: 'GET', url: '/v2/openapi.json' })).json() as { paths: Record<string, object> }
    routes = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith('/portal') || path.startsWith('/operator'))
      .flatMap(([path, operations]) =>
        Object.keys(operations).map((method) => ({
          method: method.toUpperCase(),
          url: path
            .replace('{app_id}', appId)
            .replace('{username}', everyone.username)
            .replace(/\{[a-z_]+\}/g, 'x'),
        })),
      )
  })
  after(async () => {
    await platform?.close()
  })

  it('answers every route 403 cross_site_request for a page of another site or port, and changes nothing', async () => {
    assert.ok(routes.length >= 35, `${routes.length} routes`)
    const state = await stableState(platform.db)
    for (const { method, url } of routes) {
      for (const headers of FOREIGN) {
        const answer = await platform.app.inject({
          method: method as 'GET',
          url,
          headers: { ...headers, cookie, ...(method === 'GET' ? {} : { 'content-type': 'application/json' }) },
          ...(method === 'GET' ? {} : { payload: '{"reason":"x","username":"x","role":"operator","grant":true}' }),
        })
        assert.equal(answer.statusCode, 403, `${method} ${url} from ${JSON.stringify(headers)}: ${answer.body}`)
        assert.equal(answer.json().error, 'cross_site_request')
      }
    }
    // The session's last use aside, the database is as it was.
    const strip = (text: string) => text.replace(/"last_seen_at":"[^"]+"/g, '')
    assert.equal(strip(await stableState(platform.db)), strip(state))
  })

  it('takes only application/json on a state-changing route, even from the page itself: a form or text body is 415', async () => {
    // The account API's too (signing out everywhere would end this suite's session).
    for (const { method, url } of [...routes.filter((r) => r.method !== 'GET'), { method: 'POST', url: '/account/signout-everywhere' }]) {
      for (const type of ['application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data; boundary=x']) {
        const answer = await platform.app.inject({
          method: method as 'POST',
          url,
          headers: { cookie, 'sec-fetch-site': 'same-origin', 'content-type': type },
          // A JSON text: as text/plain, the /v2 routes would read it as JSON; these must not.
          payload: '{"reason":"x"}',
        })
        assert.equal(answer.statusCode, 415, `${method} ${url} as ${type}: ${answer.body}`)
      }
    }
    const still = await platform.app.inject({ method: 'GET', url: '/account', headers: { cookie, 'sec-fetch-site': 'same-origin' } })
    assert.equal(still.statusCode, 200, 'the session was not signed out')
  })

  it('refuses a forged Host (421) on a listening server before any session is read', async () => {
    await platform.app.listen({ port: 0, host: '127.0.0.1' })
    const port = (platform.app.server.address() as AddressInfo).port
    for (const { method, url } of routes.slice(0, 12)) {
      const answer = await rawRequest(
        port,
        `${method} ${url} HTTP/1.1\r\nHost: attacker.example\r\nCookie: ${cookie}\r\nSec-Fetch-Site: same-origin\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
      )
      assert.equal(answer.status, 421, `${method} ${url}`)
    }
  })
})
