/** Production's accounts (docs/accounts.md): sign-up, sign-in, sessions, passwords, consent and the user's own payments. */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { verify } from '@node-rs/argon2'
import { sql } from 'kysely'
import { passwordPepper } from '../../../src/accounts/passwords.js'
import { accountLimits } from '../../../src/config.js'
import { sha256Hex } from '../../../src/lib/crypto.js'
import { accountBrowser, adminOf, cookieOf, freshName, GOOD_PASSWORD, SESSION_COOKIE, signedUp } from '../../helpers/accounts.js'
import { assertError } from '../../helpers/payments-client.js'
import { dumpDatabase, usePlatform } from '../../helpers/platform.js'
import { softPasskey } from '../../helpers/webauthn.js'

describe('accounts (production)', () => {
  // Sign-ups per address high: every injected request comes from 127.0.0.1 (the limit has a test of its own).
  const limits = {
    ...accountLimits(),
    signinPerAccount: { attempts: 3, windowSeconds: 900 },
    signupPerAddress: { attempts: 100_000, windowSeconds: 3600 },
  }
  const platform = usePlatform({ mode: 'production', accounts: limits })
  const app = () => platform.app

  describe('sign-up', () => {
    it('creates the account with an empty wallet and signs it in with a __Host- cookie that is HttpOnly, Secure, SameSite=Lax, Path=/', async () => {
      const browser = accountBrowser(app)
      const username = freshName('Ada')
      const answer = await browser.signup(username)
      assert.equal(answer.status, 201, JSON.stringify(answer.body))
      assert.equal(answer.body.username, username)
      assert.match(String(answer.body.user_id), /^usr_[0-9a-f]{32}$/)
      const setCookie = String(answer.headers['set-cookie'])
      assert.match(
        setCookie,
        new RegExp(`^${SESSION_COOKIE}=[A-Za-z0-9_-]{43}; Path=/; Max-Age=(4319[0-9]|43200); HttpOnly; Secure; SameSite=Lax$`),
      )
      assert.equal(answer.headers['cache-control'], 'no-store')

      const account = await browser.account()
      assert.equal(account.status, 200)
      assert.equal(account.headers['cache-control'], 'no-store')
      assert.equal(account.body.username, username)
      assert.deepEqual(account.body.roles, [])
      assert.equal(account.body.has_password, true)
      assert.deepEqual(account.body.consents, [])
      const wallet = account.body.wallet as { address: string; balance: string }
      assert.match(wallet.address, /^G[A-Z2-7]{55}$/)
      assert.equal(wallet.balance, '0.0000000', 'a production wallet starts empty')
    })

    it('keeps only hashes: no password and no session token in the database, and the password as argon2id', async () => {
      const browser = accountBrowser(app)
      const username = freshName()
      const password = 'quartz meadow tinsel falcon'
      assert.equal((await browser.signup(username, password)).status, 201)
      const token = browser.token as string
      const dump = await dumpDatabase(platform.db)
      assert.equal(dump.includes(password), false)
      assert.equal(dump.includes(token), false)
      assert.equal(dump.includes(sha256Hex(token)), true)
      const row = await platform.db.selectFrom('users').select('password_hash').where('username', '=', username).executeTakeFirstOrThrow()
      assert.match(row.password_hash ?? '', /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/)
      // Peppered: the hash verifies only with the key derived from PLINTH_SECRET_KEY, never stored.
      const stored = row.password_hash ?? ''
      assert.equal(await verify(stored, password, { secret: passwordPepper(platform.secretKey) }), true)
      assert.equal(await verify(stored, password), false)
      assert.equal(await verify(stored, password, { secret: passwordPepper(randomBytes(32)) }), false)
    })

    it('refuses weak, short, long and malformed passwords, and a taken username, creating nothing', async () => {
      const browser = accountBrowser(app)
      const username = freshName()
      for (const weak of ['password1234', 'qwertyuiop', `${username}123`, 'aaaaaaaaaaaaaaaa']) {
        const refused = assertError(await browser.signup(username, weak), 400, 'weak_password')
        assert.match(refused.error_message, /too easy to guess/)
      }
      assertError(await browser.signup(username, 'Xk9#q2!'), 400, 'invalid_arguments')
      assertError(await browser.signup(username, `${'lantern orbit '.repeat(9)}velvet quarry`), 400, 'invalid_arguments')
      assertError(await browser.signup(username, `lantern\u0000orbit velvet quarry`), 400, 'invalid_arguments')
      assertError(await browser.signup(username, `lantern\ud800orbit velvet quarry`), 400, 'invalid_arguments')
      assertError(await browser.signup(`${username}!`, GOOD_PASSWORD), 400, 'invalid_arguments')
      assertError(await browser.signup('ab', GOOD_PASSWORD), 400, 'invalid_arguments')
      const none = await platform.db.selectFrom('users').select('id').where('username_key', '=', username.toLowerCase()).execute()
      assert.deepEqual(none, [])
      assert.equal(browser.token, undefined)

      // 64 characters and 128 (code points, not UTF-16 units) are accepted.
      const long = 'ñ'.repeat(20) + ' lantern orbit velvet quarry '.repeat(4).slice(0, 108)
      assert.equal([...long].length, 128)
      assert.equal((await accountBrowser(app).signup(freshName(), long)).status, 201)
      const sixtyFour = 'Zebra-lantern-orbit-velvet-quarry-mosaic-tundra-pixel-harbor-ok!'
      assert.equal(sixtyFour.length, 64)
      assert.equal((await accountBrowser(app).signup(freshName(), sixtyFour)).status, 201)

      assert.equal((await browser.signup(username)).status, 201)
      assertError(await accountBrowser(app).signup(username.toUpperCase()), 409, 'username_taken')
    })
  })

  describe('sign-in', () => {
    it('answers an unknown user and a wrong password alike: 401 invalid_credentials, the same body, no cookie', async () => {
      const user = await signedUp(app)
      const wrong = await accountBrowser(app).signin(user.username, 'not the password at all')
      const unknown = await accountBrowser(app).signin(freshName('nobody'), 'not the password at all')
      for (const answer of [wrong, unknown]) {
        assertError(answer, 401, 'invalid_credentials')
        assert.equal(cookieOf(answer.headers), undefined)
      }
      assert.deepEqual(wrong.body, unknown.body)
      const right = await accountBrowser(app).signin(user.username.toUpperCase())
      assert.equal(right.status, 200)
      assert.equal(right.body.username, user.username)
    })

    it('a user without a password (made by an operator command or the sandbox) cannot sign in with any', async () => {
      const username = freshName()
      await platform.db
        .insertInto('users')
        .values({
          id: `usr_${'0'.repeat(24)}${Math.floor(Math.random() * 1e8)
            .toString()
            .padStart(8, '0')}`,
          username,
          username_key: username.toLowerCase(),
          wallet_address: 'G'.padEnd(56, 'A'),
          wallet_seed_enc: 'v1.x.y.z',
          created_at: new Date(),
        })
        .execute()
      assertError(await accountBrowser(app).signin(username, ''), 400, 'invalid_arguments')
      assertError(await accountBrowser(app).signin(username, GOOD_PASSWORD), 401, 'invalid_credentials')
      // Every field sent is checked: an unexpected one (a token, a second factor) is refused, not ignored.
      const extra = await accountBrowser(app).call('POST', '/account/signin', { username, password: GOOD_PASSWORD, otp: '123456' })
      assertError(extra, 400, 'invalid_arguments')
    })

    it('ends the session the browser held: the cookie after sign-in is always a new token (no session fixation)', async () => {
      const victim = await signedUp(app)
      // An attacker plants their own valid session in the victim's browser, then the victim signs in.
      const attacker = await signedUp(app)
      const planted = attacker.token as string
      victim.use(planted)
      const signedIn = await victim.signin(victim.username)
      assert.equal(signedIn.status, 200)
      const fresh = victim.token as string
      assert.notEqual(fresh, planted)
      assert.equal((await victim.account()).body.username, victim.username)
      // The planted session is over for the attacker too: nothing they hold follows the victim.
      assertError(await attacker.account(), 401, 'session_required')
      // A token the platform never issued is never taken up.
      const forged = accountBrowser(app)
      forged.use('A'.repeat(43))
      assertError(await forged.account(), 401, 'session_required')
      assert.equal((await forged.signin(victim.username)).status, 200)
      assert.notEqual(forged.token, 'A'.repeat(43))
    })

    it('throttles per account: past the limit 429 too_many_attempts with Retry-After, even for the right password; the count is in the database', async () => {
      const user = await signedUp(app)
      for (let i = 0; i < limits.signinPerAccount.attempts; i++) {
        assertError(await accountBrowser(app).signin(user.username, `wrong guess ${i}`), 401, 'invalid_credentials')
      }
      const blocked = assertError(await accountBrowser(app).signin(user.username), 429, 'too_many_attempts')
      assert.match(blocked.error_message, /try again in \d+ s/)
      const refused = await accountBrowser(app).signin(user.username)
      const retry = Number(refused.headers['retry-after'])
      assert.ok(retry > 0 && retry <= 900, `Retry-After ${refused.headers['retry-after']}`)
      // An unknown username is counted the same way: the limit does not tell which accounts exist.
      const ghost = freshName('ghost')
      for (let i = 0; i < limits.signinPerAccount.attempts; i++)
        assertError(await accountBrowser(app).signin(ghost, 'x'), 401, 'invalid_credentials')
      assertError(await accountBrowser(app).signin(ghost, 'x'), 429, 'too_many_attempts')
      // Once the window has passed (moved back here), the right password signs in and clears the count.
      await platform.db
        .updateTable('signin_throttle')
        .set({ window_start: sql<Date>`now() - interval '901 seconds'` })
        .where('key', '=', `signin-account:${user.username.toLowerCase()}`)
        .execute()
      assert.equal((await accountBrowser(app).signin(user.username)).status, 200)
      const left = await platform.db
        .selectFrom('signin_throttle')
        .select('key')
        .where('key', '=', `signin-account:${user.username.toLowerCase()}`)
        .execute()
      assert.deepEqual(left, [])
    })
  })

  describe('throttling by address', () => {
    const strict = usePlatform(() => ({
      mode: 'production',
      sharing: platform,
      accounts: {
        ...limits,
        signinPerAddress: { attempts: 4, windowSeconds: 900 },
        signupPerAddress: { attempts: 2, windowSeconds: 3600 },
      },
    }))
    const from = (remoteAddress: string) => (payload: unknown, url: string) =>
      strict.app.inject({
        method: 'POST',
        url,
        remoteAddress,
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify(payload),
      })

    it('limits sign-ups and sign-in attempts per client address, whatever the accounts tried; other addresses are not affected', async () => {
      const octet = () => Math.floor(Math.random() * 250) + 1
      const address = `10.${octet()}.${octet()}.${octet()}`
      const send = from(address)
      const names = [freshName(), freshName(), freshName()]
      assert.equal((await send({ username: names[0], password: GOOD_PASSWORD }, '/account/signup')).statusCode, 201)
      assert.equal((await send({ username: names[1], password: GOOD_PASSWORD }, '/account/signup')).statusCode, 201)
      const third = await send({ username: names[2], password: GOOD_PASSWORD }, '/account/signup')
      assert.equal(third.statusCode, 429)
      assert.equal(third.json().error, 'too_many_attempts')
      assert.ok(Number(third.headers['retry-after']) > 0)
      assert.equal(
        (await from(`${address}1`.slice(0, 15))({ username: names[2], password: GOOD_PASSWORD }, '/account/signup')).statusCode,
        201,
      )

      // Four attempts on four accounts, then the fifth (with the right password) is refused.
      for (const name of [names[0], names[1], freshName(), freshName()]) {
        const answer = await send({ username: name, password: 'not it at all' }, '/account/signin')
        assert.equal(answer.statusCode, 401)
      }
      const blocked = await send({ username: names[0], password: GOOD_PASSWORD }, '/account/signin')
      assert.equal(blocked.statusCode, 429)
      assert.equal(blocked.json().error, 'too_many_attempts')
    })
  })

  describe('sessions', () => {
    it('sign-out ends this session only, and clears the cookie; answers the same without a session', async () => {
      const user = await signedUp(app)
      const other = accountBrowser(app)
      await other.signin(user.username)
      const held = user.token as string
      const out = await user.call('POST', '/account/signout')
      assert.equal(out.status, 200)
      assert.equal(String(out.headers['set-cookie']), `${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Lax`)
      user.use(held)
      assertError(await user.account(), 401, 'session_required')
      assert.equal((await other.account()).status, 200)
      assert.equal((await accountBrowser(app).call('POST', '/account/signout')).status, 200)
    })

    it('sign-out everywhere ends every session of the account and no other account’s', async () => {
      const user = await signedUp(app)
      const second = accountBrowser(app)
      await second.signin(user.username)
      const bystander = await signedUp(app)
      const sessions = await user.call('GET', '/account/sessions')
      assert.equal((sessions.body.sessions as unknown[]).length, 2)
      const ended = await user.call('POST', '/account/signout-everywhere')
      assert.equal(ended.status, 200)
      assert.equal(ended.body.sessions_ended, 2)
      assertError(await second.account(), 401, 'session_required')
      assertError(await user.account(), 401, 'session_required')
      assert.equal((await bystander.account()).status, 200)
    })

    it('ends one chosen session, and only one of the account’s own', async () => {
      const user = await signedUp(app)
      const second = accountBrowser(app)
      await second.signin(user.username)
      const listed = (await user.call('GET', '/account/sessions')).body.sessions as Array<{ id: string; current: boolean }>
      const other = listed.find((s) => !s.current)
      assert.ok(other !== undefined)
      const stranger = await signedUp(app)
      assertError(await stranger.call('DELETE', `/account/sessions/${other.id}`), 404, 'not_found')
      assert.equal((await second.account()).status, 200)
      assert.equal((await user.call('DELETE', `/account/sessions/${other.id}`)).status, 200)
      assertError(await second.account(), 401, 'session_required')
      assert.equal((await user.account()).status, 200)
    })

    it('a session ends after its idle timeout and at its absolute lifetime, whatever its use', async () => {
      /** Moves a session's times back, as if that many seconds had passed. */
      const age = (browser: { token: string | undefined }, column: 'last_seen_at' | 'expires_at', secondsAgo: number) =>
        platform.db
          .updateTable('account_sessions')
          .set({ [column]: sql<Date>`now() - make_interval(secs => ${secondsAgo})` })
          .where('token_hash', '=', sha256Hex(browser.token as string))
          .execute()
      const idle = await signedUp(app)
      await age(idle, 'last_seen_at', limits.sessionIdleSeconds + 1)
      assertError(await idle.account(), 401, 'session_required')

      const used = await signedUp(app)
      await age(used, 'expires_at', 1)
      assertError(await used.account(), 401, 'session_required')

      // Use keeps a session alive: the idle clock restarts at each request.
      const active = await signedUp(app)
      await age(active, 'last_seen_at', limits.sessionIdleSeconds - 60)
      assert.equal((await active.account()).status, 200)
      const row = await platform.db
        .selectFrom('account_sessions')
        .select(sql<boolean>`last_seen_at > now() - interval '5 seconds'`.as('fresh'))
        .where('token_hash', '=', sha256Hex(active.token as string))
        .executeTakeFirstOrThrow()
      assert.equal(row.fresh, true)
    })
  })

  describe('passkeys', () => {
    const host = { host: 'plinth.test' }
    const origin = 'http://plinth.test'
    /** Registers a software passkey for a new signed-in user. */
    const withPasskey = async () => {
      const user = await signedUp(app)
      const key = softPasskey({ rpID: 'plinth.test', origin })
      const options = await user.call('POST', '/account/passkeys/options', undefined, host)
      assert.equal(options.status, 200, JSON.stringify(options.body))
      assert.equal((options.body.rp as { id: string }).id, 'plinth.test')
      const registered = await user.call(
        'POST',
        '/account/passkeys/verify',
        { response: key.register(String(options.body.challenge)), name: 'Laptop' },
        host,
      )
      assert.equal(registered.status, 201, JSON.stringify(registered.body))
      assert.equal(registered.body.id, key.id)
      return { user, key }
    }
    const signinWith = async (response: (challenge: string) => unknown, browser = accountBrowser(app)) => {
      const options = await browser.call('POST', '/account/signin/passkey/options', undefined, host)
      assert.equal(options.status, 200)
      return {
        browser,
        answer: await browser.call('POST', '/account/signin/passkey/verify', { response: response(String(options.body.challenge)) }, host),
      }
    }

    it('registers a passkey and signs in with it: a new session, for the passkey’s account', async () => {
      const { user, key } = await withPasskey()
      const listed = await user.call('GET', '/account/passkeys')
      assert.deepEqual(
        (listed.body.passkeys as Array<{ name: string }>).map((p) => p.name),
        ['Laptop'],
      )
      const { browser, answer } = await signinWith((challenge) => key.assert(challenge))
      assert.equal(answer.status, 200, JSON.stringify(answer.body))
      assert.equal(answer.body.username, user.username)
      assert.match(String(answer.headers['set-cookie']), /^__Host-plinth_session=[A-Za-z0-9_-]{43}; Path=\/;/)
      assert.equal((await browser.account()).body.username, user.username)
    })

    it('uses each challenge once, refuses another origin or relying party and a cloned key, all as 401 invalid_credentials', async () => {
      const { key } = await withPasskey()
      // A replayed assertion: its challenge was consumed by the first use.
      const options = await accountBrowser(app).call('POST', '/account/signin/passkey/options', undefined, host)
      const assertion = key.assert(String(options.body.challenge))
      assert.equal((await accountBrowser(app).call('POST', '/account/signin/passkey/verify', { response: assertion }, host)).status, 200)
      assertError(
        await accountBrowser(app).call('POST', '/account/signin/passkey/verify', { response: assertion }, host),
        401,
        'invalid_credentials',
      )
      // A phishing page's origin, and a challenge nobody issued.
      assertError(
        (await signinWith((challenge) => key.assert(challenge, 'https://plinth.test.attacker.example'))).answer,
        401,
        'invalid_credentials',
      )
      assertError((await signinWith(() => key.assert(Buffer.from('made up').toString('base64url')))).answer, 401, 'invalid_credentials')
      // A clone: its counter is behind the one the platform last saw.
      key.setCounter(0)
      assertError((await signinWith((challenge) => key.assert(challenge))).answer, 401, 'invalid_credentials')
      // A credential the platform does not know.
      const stranger = softPasskey({ rpID: 'plinth.test', origin })
      assertError((await signinWith((challenge) => stranger.assert(challenge))).answer, 401, 'invalid_credentials')
    })

    it('a key made for another relying party does not register, nor does a replayed registration', async () => {
      const user = await signedUp(app)
      const foreign = softPasskey({ rpID: 'attacker.example', origin: 'https://attacker.example' })
      const options = await user.call('POST', '/account/passkeys/options', undefined, host)
      assertError(
        await user.call('POST', '/account/passkeys/verify', { response: foreign.register(String(options.body.challenge)) }, host),
        400,
        'invalid_arguments',
      )
      const key = softPasskey({ rpID: 'plinth.test', origin })
      const again = await user.call('POST', '/account/passkeys/options', undefined, host)
      const registration = key.register(String(again.body.challenge))
      assert.equal((await user.call('POST', '/account/passkeys/verify', { response: registration }, host)).status, 201)
      assertError(await user.call('POST', '/account/passkeys/verify', { response: registration }, host), 400, 'invalid_arguments')
      // Another account's challenge does not register a key on this one.
      const other = await signedUp(app)
      const theirs = await other.call('POST', '/account/passkeys/options', undefined, host)
      const third = softPasskey({ rpID: 'plinth.test', origin })
      assertError(
        await user.call('POST', '/account/passkeys/verify', { response: third.register(String(theirs.body.challenge)) }, host),
        400,
        'invalid_arguments',
      )
    })

    it('a challenge expires after five minutes, and an account holds at most 20 passkeys', async () => {
      const { key } = await withPasskey()
      const options = await accountBrowser(app).call('POST', '/account/signin/passkey/options', undefined, host)
      await platform.db
        .updateTable('webauthn_challenges')
        .set({ expires_at: sql<Date>`now() - interval '1 second'` })
        .where('challenge', '=', String(options.body.challenge))
        .execute()
      const late = await accountBrowser(app).call(
        'POST',
        '/account/signin/passkey/verify',
        { response: key.assert(String(options.body.challenge)) },
        host,
      )
      assertError(late, 401, 'invalid_credentials')

      const user = await signedUp(app)
      const register = (challenge: unknown) =>
        user.call(
          'POST',
          '/account/passkeys/verify',
          { response: softPasskey({ rpID: 'plinth.test', origin }).register(String(challenge)) },
          host,
        )
      for (let i = 0; i < 18; i++) {
        assert.equal((await register((await user.call('POST', '/account/passkeys/options', undefined, host)).body.challenge)).status, 201)
      }
      // Two ceremonies begun at 18 and finished at once: the cap is counted where the passkey is written (it was 21 before).
      const begun = [
        await user.call('POST', '/account/passkeys/options', undefined, host),
        await user.call('POST', '/account/passkeys/options', undefined, host),
        await user.call('POST', '/account/passkeys/options', undefined, host),
      ]
      const finished = await Promise.all(begun.map((options) => register(options.body.challenge)))
      assert.deepEqual(finished.map((answer) => answer.status).sort(), [201, 201, 409])
      const over = finished.find((answer) => answer.status === 409)
      assert.ok(over)
      assertError(over, 409, 'too_many_passkeys')
      const listed = await user.call('GET', '/account/passkeys', undefined, host)
      assert.equal((listed.body.passkeys as unknown[]).length, 20)
      const refused = assertError(await user.call('POST', '/account/passkeys/options', undefined, host), 409, 'too_many_passkeys')
      assert.match(refused.error_message, /at most 20 passkeys/)
    })

    it('a removed passkey signs in no more; only its owner removes it', async () => {
      const { user, key } = await withPasskey()
      const intruder = await signedUp(app)
      assertError(await intruder.call('DELETE', `/account/passkeys/${key.id}`), 404, 'not_found')
      assert.equal((await user.call('DELETE', `/account/passkeys/${key.id}`)).status, 200)
      assertError((await signinWith((challenge) => key.assert(challenge))).answer, 401, 'invalid_credentials')
    })
  })

  describe('password change', () => {
    it('needs the current password, refuses a weak new one, ends every other session and replaces this one', async () => {
      const user = await signedUp(app)
      const other = accountBrowser(app)
      await other.signin(user.username)
      const before = user.token as string
      assertError(
        await user.call('POST', '/account/password', {
          current_password: 'wrong one entirely',
          new_password: 'ember kettle glacier thimble',
        }),
        401,
        'invalid_credentials',
      )
      assertError(
        await user.call('POST', '/account/password', { current_password: GOOD_PASSWORD, new_password: 'password1' }),
        400,
        'weak_password',
      )
      assert.equal((await other.account()).status, 200, 'a refused change ends nothing')
      const changed = await user.call('POST', '/account/password', {
        current_password: GOOD_PASSWORD,
        new_password: 'ember kettle glacier thimble',
      })
      assert.equal(changed.status, 200, JSON.stringify(changed.body))
      assert.notEqual(user.token, before)
      assert.equal((await user.account()).status, 200)
      assertError(await other.account(), 401, 'session_required')
      const stale = accountBrowser(app)
      stale.use(before)
      assertError(await stale.account(), 401, 'session_required')
      assertError(await accountBrowser(app).signin(user.username), 401, 'invalid_credentials')
      assert.equal((await accountBrowser(app).signin(user.username, 'ember kettle glacier thimble')).status, 200)
    })

    it('counts wrong current passwords as sign-in attempts of the account', async () => {
      const user = await signedUp(app)
      const change = (current: string) =>
        user.call('POST', '/account/password', { current_password: current, new_password: 'ember kettle glacier thimble' })
      for (let i = 0; i < limits.signinPerAccount.attempts; i++) assertError(await change(`wrong ${i}`), 401, 'invalid_credentials')
      assertError(await change(GOOD_PASSWORD), 429, 'too_many_attempts')
      assertError(await accountBrowser(app).signin(user.username), 429, 'too_many_attempts')
    })
  })

  describe('requests from elsewhere', () => {
    it('refuses a cross-site request on every account route, before anything is read or changed', async () => {
      const user = await signedUp(app)
      for (const headers of [{ 'sec-fetch-site': 'cross-site' }, { 'sec-fetch-site': 'same-site' }]) {
        assertError(await user.call('GET', '/account', undefined, headers), 403, 'cross_site_request')
        assertError(await user.call('POST', '/account/signout-everywhere', undefined, headers), 403, 'cross_site_request')
        assertError(
          await accountBrowser(app).call('POST', '/account/signin', { username: user.username, password: GOOD_PASSWORD }, headers),
          403,
          'cross_site_request',
        )
      }
      // A browser without fetch metadata: its Origin decides.
      const plain = await platform.app.inject({
        method: 'POST',
        url: '/account/signout-everywhere',
        headers: { origin: 'https://attacker.example', 'content-type': 'application/json', cookie: `${SESSION_COOKIE}=${user.token}` },
      })
      assert.equal(plain.statusCode, 403)
      assert.equal(plain.json().error, 'cross_site_request')
      assert.equal((await user.account()).status, 200, 'the session survived every refused request')
    })

    it('takes only application/json on a state-changing route: a form or text body is 415 unsupported_media_type', async () => {
      const user = await signedUp(app)
      for (const type of ['application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data; boundary=x']) {
        const answer = await user.call('POST', '/account/signout-everywhere', undefined, { 'content-type': type })
        assertError(answer, 415, 'unsupported_media_type')
      }
      const header = await user.call('POST', '/account/signout-everywhere', undefined, {
        'content-type': 'text/plain',
        'x-plinth-client': 'curl',
      })
      assertError(header, 415, 'unsupported_media_type')
      assert.equal((await user.account()).status, 200)
    })

    it('refuses every account route without a session, and serves none in sandbox mode', async () => {
      const anonymous = accountBrowser(app)
      for (const [method, url] of [
        ['GET', '/account'],
        ['GET', '/account/sessions'],
        ['POST', '/account/signout-everywhere'],
        ['POST', '/account/password'],
        ['POST', '/account/apps/app_x/authenticate'],
        ['DELETE', '/account/apps/app_x/consent'],
        ['GET', '/account/payments/p'],
        ['POST', '/account/payments/p/pay'],
      ] as const) {
        assertError(await anonymous.call(method, url, method === 'POST' ? {} : undefined), 401, 'session_required')
      }
    })
  })
})

