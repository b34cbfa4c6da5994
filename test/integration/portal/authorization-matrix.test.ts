/**
 * The authorization matrix of the developer portal and the operator's console (docs/security.md,
 * "Authorization"): every /portal and /operator route of the OpenAPI document, called by each of
 * seven people, answers what the table says. A route the table does not list fails the test, so
 * a new route cannot ship without its row.
 *
 * Outcomes: 401 (no live session), 403 (forbidden: a role missing, a member doing an owner's
 * act), 404 (app_not_found: an app the caller is no member of, not shown to exist), or 'ok': the
 * request passed authorization (whatever the act then answered: 2xx, or a 4xx about the input,
 * such as a payment that does not exist, never 401, 403 or app_not_found).
 */
import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { type AccountBrowser, accountBrowser, adminOf, signedUp } from '../../helpers/accounts.js'
import { usePlatform } from '../../helpers/platform.js'

const PEOPLE = ['anonymous', 'suspended', 'user', 'stranger', 'operator', 'member', 'owner'] as const
type Person = (typeof PEOPLE)[number]
type Outcome = 401 | 403 | 404 | 'ok'
type Row = Record<Person, Outcome>

const signedOut = { anonymous: 401, suspended: 401 } as const
/** Any developer: their own list, registering. */
const DEVELOPER: Row = { ...signedOut, user: 403, stranger: 'ok', operator: 403, member: 'ok', owner: 'ok' }
/** A member of the app (the owner too). */
const MEMBER: Row = { ...signedOut, user: 403, stranger: 404, operator: 403, member: 'ok', owner: 'ok' }
/** The app's owner only. */
const OWNER: Row = { ...MEMBER, member: 403 }
/** Operators only. */
const OPERATOR: Row = { ...signedOut, user: 403, stranger: 403, operator: 'ok', member: 403, owner: 403 }
/** Taking the developer role oneself: refused to all under the default policy (PLINTH_DEVELOPER_SIGNUP=operator). */
const SELF_SERVICE: Row = { ...signedOut, user: 403, stranger: 403, operator: 403, member: 403, owner: 403 }

interface Case {
  row: Row
  body?: Record<string, unknown>
}

