/**
 * Every act that changes who can do what or where money goes is audited, in the transaction that
 * does it (docs/operators.md, "The audit log"): each act below is done once with its audit record
 * refused by the database (the act must not happen either), then once for real (its record must
 * say who, what, to whom). And an anonymous caller's text never enters the log as typed.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, it } from 'node:test'
import { type Kysely, sql } from 'kysely'
import { accountLimits } from '../../../src/config.js'
import type { DB } from '../../../src/db/schema.js'
import { type AccountBrowser, accountBrowser, adminOf, freshName, GOOD_PASSWORD, signedUp } from '../../helpers/accounts.js'
import { TEST_DB, usePlatform } from '../../helpers/platform.js'
import { softPasskey } from '../../helpers/webauthn.js'

type Answer = Awaited<ReturnType<AccountBrowser['call']>>

interface Prepared {
  /** The act, as the person does it. */
  run(): Promise<Answer>
  status: number
  actor: string
  target: string | null
  /** Fields the record's details must hold. */
  details: Record<string, unknown>
  /** What the act changes, read back: the same before and after a refused act. */
  state(): Promise<unknown>
}

interface Act {
  action: string
  what: string
  prepare(): Promise<Prepared>
}

const newest = async (db: Kysely<DB>) =>
  db.selectFrom('audit_log').select(['id', 'actor', 'action', 'target', 'details']).orderBy('id', 'desc').limit(1).executeTakeFirst()

/** Makes the database refuse an audit record of `action` (a trigger raising an error), for the duration of `work`. */
async function refusingAudit(db: Kysely<DB>, action: string, work: () => Promise<void>): Promise<void> {
  await sql`create or replace function audit_refuse_test() returns trigger language plpgsql as $$
    begin raise exception 'audit record refused by the test'; end $$`.execute(db)
  await sql`create trigger audit_refuse_test before insert on audit_log for each row
    when (new.action = ${sql.lit(action)}) execute function audit_refuse_test()`.execute(db)
  try {
    await work()
  } finally {
    await sql`drop trigger audit_refuse_test on audit_log`.execute(db)
  }
}

