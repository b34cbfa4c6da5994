/**
 * Every answer of a session route carries `Cache-Control: no-store` (docs/security.md,
 * "Responses"): each GET of /account, /portal and /operator in the OpenAPI document, answered to
 * its user, to someone without the role, and to nobody signed in. The route table drives it, so a
 * new route is covered as soon as it is documented.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { adminOf, signedUp } from '../../helpers/accounts.js'
import { usePlatform } from '../../helpers/platform.js'
import { fill, label, routeTable } from '../../helpers/route-table.js'

const SESSION_PREFIXES = ['/account', '/portal/', '/operator/']

describe('Cache-Control: no-store on every GET of a session route', () => {
  const platform = usePlatform({ mode: 'production' })
  const app = () => platform.app

  it('answers each GET of /account, /portal and /operator with no-store: to its user, to a user without the role, signed out', async () => {
    const routes = (await routeTable(platform)).filter(
      (op) => op.method === 'GET' && SESSION_PREFIXES.some((prefix) => op.path === prefix || op.path.startsWith(prefix)),
    )
    const prefixes = new Set(routes.map((op) => op.path.split('/')[1]))
    assert.deepEqual([...prefixes].sort(), ['account', 'operator', 'portal'])
    assert.ok(routes.length >= 25, `${routes.length} GET routes`)

    const boss = await signedUp(app)
    await adminOf(platform).grant(boss.username, 'developer')
    await adminOf(platform).grant(boss.username, 'operator')
    const created = await boss.call('POST', '/portal/apps', { name: 'Cached', url: 'https://cached.example' })
    assert.equal(created.status, 201, JSON.stringify(created.body))
    const appId = (created.body.app as { app_id: string }).app_id
    const plain = await signedUp(app)
    const nobody = await signedUp(app)
    assert.equal((await nobody.call('POST', '/account/signout')).status, 200)

    const known: Record<string, string> = { app_id: appId, username: boss.username }
    const missing: string[] = []
    for (const op of routes) {
      const url = fill(op, known)
      // Routes naming an object this test has not made (a payment, a uid, a logged request) answer 404: its header counts too.
      const found = op.params.every((param) => param in known)
      for (const [who, browser, statuses] of [
        ['its user', boss, found ? [200] : [404]],
        // GET /portal/me needs no role: it says whom the request acts as.
        ['a user without the role', plain, op.path.startsWith('/account') || op.path === '/portal/me' ? (found ? [200] : [404]) : [403]],
        ['nobody signed in', nobody, [401]],
      ] as const) {
        const answer = await browser.call('GET', url)
        assert.ok(
          (statuses as readonly number[]).includes(answer.status),
          `${label(op)} to ${who}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`,
        )
        if (answer.headers['cache-control'] !== 'no-store') missing.push(`${label(op)} (${answer.status} to ${who})`)
      }
    }
    assert.deepEqual(missing, [])
  })
})