describe('the portal and operator authorization matrix', () => {
  const platform = usePlatform({ mode: 'production' })
  const app = () => platform.app
  const admin = () => adminOf(platform)
  const browsers = {} as Record<Person, AccountBrowser>
  let appId = ''
  let spare = ''
  let throwawayUser = ''
  let throwawayApp = ''

  const developer = async () => {
    const user = await signedUp(app)
    await admin().grant(user.username, 'developer')
    return user
  }

  before(async () => {
    const owner = await developer()
    const created = await owner.call('POST', '/portal/apps', { name: 'Matrix', url: 'http://127.0.0.1:9/' })
    appId = String((created.body.app as { app_id: string }).app_id)
    const member = await developer()
    const spareDeveloper = await developer()
    spare = spareDeveloper.username
    for (const name of [member.username, spare]) {
      assert.equal((await owner.call('POST', `/portal/apps/${appId}/members`, { username: name })).status, 201)
    }
    const operator = await signedUp(app)
    await admin().grant(operator.username, 'operator')
    const suspended = await developer()
    assert.equal((await owner.call('POST', `/portal/apps/${appId}/members`, { username: suspended.username })).status, 201)
    assert.equal((await operator.call('POST', `/operator/users/${suspended.username}/suspend`, { reason: 'matrix' })).status, 200)
    throwawayUser = (await signedUp(app)).username
    throwawayApp = (await admin().createApp({ owner: spare, name: 'Throwaway', url: 'https://throwaway.example/' })).app_id
    Object.assign(browsers, {
      anonymous: accountBrowser(app),
      suspended,
      user: await signedUp(app),
      stranger: await developer(),
      operator,
      member,
      owner,
    })
  })

  /** The matrix: `METHOD path` as in the OpenAPI document, and its row (with a valid body, so input checks cannot hide a refusal). */
  const matrix = (): Record<string, Case> => ({
    'post /portal/developer': { row: SELF_SERVICE },
    'get /portal/me': { row: { ...signedOut, user: 'ok', stranger: 'ok', operator: 'ok', member: 'ok', owner: 'ok' } },
    'post /portal/apps': { row: DEVELOPER, body: { name: 'Another', url: 'https://another.example/' } },
    'get /portal/apps': { row: DEVELOPER },
    'get /portal/apps/{app_id}': { row: MEMBER },
    'patch /portal/apps/{app_id}': { row: MEMBER, body: { description: 'edited' } },
    'post /portal/apps/{app_id}/verify': { row: MEMBER },
    'get /portal/apps/{app_id}/wallet': { row: MEMBER },
    'get /portal/apps/{app_id}/keys': { row: MEMBER },
    'post /portal/apps/{app_id}/keys': { row: OWNER, body: { name: 'matrix' } },
    'delete /portal/apps/{app_id}/keys/{key_id}': { row: OWNER },
    'get /portal/apps/{app_id}/members': { row: MEMBER },
    'post /portal/apps/{app_id}/members': { row: OWNER, body: { username: spare } },
    'delete /portal/apps/{app_id}/members/{username}': { row: OWNER },
    'post /portal/apps/{app_id}/owner': { row: OWNER, body: { username: 'nobody_here' } },
    'get /portal/apps/{app_id}/users/{uid}/blocking': { row: MEMBER },
    'get /portal/apps/{app_id}/ads': { row: MEMBER },
    'get /portal/apps/{app_id}/notifications': { row: MEMBER },
    'get /portal/apps/{app_id}/requests': { row: MEMBER },
    'get /portal/apps/{app_id}/requests/{id}': { row: MEMBER },
    'get /portal/apps/{app_id}/payments': { row: MEMBER },
    'get /portal/apps/{app_id}/payments/{payment_id}': { row: MEMBER },
    'post /portal/apps/{app_id}/payments/{payment_id}/cancel': { row: MEMBER },
    'post /portal/apps/{app_id}/payments/{payment_id}/complete': { row: MEMBER, body: { txid: 'a'.repeat(64) } },
    'get /portal/apps/{app_id}/overview': { row: MEMBER },
    'get /portal/apps/{app_id}/users': { row: MEMBER },
    'get /portal/apps/{app_id}/payments/export': { row: MEMBER },
    'get /portal/apps/{app_id}/requests/export': { row: MEMBER },
    'get /portal/apps/{app_id}/requests/{id}/curl': { row: MEMBER },
    'post /portal/apps/{app_id}/listing/request': { row: OWNER },
    'post /portal/apps/{app_id}/network': { row: OWNER, body: { network: 'Pi Network' } },
    'get /operator/listings': { row: OPERATOR },
    'post /operator/apps/{app_id}/listing/approve': { row: OPERATOR },
    'post /operator/apps/{app_id}/listing/reject': { row: OPERATOR, body: { reason: 'matrix' } },
    'get /operator/users': { row: OPERATOR },
    'get /operator/users/{username}': { row: OPERATOR },
    'post /operator/users/{username}/suspend': { row: OPERATOR, body: { reason: 'matrix' } },
    'post /operator/users/{username}/restore': { row: OPERATOR, body: { reason: 'matrix' } },
    'post /operator/users/{username}/roles': { row: OPERATOR, body: { role: 'developer', grant: true } },
    'post /operator/users/{username}/password-reset': { row: OPERATOR },
    'get /operator/apps': { row: OPERATOR },
    'get /operator/apps/{app_id}': { row: OPERATOR },
    'post /operator/apps/{app_id}/suspend': { row: OPERATOR, body: { reason: 'matrix' } },
    'post /operator/apps/{app_id}/restore': { row: OPERATOR, body: { reason: 'matrix' } },
    'post /operator/issue': { row: OPERATOR, body: { target: throwawayUser, amount: '1', reason: 'matrix' } },
    'post /operator/issue/check': { row: OPERATOR, body: { target: throwawayUser, amount: '1', reason: 'matrix' } },
    'get /operator/ledger/check': { row: OPERATOR },
    'get /operator/approvals': { row: OPERATOR },
    'post /operator/approvals/{approval_id}/approve': { row: OPERATOR },
    'post /operator/approvals/{approval_id}/reject': { row: OPERATOR, body: { reason: 'matrix' } },
    'get /operator/audit': { row: OPERATOR },
    'get /operator/audit/export': { row: OPERATOR },
    'get /operator/audit/verify': { row: OPERATOR },
    'get /operator/audit/head': { row: OPERATOR },
    'get /operator/support/payments': { row: OPERATOR },
    'get /operator/support/payments/{payment_id}': { row: OPERATOR },
    'get /operator/support/users': { row: OPERATOR },
    'get /operator/support/apps': { row: OPERATOR },
  })

  it('lists every /portal and /operator route of the OpenAPI document, and no other', async () => {
    const document = (await app().inject({ method: 'GET', url: '/v2/openapi.json' })).json() as { paths: Record<string, object> }
    const routes = Object.entries(document.paths)
      .filter(([path]) => path.startsWith('/portal') || path.startsWith('/operator'))
      .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method} ${path}`))
      .sort()
    assert.deepEqual(routes, Object.keys(matrix()).sort(), 'a route without a row in the matrix (or a row without a route)')
  })

  it('every route answers each person as its row says', async () => {
    const failures: string[] = []
    for (const [route, { row, body }] of Object.entries(matrix())) {
      const [method = '', template = ''] = route.split(' ')
      // Operator routes act on throwaways; portal routes on the matrix app. Payment and key ids name nothing: an allowed caller gets a 404 about them.
      const onOperator = template.startsWith('/operator')
      const url = template
        .replace('{app_id}', onOperator ? throwawayApp : appId)
        .replace('{username}', onOperator ? throwawayUser : spare)
        .replace('{key_id}', 'key_none')
        .replace('{payment_id}', 'pay_none')
        .replace('{uid}', 'uid-none')
        .replace('{approval_id}', 'apr_none')
        .replace('{id}', '1')
      // The least privileged first, the owner last: an owner's act cannot change what another sees.
      for (const person of PEOPLE) {
        const answer = await browsers[person].call(method.toUpperCase() as 'GET', url, method === 'get' ? undefined : (body ?? {}))
        const expected = row[person]
        const got: Outcome | number =
          answer.status === 401 || answer.status === 403
            ? answer.status
            : answer.status === 404 && answer.body.error === 'app_not_found'
              ? 404
              : answer.status < 500
                ? 'ok'
                : answer.status
        if (got !== expected) failures.push(`${route} as ${person}: expected ${expected}, got ${answer.status} ${answer.body.error ?? ''}`)
        if (answer.status === 401) assert.equal(answer.body.error, 'session_required', `${route} as ${person}`)
        if (answer.status === 403) assert.equal(answer.body.error, 'forbidden', `${route} as ${person}`)
      }
    }
    assert.deepEqual(failures, [])
  })
})