describe(`every act on who can do what, or where money goes, is audited in its transaction (${TEST_DB})`, () => {
  const platform = usePlatform({
    mode: 'production',
    accounts: { ...accountLimits(), signupPerAddress: { attempts: 1000, windowSeconds: 3600 } },
  })
  const app = () => platform.app
  const admin = () => adminOf(platform)
  const host = { host: 'plinth.test' }
  const idOf = async (browser: AccountBrowser) => String((await browser.account()).body.user_id)
  const one = async <T>(query: Promise<T[]>) => (await query)[0]

  /** An app made by the operator (verified), its owner, and a member who is not the owner. */
  const appWithMember = async () => {
    const owner = await signedUp(app)
    const mate = await signedUp(app)
    await admin().grant(owner.username, 'developer')
    await admin().grant(mate.username, 'developer')
    const made = await admin().createApp({ owner: owner.username, name: 'Shop', url: 'https://shop.example/' })
    assert.equal((await owner.call('POST', `/portal/apps/${made.app_id}/members`, { username: mate.username })).status, 201)
    return { owner, mate, appId: made.app_id, apiKey: made.api_key }
  }
  const appRow = (appId: string) =>
    one(platform.db.selectFrom('apps').select(['name', 'description', 'icon']).where('id', '=', appId).execute())
  const liveSessions = async (userId: string) =>
    (await platform.db.selectFrom('account_sessions').select('id').where('user_id', '=', userId).where('revoked_at', 'is', null).execute())
      .length
  const passkeys = async (userId: string) =>
    (await platform.db.selectFrom('account_passkeys').select('id').where('user_id', '=', userId).execute()).map((r) => r.id)
  const passwordOf = async (userId: string) =>
    (await platform.db.selectFrom('users').select('password_hash').where('id', '=', userId).executeTakeFirstOrThrow()).password_hash
  const registerPasskey = async (user: AccountBrowser) => {
    const key = softPasskey({ rpID: 'plinth.test', origin: 'http://plinth.test' })
    const options = await user.call('POST', '/account/passkeys/options', undefined, host)
    return {
      key,
      run: () =>
        user.call('POST', '/account/passkeys/verify', { response: key.register(String(options.body.challenge)), name: 'Phone' }, host),
    }
  }
  const operatorAndUser = async () => {
    const op = await signedUp(app)
    await admin().grant(op.username, 'operator')
    const user = await signedUp(app)
    return { op, user, opId: await idOf(op), userId: await idOf(user) }
  }
  const PNG = `data:image/png;base64,${Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a1b2c3d40000000049454e44ae426082', 'hex').toString('base64')}`

  const acts: Act[] = [
    {
      action: 'update-app',
      what: 'a member renames the app',
      async prepare() {
        const { mate, appId } = await appWithMember()
        return {
          run: () => mate.call('PATCH', `/portal/apps/${appId}`, { name: 'Totally Official Wallet' }),
          status: 200,
          actor: `user:${await idOf(mate)}`,
          target: appId,
          details: { name: { from: 'Shop', to: 'Totally Official Wallet' } },
          state: () => appRow(appId),
        }
      },
    },
    {
      action: 'update-app',
      what: 'a member changes the description and the icon',
      async prepare() {
        const { mate, appId } = await appWithMember()
        return {
          run: () => mate.call('PATCH', `/portal/apps/${appId}`, { description: 'Send your Pi here.', icon: PNG }),
          status: 200,
          actor: `user:${await idOf(mate)}`,
          target: appId,
          details: { description: { from: '', to: 'Send your Pi here.' }, icon: { from: null, to: `sha256:${sha256(PNG)}` } },
          state: () => appRow(appId),
        }
      },
    },
    {
      action: 'cancel-payment',
      what: 'a member cancels a payment in the portal',
      async prepare() {
        const { mate, appId } = await appWithMember()
        const user = await signedUp(app)
        const consent = await user.call('POST', `/account/apps/${appId}/authenticate`, { scopes: ['payments'] })
        const created = await platform.app.inject({
          method: 'POST',
          url: '/v2/client/payments',
          headers: { authorization: `Bearer ${String(consent.body.accessToken)}`, 'content-type': 'application/json' },
          payload: JSON.stringify({ amount: 3, memo: 'a pot', metadata: {} }),
        })
        assert.equal(created.statusCode, 201, created.body)
        const id = String(created.json().identifier)
        return {
          run: () => mate.call('POST', `/portal/apps/${appId}/payments/${id}/cancel`),
          status: 200,
          actor: `user:${await idOf(mate)}`,
          target: appId,
          details: { payment_id: id, amount: '3.0000000', direction: 'user_to_app' },
          state: () => one(platform.db.selectFrom('payments').select(['cancelled', 'cancelled_at']).where('identifier', '=', id).execute()),
        }
      },
    },
    {
      action: 'change-password',
      what: 'a user changes their password',
      async prepare() {
        const user = await signedUp(app)
        const userId = await idOf(user)
        const other = accountBrowser(app)
        await other.signin(user.username)
        return {
          run: () => user.call('POST', '/account/password', { current_password: GOOD_PASSWORD, new_password: `${GOOD_PASSWORD} again` }),
          status: 200,
          actor: `user:${userId}`,
          target: user.username,
          details: { other_sessions_ended: 1 },
          state: async () => [await passwordOf(userId), await liveSessions(userId)],
        }
      },
    },
    {
      action: 'add-passkey',
      what: 'a user adds a passkey',
      async prepare() {
        const user = await signedUp(app)
        const userId = await idOf(user)
        const registering = await registerPasskey(user)
        return {
          run: registering.run,
          status: 201,
          actor: `user:${userId}`,
          target: user.username,
          details: { passkey_id: registering.key.id, name: 'Phone' },
          state: () => passkeys(userId),
        }
      },
    },
    {
      action: 'remove-passkey',
      what: 'a user removes a passkey',
      async prepare() {
        const user = await signedUp(app)
        const userId = await idOf(user)
        const registering = await registerPasskey(user)
        assert.equal((await registering.run()).status, 201)
        return {
          run: () => user.call('DELETE', `/account/passkeys/${registering.key.id}`),
          status: 200,
          actor: `user:${userId}`,
          target: null,
          details: { passkey_id: registering.key.id, name: 'Phone' },
          state: () => passkeys(userId),
        }
      },
    },
    {
      action: 'signout-everywhere',
      what: 'a user signs out everywhere',
      async prepare() {
        const user = await signedUp(app)
        const userId = await idOf(user)
        await accountBrowser(app).signin(user.username)
        return {
          run: () => user.call('POST', '/account/signout-everywhere'),
          status: 200,
          actor: `user:${userId}`,
          target: null,
          details: { sessions_ended: 2 },
          state: () => liveSessions(userId),
        }
      },
    },
    {
      action: 'end-session',
      what: 'a user ends one of their sessions',
      async prepare() {
        const user = await signedUp(app)
        const userId = await idOf(user)
        await accountBrowser(app).signin(user.username)
        const sessions = (await user.call('GET', '/account/sessions')).body.sessions as Array<{ id: string; current: boolean }>
        const other = sessions.find((s) => !s.current)
        assert.ok(other !== undefined)
        return {
          run: () => user.call('DELETE', `/account/sessions/${other.id}`),
          status: 200,
          actor: `user:${userId}`,
          target: other.id,
          details: {},
          state: () => liveSessions(userId),
        }
      },
    },
    {
      action: 'issue-password-reset',
      what: 'an operator issues a reset link',
      async prepare() {
        const { op, user, opId, userId } = await operatorAndUser()
        return {
          run: () => op.call('POST', `/operator/users/${user.username}/password-reset`),
          status: 201,
          actor: `user:${opId}`,
          target: user.username,
          details: { user_id: userId },
          state: async () =>
            (await platform.db.selectFrom('password_resets').select('token_hash').where('user_id', '=', userId).execute()).length,
        }
      },
    },
    {
      action: 'reset-password',
      what: 'a reset link is used',
      async prepare() {
        const { op, user, opId, userId } = await operatorAndUser()
        const link = await op.call('POST', `/operator/users/${user.username}/password-reset`)
        const token = String(link.body.url).split('/#/reset/')[1]
        return {
          run: () => accountBrowser(app).call('POST', '/account/password-reset', { token, new_password: `${GOOD_PASSWORD} reset` }),
          status: 200,
          actor: `user:${userId}`,
          target: user.username,
          details: { issued_by: `user:${opId}` },
          state: async () => [await passwordOf(userId), await liveSessions(userId)],
        }
      },
    },
  ]

  for (const act of acts) {
    it(`${act.what}: ${act.action}, or neither the act nor the record when the record cannot be written`, async () => {
      const refused = await act.prepare()
      const before = await refused.state()
      const last = await newest(platform.db)
      await refusingAudit(platform.db, act.action, async () => {
        const answer = await refused.run()
        assert.equal(answer.status, 500, JSON.stringify(answer.body))
      })
      assert.deepEqual(await refused.state(), before, 'the act did not happen without its record')
      assert.equal((await newest(platform.db))?.id, last?.id)

      const done = await act.prepare()
      const answer = await done.run()
      assert.equal(answer.status, done.status, JSON.stringify(answer.body))
      const record = await newest(platform.db)
      assert.equal(record?.action, act.action)
      assert.equal(record?.actor, done.actor)
      assert.equal(record?.target, done.target)
      assert.deepEqual({ ...record?.details, ...done.details }, record?.details, JSON.stringify(record?.details))
      assert.equal((await admin().verifyAudit()).broken_at, null)
    })
  }
})

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex')
}