describe('the platform page (production)', () => {
  const platform = usePlatform({ mode: 'production' })
  const get = (url: string) => platform.app.inject({ method: 'GET', url })

  it('serves the page at / with the sandbox page’s headers, its files under /ui/, and no sandbox page', async () => {
    const page = await get('/')
    assert.equal(page.statusCode, 200)
    assert.equal(page.headers['content-type'], 'text/html; charset=utf-8')
    const csp = String(page.headers['content-security-policy'])
    for (const rule of ["default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "form-action 'none'"]) {
      assert.ok(csp.includes(rule), rule)
    }
    assert.equal(page.headers['x-frame-options'], 'DENY')
    assert.doesNotMatch(page.body, /<script>|\son[a-z]+="/, 'no inline script or handler')
    assert.deepEqual((await get('/ui/platform.json')).json(), {
      mode: 'production',
      approval_window_seconds: 60,
      payment_step_up_amount: '100',
    })
    for (const file of ['main.js', 'platform.js', 'account/account-panel.js', 'platform.css', 'vendor/webauthn.js']) {
      const response = await get(`/ui/${file}`)
      assert.equal(response.statusCode, 200, file)
      assert.ok(response.headers['content-security-policy'], file)
    }
    assert.match((await get('/ui/vendor/webauthn.js')).body, /SimpleWebAuthnBrowser/)
    for (const url of ['/sandbox/', '/sandbox/ui/main.js', '/console/', '/sandbox/users'])
      assert.equal((await get(url)).statusCode, 404, url)
  })
})

describe('accounts are production only', () => {
  const sandboxPlatform = usePlatform()
  it('answers 404 for /account routes in sandbox mode', async () => {
    const answer = await accountBrowser(() => sandboxPlatform.app).signup(freshName())
    assertError(answer, 404, 'not_found')
  })
})

describe('consent and the user’s payments (production)', () => {
  const platform = usePlatform({ mode: 'production' })
  const app = () => platform.app
  const admin = () => adminOf(platform)

  const world = async () => {
    const developer = await signedUp(app)
    await admin().grant(developer.username, 'developer')
    const shop = await admin().createApp({ owner: developer.username, name: 'Shop', url: 'https://shop.example' })
    const user = await signedUp(app)
    return { shop, user }
  }
  const v2 = (headers: Record<string, string>) => ({
    get: (url: string) => platform.app.inject({ method: 'GET', url, headers }),
    post: (url: string, payload?: unknown) =>
      platform.app.inject({
        method: 'POST',
        url,
        headers: { ...headers, 'content-type': 'application/json' },
        payload: JSON.stringify(payload ?? {}),
      }),
  })

  it('the user allows an app: its token verifies on /v2/me; withdrawing the consent revokes it', async () => {
    const { shop, user } = await world()
    const allowed = await user.call('POST', `/account/apps/${shop.app_id}/authenticate`, { scopes: ['username', 'payments'] })
    assert.equal(allowed.status, 200, JSON.stringify(allowed.body))
    const token = String(allowed.body.accessToken)
    const me = await v2({ authorization: `Bearer ${token}` }).get('/v2/me')
    assert.equal(me.statusCode, 200)
    assert.equal(me.json().username, user.username)
    const account = await user.account()
    assert.deepEqual(
      (account.body.consents as Array<{ app_id: string; scopes: string[] }>).map((c) => [c.app_id, c.scopes]),
      [[shop.app_id, ['payments', 'username']]],
    )
    assertError(await user.call('POST', '/account/apps/app_missing/authenticate', { scopes: [] }), 404, 'app_not_found')

    assert.equal((await user.call('DELETE', `/account/apps/${shop.app_id}/consent`)).status, 200)
    const refused = await v2({ authorization: `Bearer ${token}` }).get('/v2/me')
    assert.equal(refused.statusCode, 401)
    assert.equal(refused.json().error, 'invalid_access_token')
  })

  it('a user-to-app payment: the app creates it with the token, its backend approves, only the user pays, in the account API', async () => {
    const { shop, user } = await world()
    await admin().issue({ target: user.username, amount: '50', reason: 'test money' })
    const token = String((await user.call('POST', `/account/apps/${shop.app_id}/authenticate`, { scopes: ['payments'] })).body.accessToken)
    const client = v2({ authorization: `Bearer ${token}` })
    const server = v2({ authorization: `Key ${shop.api_key}` })
    const created = await client.post('/v2/client/payments', { amount: 3.5, memo: 'a teapot', metadata: { sku: 't1' } })
    assert.equal(created.statusCode, 201, created.body)
    const id = created.json().identifier as string

    // Before the app approves, the user cannot pay it.
    assertError(await user.call('POST', `/account/payments/${id}/pay`), 409, 'not_approved')
    assert.equal((await server.post(`/v2/payments/${id}/approve`)).statusCode, 200)

    // The app's token can read it but cannot pay: 403 in production.
    const bySdk = await client.post(`/v2/client/payments/${id}/submit`)
    assert.equal(bySdk.statusCode, 403)
    assert.equal(bySdk.json().error, 'user_confirmation_required')

    // Another user does not see it.
    const stranger = await signedUp(app)
    assertError(await stranger.call('GET', `/account/payments/${id}`), 404, 'payment_not_found')
    assertError(await stranger.call('POST', `/account/payments/${id}/pay`), 404, 'payment_not_found')

    const shown = await user.call('GET', `/account/payments/${id}`)
    assert.equal(shown.status, 200)
    assert.equal(shown.body.app_name, 'Shop')
    const paid = await user.call('POST', `/account/payments/${id}/pay`)
    assert.equal(paid.status, 200, JSON.stringify(paid.body))
    const txid = (paid.body.transaction as { txid: string }).txid
    assert.match(txid, /^[0-9a-f]{64}$/)
    assert.equal((await server.post(`/v2/payments/${id}/complete`, { txid })).statusCode, 200)
    const balance = ((await user.account()).body.wallet as { balance: string }).balance
    assert.equal(balance, '46.4999900', '50 issued, 3.5 paid, a 0.00001 fee')
    // Paying again replays: nothing moves twice.
    assert.equal((await user.call('POST', `/account/payments/${id}/pay`)).status, 200)
    assert.equal(((await user.account()).body.wallet as { balance: string }).balance, '46.4999900')
  })
})
