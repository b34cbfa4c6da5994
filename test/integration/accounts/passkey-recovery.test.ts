/**
 * Passkeys and account recovery (docs/accounts.md, "Re-authentication" and "Recovery"): adding a
 * passkey needs a re-authentication within five minutes; a used reset link removes every passkey;
 * a password change and sign-out everywhere keep only the passkeys the person names; a newer reset
 * link, a password change and a completed reset end every older link; passkeys are renamed.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { accountLimits } from '../../../src/config.js'
import { sha256Hex } from '../../../src/lib/crypto.js'
import { type AccountBrowser, accountBrowser, adminOf, GOOD_PASSWORD, signedUp } from '../../helpers/accounts.js'
import { assertError } from '../../helpers/payments-client.js'
import { usePlatform } from '../../helpers/platform.js'
import { softPasskey } from '../../helpers/webauthn.js'

const NEW_PASSWORD = 'ember kettle glacier thimble'

describe('passkeys and account recovery (production)', () => {
  const limits = { ...accountLimits(), signupPerAddress: { attempts: 100_000, windowSeconds: 3600 } }
  const platform = usePlatform({ mode: 'production', accounts: limits })
  const app = () => platform.app
  const host = { host: 'plinth.test' }
  const origin = 'http://plinth.test'

  type Key = ReturnType<typeof softPasskey>
  /** Registers a new software passkey on the browser's account (its session must be freshly re-authenticated). */
  const addPasskey = async (browser: AccountBrowser, name = 'Laptop'): Promise<Key> => {
    const key = softPasskey({ rpID: 'plinth.test', origin })
    const options = await browser.call('POST', '/account/passkeys/options', undefined, host)
    assert.equal(options.status, 200, JSON.stringify(options.body))
    const registered = await browser.call(
      'POST',
      '/account/passkeys/verify',
      { response: key.register(String(options.body.challenge)), name },
      host,
    )
    assert.equal(registered.status, 201, JSON.stringify(registered.body))
    return key
  }
  /** A passkey sign-in in a new browser: its answer. */
  const signinWith = async (key: Key) => {
    const browser = accountBrowser(app)
    const options = await browser.call('POST', '/account/signin/passkey/options', undefined, host)
    assert.equal(options.status, 200)
    const answer = await browser.call(
      'POST',
      '/account/signin/passkey/verify',
      { response: key.assert(String(options.body.challenge)) },
      host,
    )
    return Object.assign(browser, { answer })
  }
  const operator = async () => {
    const op = await signedUp(app)
    await adminOf(platform).grant(op.username, 'operator')
    return op
  }
  const resetLink = async (op: AccountBrowser, username: string) => {
    const link = await op.call('POST', `/operator/users/${username}/password-reset`)
    assert.equal(link.status, 201, JSON.stringify(link.body))
    return String(link.body.url).split('#/reset/')[1] ?? ''
  }
  /** Makes the session's last re-authentication older than the five-minute window. */
  const staleReauthentication = async (userId: string) => {
    await platform.db
      .updateTable('account_sessions')
      .set({ reauthenticated_at: sql<Date>`now() - interval '301 seconds'` })
      .where('user_id', '=', userId)
      .execute()
  }
  const passkeyNames = async (browser: AccountBrowser) =>
    ((await browser.call('GET', '/account/passkeys')).body.passkeys as Array<{ name: string }>).map((p) => p.name)

  describe('recovery and the panic buttons', () => {
    it('a used reset link removes every passkey: the one an attacker added signs in no more', async () => {
      const user = await signedUp(app)
      const attackers = await addPasskey(user, 'Attacker')
      const users = await addPasskey(user, 'Phone')
      assert.equal((await signinWith(attackers)).answer.status, 200, 'it works before the recovery')
      const token = await resetLink(await operator(), user.username)
      const recovered = accountBrowser(app)
      const used = await recovered.call('POST', '/account/password-reset', { token, new_password: NEW_PASSWORD })
      assert.equal(used.status, 200, JSON.stringify(used.body))
      assertError((await signinWith(attackers)).answer, 401, 'invalid_credentials')
      assertError((await signinWith(users)).answer, 401, 'invalid_credentials')
      assert.deepEqual(await passkeyNames(recovered), [])
      const count = await platform.db
        .selectFrom('account_passkeys')
        .select(sql<number>`count(*)::int`.as('n'))
        .where('user_id', '=', String(used.body.user_id))
        .executeTakeFirstOrThrow()
      assert.equal(count.n, 0)
      const audited = (await adminOf(platform).auditTrail(20)).records.find(
        (r) => r.action === 'reset-password' && r.target === user.username,
      )
      assert.equal(audited?.details.passkeys_removed, 2, 'the audit record says how many passkeys went')
      // The recovered session counts as re-authenticated: the person adds their passkey again at once.
      await addPasskey(recovered, 'Phone again')
      assert.deepEqual(await passkeyNames(recovered), ['Phone again'])
    })

    it('a password change removes every passkey but those the person keeps', async () => {
      const user = await signedUp(app)
      const attackers = await addPasskey(user, 'Attacker')
      const users = await addPasskey(user, 'Phone')
      const changed = await user.call('POST', '/account/password', {
        current_password: GOOD_PASSWORD,
        new_password: NEW_PASSWORD,
        keep_passkeys: [users.id],
      })
      assert.equal(changed.status, 200, JSON.stringify(changed.body))
      assertError((await signinWith(attackers)).answer, 401, 'invalid_credentials')
      assert.equal((await signinWith(users)).answer.status, 200, 'the kept passkey still signs in')
      assert.deepEqual(await passkeyNames(user), ['Phone'])
      // Named nothing: every passkey goes.
      await user.call('POST', '/account/password', { current_password: NEW_PASSWORD, new_password: GOOD_PASSWORD })
      assertError((await signinWith(users)).answer, 401, 'invalid_credentials')
    })

    it('sign-out everywhere removes every passkey but those the person keeps; another account’s id keeps nothing', async () => {
      const user = await signedUp(app)
      const attackers = await addPasskey(user, 'Attacker')
      const users = await addPasskey(user, 'Phone')
      const other = await signedUp(app)
      const others = await addPasskey(other, 'Theirs')
      const ended = await user.call('POST', '/account/signout-everywhere', { keep_passkeys: [users.id, others.id] })
      assert.equal(ended.status, 200, JSON.stringify(ended.body))
      assertError((await signinWith(attackers)).answer, 401, 'invalid_credentials')
      const back = await signinWith(users)
      assert.equal(back.answer.status, 200, 'the kept passkey still signs in')
      assert.equal((await signinWith(others)).answer.status, 200, 'another account’s passkey is untouched')
      // No body at all (the page of an older version): every passkey goes.
      assert.equal((await back.call('POST', '/account/signout-everywhere')).status, 200)
      assertError((await signinWith(users)).answer, 401, 'invalid_credentials')
    })
  })

  describe('re-authentication', () => {
    it('adding a passkey needs a re-authentication within five minutes: 403 reauthentication_required, then the password renews it', async () => {
      const user = await signedUp(app)
      await staleReauthentication(String((await user.account()).body.user_id))
      const key = softPasskey({ rpID: 'plinth.test', origin })
      assertError(await user.call('POST', '/account/passkeys/options', undefined, host), 403, 'reauthentication_required')
      assertError(await user.call('POST', '/account/reauthenticate', { password: 'not the password at all' }), 401, 'invalid_credentials')
      const renewed = await user.call('POST', '/account/reauthenticate', { password: GOOD_PASSWORD })
      assert.equal(renewed.status, 200, JSON.stringify(renewed.body))
      const until = Date.parse(String(renewed.body.reauthenticated_until))
      assert.ok(Math.abs(until - Date.now() - 300_000) < 60_000, `about five minutes from now: ${renewed.body.reauthenticated_until}`)
      const options = await user.call('POST', '/account/passkeys/options', undefined, host)
      assert.equal(options.status, 200)
      // The window closes between the options and the answer: the answer is refused too, and nothing is stored.
      await staleReauthentication(String((await user.account()).body.user_id))
      const late = await user.call('POST', '/account/passkeys/verify', { response: key.register(String(options.body.challenge)) }, host)
      assertError(late, 403, 'reauthentication_required')
      assert.deepEqual(await passkeyNames(user), [])
    })

    it('an existing passkey of the account re-authenticates; another account’s passkey or a replay does not', async () => {
      const user = await signedUp(app)
      const key = await addPasskey(user)
      const userId = String((await user.account()).body.user_id)
      await staleReauthentication(userId)
      const stranger = await signedUp(app)
      const strangers = await addPasskey(stranger)

      const refused = await user.call('POST', '/account/reauthenticate/passkey/options', undefined, host)
      assert.equal(refused.status, 200)
      assert.deepEqual(
        (refused.body.allowCredentials as Array<{ id: string }>).map((c) => c.id),
        [key.id],
        'only the account’s own passkeys are offered',
      )
      assertError(
        await user.call(
          'POST',
          '/account/reauthenticate/passkey/verify',
          { response: strangers.assert(String(refused.body.challenge)) },
          host,
        ),
        401,
        'invalid_credentials',
      )
      // A sign-in challenge is not a re-authentication challenge.
      const signin = await accountBrowser(app).call('POST', '/account/signin/passkey/options', undefined, host)
      assertError(
        await user.call('POST', '/account/reauthenticate/passkey/verify', { response: key.assert(String(signin.body.challenge)) }, host),
        401,
        'invalid_credentials',
      )
      assertError(await user.call('POST', '/account/passkeys/options', undefined, host), 403, 'reauthentication_required')

      const options = await user.call('POST', '/account/reauthenticate/passkey/options', undefined, host)
      const assertion = key.assert(String(options.body.challenge))
      const done = await user.call('POST', '/account/reauthenticate/passkey/verify', { response: assertion }, host)
      assert.equal(done.status, 200, JSON.stringify(done.body))
      assertError(
        await user.call('POST', '/account/reauthenticate/passkey/verify', { response: assertion }, host),
        401,
        'invalid_credentials',
      )
      await addPasskey(user, 'Second')
      assert.deepEqual(await passkeyNames(user), ['Laptop', 'Second'])
    })

    it('a passkey sign-in counts as a re-authentication, and a stamp is the session’s own', async () => {
      const user = await signedUp(app)
      const key = await addPasskey(user)
      await staleReauthentication(String((await user.account()).body.user_id))
      const viaPasskey = await signinWith(key)
      assert.equal(viaPasskey.answer.status, 200)
      await addPasskey(viaPasskey, 'From the passkey session')
      assertError(await user.call('POST', '/account/passkeys/options', undefined, host), 403, 'reauthentication_required')
    })
  })

  describe('reset links', () => {
    it('a newer link ends every older one', async () => {
      const op = await operator()
      const user = await signedUp(app)
      const first = await resetLink(op, user.username)
      const second = await resetLink(op, user.username)
      assertError(
        await accountBrowser(app).call('POST', '/account/password-reset', { token: first, new_password: NEW_PASSWORD }),
        400,
        'invalid_reset_link',
      )
      assert.equal(
        (await accountBrowser(app).call('POST', '/account/password-reset', { token: second, new_password: NEW_PASSWORD })).status,
        200,
      )
    })

    it('a password change ends every link of the account', async () => {
      const op = await operator()
      const user = await signedUp(app)
      const link = await resetLink(op, user.username)
      const changed = await user.call('POST', '/account/password', { current_password: GOOD_PASSWORD, new_password: NEW_PASSWORD })
      assert.equal(changed.status, 200)
      assertError(
        await accountBrowser(app).call('POST', '/account/password-reset', { token: link, new_password: GOOD_PASSWORD }),
        400,
        'invalid_reset_link',
      )
      assert.equal((await accountBrowser(app).signin(user.username, NEW_PASSWORD)).status, 200)
    })

    it('a completed reset ends every other link of the account', async () => {
      const user = await signedUp(app)
      const first = await resetLink(await operator(), user.username)
      // A second live link, as links issued before this rule could coexist: written directly.
      const second = 's'.repeat(43)
      await platform.db
        .insertInto('password_resets')
        .values({
          token_hash: sha256Hex(second),
          user_id: String((await user.account()).body.user_id),
          created_by: 'test',
          expires_at: sql<Date>`now() + interval '1 hour'`,
        })
        .execute()
      assert.equal(
        (await accountBrowser(app).call('POST', '/account/password-reset', { token: second, new_password: NEW_PASSWORD })).status,
        200,
      )
      assertError(
        await accountBrowser(app).call('POST', '/account/password-reset', { token: first, new_password: GOOD_PASSWORD }),
        400,
        'invalid_reset_link',
      )
      assert.equal((await accountBrowser(app).signin(user.username, NEW_PASSWORD)).status, 200)
    })
  })

  describe('the passkey list', () => {
    it('names each passkey with its creation and last use; its owner renames it, nobody else', async () => {
      const user = await signedUp(app)
      const key = await addPasskey(user, 'Laptop')
      const before = (await user.call('GET', '/account/passkeys')).body.passkeys as Array<Record<string, unknown>>
      assert.equal(before[0]?.last_used_at, null)
      assert.ok(Math.abs(Date.parse(String(before[0]?.created_at)) - Date.now()) < 60_000)
      assert.equal((await signinWith(key)).answer.status, 200)
      const after = (await user.call('GET', '/account/passkeys')).body.passkeys as Array<Record<string, unknown>>
      assert.ok(Math.abs(Date.parse(String(after[0]?.last_used_at)) - Date.now()) < 60_000, 'last use recorded')

      const renamed = await user.call('PATCH', `/account/passkeys/${key.id}`, { name: '  Work laptop  ' })
      assert.equal(renamed.status, 200, JSON.stringify(renamed.body))
      assert.equal(renamed.body.name, 'Work laptop')
      assert.deepEqual(await passkeyNames(user), ['Work laptop'])
      const intruder = await signedUp(app)
      assertError(await intruder.call('PATCH', `/account/passkeys/${key.id}`, { name: 'Mine now' }), 404, 'not_found')
      assertError(await user.call('PATCH', `/account/passkeys/${key.id}`, { name: '   ' }), 400, 'invalid_arguments')
      assertError(await user.call('PATCH', `/account/passkeys/${key.id}`, { name: 'x'.repeat(61) }), 400, 'invalid_arguments')
      assertError(await accountBrowser(app).call('PATCH', `/account/passkeys/${key.id}`, { name: 'Anon' }), 401, 'session_required')
      assert.deepEqual(await passkeyNames(user), ['Work laptop'])
      const audit = await adminOf(platform).auditTrail(20)
      const record = audit.records.find((r) => r.action === 'rename-passkey' && r.target === user.username)
      assert.ok(record !== undefined, 'the rename is audited')
      // Removal needs a live session only, not a fresh re-authentication (docs/accounts.md).
      await staleReauthentication(String((await user.account()).body.user_id))
      assert.equal((await user.call('DELETE', `/account/passkeys/${key.id}`)).status, 200)
      assertError((await signinWith(key)).answer, 401, 'invalid_credentials')
    })
  })
})