describe(`anonymous failed sign-ins write no attacker-chosen text into the audit log (${TEST_DB})`, () => {
  const platform = usePlatform({
    mode: 'production',
    accounts: { ...accountLimits(), signinPerAccount: { attempts: 1, windowSeconds: 900 } },
  })
  const browser = () => accountBrowser(() => platform.app)
  const throttled = async () =>
    platform.db
      .selectFrom('audit_log')
      .select(['target', 'details', sql<string>`row_to_json(audit_log)::text`.as('whole')])
      .where('action', '=', 'throttle-signin')
      .orderBy('id', 'desc')
      .execute()

  const HOSTILE: Array<[string, string]> = [
    ['NUL', `ad\u0000min`],
    ['a lone surrogate', `ad\uD800min`],
    ['a BOM', `\uFEFFadmin`],
    ['newlines', `admin\nOK audit verified\r\n`],
    ['ANSI escapes', `\u001b[2J\u001b[31mroot\u001b[0m`],
    ['10,000 characters', 'x'.repeat(10_000)],
  ]
  const CONTROL = /[\p{Cc}\p{Cs}\uFEFF]/u

  for (const [what, username] of HOSTILE) {
    it(`a username holding ${what}`, async () => {
      const before = (await throttled()).length
      const first = await browser().signin(username, 'wrong password')
      const second = await browser().signin(username, 'wrong password')
      const records = await throttled()
      if (first.status === 400) {
        // Refused as input (a NUL, a lone surrogate, more than 64 characters): it reaches neither the throttle nor the log.
        assert.equal(second.status, 400)
        assert.equal(records.length, before)
        return
      }
      assert.deepEqual([first.status, second.status], [401, 429])
      assert.equal(records.length, before + 1)
      const record = records[0]
      assert.ok(record !== undefined)
      assert.match(String(record.target), /^signin-account:#[0-9a-f]{32}$/)
      assert.deepEqual(record.details.given, { hashed: true, length: [...username.toLowerCase()].length })
      assert.doesNotMatch(
        record.whole.replace(/\\u[0-9a-f]{4}/gi, (escaped) => JSON.parse(`"${escaped}"`)),
        CONTROL,
      )
      assert.ok(String(record.target).length <= 64 && record.whole.length < 600, 'bounded')
    })
  }

  it('a name that could be a username is recorded as typed (lower case), so the operator can tell whose account was tried', async () => {
    const name = freshName('tried')
    await browser().signin(name, 'wrong password')
    await browser().signin(name, 'wrong password')
    assert.equal((await throttled())[0]?.target, `signin-account:${name.toLowerCase()}`)
  })
})
