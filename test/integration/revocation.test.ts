/**
 * Revocation against the per-process credential cache (src/identity/credential-cache.ts).
 *
 * The claim (docs/api.md, docs/design.md): a revoked token, key or consent is refused at once by
 * the process that revoked it, and within a second by every process. On PostgreSQL three
 * `src/server.ts` processes share a schema; each round warms every credential into every
 * process's cache, then revokes them all at once, in random order, spread over the processes, so
 * that the revoking transactions commit out of the order in which they drew their event ids. On
 * PGlite (one process by design) the same rounds run in process.
 *
 * The second suite drives the cache's feed directly with two PostgreSQL transactions that commit
 * out of id order: the feed must not skip the one that commits last, and a lookup racing it must
 * not put the revoked credential back.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { type Kysely, sql } from 'kysely'
import type { TokenPrincipal } from '../../src/core/principals.js'
import type { DB } from '../../src/db/schema.js'
import { createCredentialCache } from '../../src/identity/credential-cache.js'
import { sha256Hex } from '../../src/lib/crypto.js'
import {
  SANDBOX_CLIENT,
  type SandboxApp,
  type SandboxUser,
  sandbox,
  startPlatform,
  TEST_DB,
  type TestPlatform,
} from '../helpers/platform.js'
import { type PlinthProcess, startCluster } from '../helpers/server-process.js'

const PROCESSES = 3
const ROUNDS = Number(process.env.PLINTH_REVOCATION_ROUNDS ?? 8)
const TOKENS = 60
const KEYS = 10
const CONSENTS = 3
/** Users whose tokens are revoked one by one (each gets TOKENS / TOKEN_USERS tokens). */
const TOKEN_USERS = 6
const KEY_ROUTE = '/v2/payments/incomplete_server_payments'

type Credential =
  | { kind: 'token'; token: string }
  | { kind: 'key'; key: string; keyId: string }
  | { kind: 'consent'; token: string; userId: string }

interface Figures {
  rounds: number
  revocations: number
  /** Checks on the revoking process right after its revoke answered, and how many were still accepted. */
  atOnce: number
  acceptedAtOnce: number
  /** Checks on every process at least a second after the revoke answered, and how many were still accepted. */
  later: number
  acceptedLater: number
}

