/**
 * What keeps a session alive, and what a browser is told when it is over (docs/accounts.md,
 * "Sessions"): a background request (`X-Plinth-Background: 1`, the platform page's polls) is
 * answered but never counts as activity; a user's own request does. A 401 for a session that is
 * over says why (`reason`), to the browser holding its token only.
 *
 * The session's clock is moved by moving its stamps back, as if that many seconds had passed (the
 * idle timeout is computed in SQL from the stored `last_seen_at`, polledst the database's `now()`).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { accountLimits } from '../../../src/config.js'
import { sha256Hex } from '../../../src/lib/crypto.js'
import { type AccountBrowser, accountBrowser, adminOf, GOOD_PASSWORD, SESSION_COOKIE, signedUp } from '../../helpers/accounts.js'
import { assertError } from '../../helpers/payments-client.js'
import { usePlatform } from '../../helpers/platform.js'

const BACKGROUND = { 'x-plinth-background': '1' }
/** The `reason` of a 401 session_required. */
const reasonOf = (answer: Parameters<typeof assertError>[0]): unknown =>
  (assertError(answer, 401, 'session_required') as { reason?: unknown }).reason

describe('session activity (production)', () => {
  // A short idle limit: two minutes.
  const limits = { ...accountLimits(), sessionIdleSeconds: 120, signupPerAddress: { attempts: 100_000, windowSeconds: 3600 } }
  const platform = usePlatform({ mode: 'production', accounts: limits })
  const app = () => platform.app

  const tokenHash = (browser: AccountBrowser) => sha256Hex(browser.token as string)
  /** Moves the session's last use back: `secondsAgo` seconds before the database's now. */
  const lastUsed = (browser: AccountBrowser, secondsAgo: number) =>
    platform.db
      .updateTable('account_sessions')
      .set({ last_seen_at: sql<Date>`now() - make_interval(secs => ${secondsAgo})` })
      .where('token_hash', '=', tokenHash(browser))
      .execute()
  /** Seconds since the session's last recorded use. */
  const idleFor = async (browser: AccountBrowser): Promise<number> => {
    const row = await platform.db
      .selectFrom('account_sessions')
      .select(sql<string>`extract(epoch from now() - last_seen_at)::text`.as('idle'))
      .where('token_hash', '=', tokenHash(browser))
      .executeTakeFirstOrThrow()
    return Number(row.idle)
  }

  it('background polls never extend a session: it ends at its idle timeout while they go on; a user’s own request extends it', async () => {
    const polled = await signedUp(app)
    const used = await signedUp(app)
    // 100 of the 120 seconds gone for both.
    await lastUsed(polled, 100)
    await lastUsed(used, 100)
    for (const path of ['/account', '/account/sessions', '/account/payments?limit=50', '/account/apps']) {
      assert.equal((await polled.call('GET', path, undefined, BACKGROUND)).status, 200, path)
    }
    assert.ok((await idleFor(polled)) >= 100, 'the background polls recorded no use')
    // A write in the background (the page's notification centre asks for its own token) counts no more.
    const dev = await signedUp(app)
    await adminOf(platform).grant(dev.username, 'developer')
    const app0 = (await adminOf(platform).createApp({ owner: dev.username, name: 'Polled', url: 'https://polled.example/' })).app_id
    const consent = await polled.call('POST', `/account/apps/${app0}/authenticate`, { scopes: ['username'] })
    assert.equal(consent.status, 200, JSON.stringify(consent.body))
    await lastUsed(polled, 100)
    assert.equal((await polled.call('POST', `/account/apps/${app0}/authenticate`, { scopes: ['username'] }, BACKGROUND)).status, 200)
    assert.ok((await idleFor(polled)) >= 100, 'a background write recorded no use')
    // Only the value 1 marks a request background.
    assert.equal((await polled.call('GET', '/account', undefined, { 'x-plinth-background': 'yes' })).status, 200)
    assert.ok((await idleFor(polled)) < 10, 'another value is a user’s request')
    // The user's own request: the idle clock starts again.
    assert.equal((await used.account()).status, 200)
    assert.ok((await idleFor(used)) < 10, 'a user’s request recorded its use')

    // 121 seconds without a user's act: the polls are refused, with the reason.
    await lastUsed(polled, 121)
    await lastUsed(used, 60)
    const refused: { reason?: unknown; error_message: string } = assertError(
      await polled.call('GET', '/account', undefined, BACKGROUND),
      401,
      'session_required',
    )
    assert.equal(refused.reason, 'idle')
    assert.match(refused.error_message, /without activity/)
    assert.equal((await used.call('GET', '/account', undefined, BACKGROUND)).status, 200, 'the used session lives on')
    // A user's own request cannot bring an idle session back.
    assert.equal(reasonOf(await polled.account()), 'idle')
  })

  it('a refused session says why: signed out (everywhere, one session, a password change), expired, suspended', async () => {
    const user = await signedUp(app)
    const other = accountBrowser(app)
    assert.equal((await other.signin(user.username)).status, 200)
    const kept = user.token
    assert.equal((await user.call('POST', '/account/signout-everywhere')).status, 200)
    // The answer clears this browser's cookie; a copy of it (another tab's page) is told why.
    user.use(kept)
    for (const browser of [user, other]) {
      const refused: { reason?: unknown; error_message: string } = assertError(
        await browser.call('GET', '/account', undefined, BACKGROUND),
        401,
        'session_required',
      )
      assert.equal(refused.reason, 'signed_out')
      assert.match(refused.error_message, /signed out/)
    }

    const ended = await signedUp(app)
    const elsewhere = accountBrowser(app)
    await elsewhere.signin(ended.username)
    const sessions = (await elsewhere.call('GET', '/account/sessions')).body.sessions as Array<{ id: string; current: boolean }>
    const first = sessions.find((s) => !s.current)
    assert.ok(first !== undefined)
    assert.equal((await elsewhere.call('DELETE', `/account/sessions/${first.id}`)).status, 200)
    assert.equal(reasonOf(await ended.account()), 'signed_out')

    const changer = await signedUp(app)
    const stale = accountBrowser(app)
    await stale.signin(changer.username)
    const changed = await changer.call('POST', '/account/password', {
      current_password: GOOD_PASSWORD,
      new_password: 'harbour pencil thistle onward',
    })
    assert.equal(changed.status, 200, JSON.stringify(changed.body))
    assert.equal(reasonOf(await stale.account()), 'signed_out')

    const old = await signedUp(app)
    await platform.db
      .updateTable('account_sessions')
      .set({ expires_at: sql<Date>`now() - interval '1 second'` })
      .where('token_hash', '=', tokenHash(old))
      .execute()
    const expired: { reason?: unknown; error_message: string } = assertError(await old.account(), 401, 'session_required')
    assert.equal(expired.reason, 'expired')
    assert.match(expired.error_message, /time limit/)

    // Suspended through the operator's console: the user's open page learns it at its next poll.
    const operator = await signedUp(app)
    await adminOf(platform).grant(operator.username, 'operator')
    const suspended = await signedUp(app)
    const suspend = await operator.call('POST', `/operator/users/${suspended.username}/suspend`, { reason: 'fraud report' })
    assert.equal(suspend.status, 200, JSON.stringify(suspend.body))
    const refused: { reason?: unknown; error_message: string } = assertError(
      await suspended.call('GET', '/account', undefined, BACKGROUND),
      401,
      'session_required',
    )
    assert.equal(refused.reason, 'suspended')
    assert.match(refused.error_message, /suspended this account/)
    // Restored, the session stays ended: signed out, no longer suspended.
    assert.equal((await operator.call('POST', `/operator/users/${suspended.username}/restore`, { reason: 'cleared' })).status, 200)
    assert.equal(reasonOf(await suspended.account()), 'signed_out')
  })

  it('says nothing but "sign in" without a cookie, or for a token of no session', async () => {
    const nobody = accountBrowser(app)
    assert.equal(reasonOf(await nobody.account()), undefined)
    nobody.use('A'.repeat(43))
    assert.equal(reasonOf(await nobody.account()), undefined)
    const raw = await app().inject({ method: 'GET', url: '/account', headers: { cookie: `${SESSION_COOKIE}=${'b'.repeat(43)}` } })
    assert.equal(raw.statusCode, 401)
    assert.deepEqual(Object.keys(raw.json()).sort(), ['error', 'error_message'])
  })
})