function shuffle<T>(items: T[]): T[] {
  const out = [...items]
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    ;[out[i], out[j]] = [out[j] as T, out[i] as T]
  }
  return out
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe(`revocation (${TEST_DB === 'postgres' ? `${PROCESSES} server processes on one PostgreSQL` : 'in process, on PGlite'})`, () => {
  let nodes: FastifyInstance[] = []
  let children: PlinthProcess[] = []
  let cleanup: () => Promise<void> = async () => {}
  const figures: Figures = { rounds: 0, revocations: 0, atOnce: 0, acceptedAtOnce: 0, later: 0, acceptedLater: 0 }

  before(async () => {
    if (TEST_DB === 'postgres') {
      const cluster = await startCluster({ processes: PROCESSES, timeoutMs: 45_000 })
      children = cluster.servers
      nodes = cluster.nodes
      cleanup = async () => {
        await cluster.close()
      }
    } else {
      const platform: TestPlatform = await startPlatform()
      nodes = [platform.app]
      cleanup = () => platform.close()
    }
  })

  after(async () => {
    console.log(`revocation: ${JSON.stringify(figures)} over ${nodes.length} process(es)`)
    await cleanup()
    for (const server of children) {
      assert.doesNotMatch(server.output(), /"level":(50|60)/, `a server logged an error:\n${server.output()}`)
    }
  })

  const node = (i: number) => nodes[i % nodes.length] as FastifyInstance

  /** The status a credential gets from process `via`: 200 while it is accepted, 401 once refused. */
  async function check(credential: Credential, via: number): Promise<number> {
    const authorization = credential.kind === 'key' ? `Key ${credential.key}` : `Bearer ${credential.token}`
    const url = credential.kind === 'key' ? KEY_ROUTE : '/v2/me'
    const response = await node(via).inject({ method: 'GET', url, headers: { authorization } })
    if (response.statusCode !== 200 && response.statusCode !== 401) {
      throw new Error(`GET ${url} answered ${response.statusCode}: ${response.body}`)
    }
    return response.statusCode
  }

  async function revoke(app: SandboxApp, credential: Credential, via: number): Promise<void> {
    const sb = sandbox(node(via))
    if (credential.kind === 'token') await sb.revokeToken(credential.token)
    else if (credential.kind === 'key') await sb.revokeKey(app.app_id, credential.keyId)
    else {
      const url = `/sandbox/apps/${app.app_id}/users/${credential.userId}/consent`
      const response = await node(via).inject({ method: 'DELETE', url, headers: SANDBOX_CLIENT })
      assert.equal(response.statusCode, 200, `DELETE ${url}: ${response.body}`)
    }
  }

  /** One app, and users who sign in again every round (after a withdrawal too, which consents anew). */
  async function scene(): Promise<{ app: SandboxApp; tokenUsers: SandboxUser[]; consentUsers: SandboxUser[] }> {
    const app = await sandbox(node(0)).createApp()
    const users = await Promise.all(Array.from({ length: TOKEN_USERS + CONSENTS }, (_, i) => sandbox(node(i)).createUser()))
    return { app, tokenUsers: users.slice(0, TOKEN_USERS), consentUsers: users.slice(TOKEN_USERS) }
  }

  /** TOKENS fresh tokens, KEYS fresh keys and one fresh token of each consent user. */
  async function credentials({ app, tokenUsers, consentUsers }: Awaited<ReturnType<typeof scene>>): Promise<Credential[]> {
    const tokens = await Promise.all(
      Array.from({ length: TOKENS }, async (_, i): Promise<Credential> => {
        const user = tokenUsers[i % TOKEN_USERS]
        assert.ok(user !== undefined)
        const auth = await sandbox(node(i)).authenticate(app.app_id, user.user_id)
        return { kind: 'token', token: auth.accessToken }
      }),
    )
    const keys = await Promise.all(
      Array.from({ length: KEYS }, async (_, i): Promise<Credential> => {
        const key = await sandbox(node(i)).createKey(app.app_id)
        return { kind: 'key', key: key.api_key, keyId: key.key_id }
      }),
    )
    const consents = await Promise.all(
      consentUsers.map(async (user, i): Promise<Credential> => {
        const auth = await sandbox(node(i)).authenticate(app.app_id, user.user_id)
        return { kind: 'consent', token: auth.accessToken, userId: user.user_id }
      }),
    )
    return [...tokens, ...keys, ...consents]
  }

  it(`concurrent revocations of ${TOKENS} tokens, ${KEYS} keys and ${CONSENTS} consents, ${ROUNDS} rounds: refused at once where revoked, and everywhere a second later`, async () => {
    const failures: string[] = []
    const theScene = await scene()
    const { app } = theScene
    for (let round = 0; round < ROUNDS; round++) {
      const all = await credentials(theScene)
      // Every credential is verified (so cached) by every process first.
      await Promise.all(
        all.flatMap((credential) =>
          nodes.map(async (_, via) => assert.equal(await check(credential, via), 200, `warming ${credential.kind} on process ${via}`)),
        ),
      )
      // All revoked at once, in random order, each on a random process.
      const answered = await Promise.all(
        shuffle(all).map(async (credential) => {
          const via = Math.floor(Math.random() * nodes.length)
          await revoke(app, credential, via)
          const at = Date.now()
          figures.atOnce += 1
          if ((await check(credential, via)) === 200) {
            figures.acceptedAtOnce += 1
            failures.push(
              `round ${round}: ${credential.kind} accepted by process ${via} (which revoked it) right after the revoke answered`,
            )
          }
          return { credential, at }
        }),
      )
      figures.revocations += answered.length
      // A second after each revoke answered, every process refuses it.
      await Promise.all(
        answered.map(async ({ credential, at }) => {
          await sleep(Math.max(0, at + 1_000 - Date.now()))
          await Promise.all(
            nodes.map(async (_, via) => {
              figures.later += 1
              const status = await check(credential, via)
              if (status === 200) {
                figures.acceptedLater += 1
                failures.push(
                  `round ${round}: ${credential.kind} accepted by process ${via} ${Date.now() - at} ms after the revoke answered`,
                )
              }
            }),
          )
        }),
      )
      figures.rounds += 1
    }
    assert.deepEqual(failures, [], `${failures.length} revoked credentials still accepted:\n${failures.join('\n')}`)
  })
})

/** A principal for the token `token`, as the inner (database) authenticator would answer it. */
const principal = (appId: string): TokenPrincipal => ({
  kind: 'token',
  tokenId: appId,
  appId,
  userId: 'u',
  uid: 'uid',
  username: 'name',
  scopes: [],
  expiresAt: new Date(Date.now() + 3_600_000),
})

/** Writes a revocation event the way the services do, inside the caller's transaction. */
const recordEvent = (db: Kysely<DB>, token: string) =>
  sql`insert into credential_events (kind, subject, created_at) values ('token', ${sha256Hex(token)}, now())`.execute(db)

describe('the credential cache reads revocations that commit out of id order', {
  skip: TEST_DB !== 'postgres' && 'needs two concurrent transactions (PostgreSQL)',
}, () => {
  let platform: TestPlatform

  before(async () => {
    platform = await startPlatform()
  })

  after(async () => {
    await platform?.close()
  })

  /**
   * Opens a transaction that writes the token's revocation event and holds it open until
   * `commit()` is called: its event id is drawn now, its commit happens later.
   */
  async function openRevocation(token: string): Promise<{ commit: () => Promise<void> }> {
    let release: () => void = () => {}
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    let written: () => void = () => {}
    const wrote = new Promise<void>((resolve) => {
      written = resolve
    })
    const done = platform.db.transaction().execute(async (trx) => {
      await recordEvent(trx, token)
      written()
      await released
    })
    await wrote
    return {
      commit: async () => {
        release()
        await done
      },
    }
  }

  it('an event that commits after a later id was read is still applied', async () => {
    const valid = new Set(['early', 'late'])
    let lookups = 0
    const cache = createCredentialCache({ db: platform.db, clock: platform.clock, pollMs: 60_000 })
    await cache.start()
    try {
      const auth = cache.authenticator({
        verifyApiKey: async () => undefined,
        verifyAccessToken: async (token) => {
          lookups += 1
          return valid.has(token) ? principal(token) : undefined
        },
      })
      for (const token of valid) assert.notEqual(await auth.verifyAccessToken(token), undefined)
      assert.equal(lookups, 2)

      // `early` draws its event id first but commits after `late`, whose event the cache reads.
      const early = await openRevocation('early')
      const late = await openRevocation('late')
      valid.delete('late')
      await late.commit()
      await cache.sync()
      assert.equal(await auth.verifyAccessToken('late'), undefined, 'the event read first is applied')

      valid.delete('early')
      await early.commit()
      await cache.sync()
      assert.equal(await auth.verifyAccessToken('early'), undefined, 'the event that committed late is applied too')
    } finally {
      cache.stop()
    }
  })

  it('a lookup that started before a late-committing event is not cached', async () => {
    const cache = createCredentialCache({ db: platform.db, clock: platform.clock, pollMs: 60_000 })
    await cache.start()
    try {
      let answer: (value: TokenPrincipal | undefined) => void = () => {}
      let stall = true
      let lookups = 0
      const auth = cache.authenticator({
        verifyApiKey: async () => undefined,
        verifyAccessToken: async (token) => {
          lookups += 1
          if (token !== 'racing' || !stall) return undefined
          stall = false
          return new Promise((resolve) => {
            answer = resolve
          })
        },
      })
      // `racing` draws the earlier event id; another event, drawn after it, commits and is read first.
      const racing = await openRevocation('racing')
      const other = await openRevocation('other')
      await other.commit()
      await cache.sync()
      // A lookup starts (the database still says the token is valid), the revocation commits and is
      // read, then the lookup answers with what it read before.
      const pending = auth.verifyAccessToken('racing')
      await racing.commit()
      await cache.sync()
      answer(principal('racing'))
      assert.notEqual(await pending, undefined, 'the lookup answers what the database said when it read')
      const before = lookups
      assert.equal(await auth.verifyAccessToken('racing'), undefined, 'the revoked token is refused')
      assert.equal(lookups, before + 1, 'the next check goes to the database: the racing answer was not cached')
    } finally {
      cache.stop()
    }
  })
})
