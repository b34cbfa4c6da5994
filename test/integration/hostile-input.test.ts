import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { sql } from 'kysely'
import { SCOPES } from '../../src/core/scopes.js'
import { pay } from '../helpers/ledger.js'
import { type SandboxApp, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'

/**
 * Hostile numbers, cursors and text: a number or cursor no record can
 * have is a 400 in the family's shape, never a 500; text is stored exactly as it was accepted, on
 * both backends, or refused.
 */

const cursorOf = (decoded: string) => Buffer.from(decoded, 'utf8').toString('base64url')
const key = (app: SandboxApp) => ({ authorization: `Key ${app.api_key}` })
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

function assertHorizonBadRequest(response: LightMyRequestResponse, field: string, what: string): void {
  assert.equal(response.statusCode, 400, `${what}: ${response.body}`)
  assert.match(String(response.headers['content-type']), /^application\/problem\+json/, what)
  const body = response.json() as { type: string; status: number; extras?: { invalid_field?: string } }
  assert.equal(body.type, 'https://stellar.org/horizon-errors/bad_request', what)
  assert.equal(body.status, 400, what)
  assert.equal(body.extras?.invalid_field, field, what)
}

function assertInvalidArguments(response: LightMyRequestResponse, what: string, code = 'invalid_arguments'): void {
  assert.equal(response.statusCode, 400, `${what}: ${response.body}`)
  const body = response.json() as { error: string; error_message: string }
  assert.equal(body.error, code, `${what}: ${response.body}`)
  assert.equal(typeof body.error_message, 'string', what)
}

/** Integers a path or query parameter might carry that no bigint column holds, or that are not integers at all. */
const NOT_INT64 = ['9223372036854775808', '18446744073709551616', '99999999999999999999', '-1', '1.5', '1e3', '+1', '0x10', '-0', ' 1']

describe('hostile numbers and cursors', () => {
  let platform: TestPlatform
  let app: SandboxApp
  let token: string
  let userId: string
  let txid: string
  let address: string

  before(async () => {
    platform = await startPlatform()
    const sb = sandbox(platform.app)
    app = await sb.createApp()
    const user = await sb.createUser()
    userId = user.user_id
    address = user.wallet.address
    token = (await sb.authenticate(app.app_id, user.user_id, [...SCOPES])).accessToken
    txid = await pay(platform.app, { seed: user.wallet.seed, to: app.wallet.address, amount: '1', memo: 'hostile' })
  })
  after(() => platform.close())

  it('GET /ledger/ledgers/9223372036854775808 is a 400 bad_request (was a 500: out of range for type bigint)', async () => {
    const response = await platform.app.inject({ method: 'GET', url: '/ledger/ledgers/9223372036854775808' })
    assertHorizonBadRequest(response, 'sequence', 'ledger 2^63')
  })

  it('a ledger sequence is an integer from 0 to 2^63 − 1: anything else is 400, a well-formed unknown one 404', async () => {
    for (const sequence of NOT_INT64) {
      const response = await platform.app.inject({ method: 'GET', url: `/ledger/ledgers/${encodeURIComponent(sequence)}` })
      assertHorizonBadRequest(response, 'sequence', `ledger ${sequence}`)
    }
    for (const sequence of ['9223372036854775807', '0', '4294967296']) {
      const response = await platform.app.inject({ method: 'GET', url: `/ledger/ledgers/${sequence}` })
      assert.equal(response.statusCode, 404, `ledger ${sequence}: ${response.body}`)
    }
    for (const sequence of ['1', '01']) {
      const response = await platform.app.inject({ method: 'GET', url: `/ledger/ledgers/${sequence}` })
      assert.equal(response.statusCode, 200, `ledger ${sequence}: ${response.body}`)
      assert.equal(response.json().sequence, 1)
    }
  })

  it('a paging token past 2^63 − 1 is a 400 on every Horizon list; 2^63 − 1 itself pages normally', async () => {
    const lists = [
      '/ledger/transactions',
      '/ledger/ledgers',
      `/ledger/accounts/${address}/transactions`,
      `/ledger/transactions/${txid}/operations`,
    ]
    for (const list of lists) {
      for (const order of ['asc', 'desc']) {
        for (const cursor of ['9223372036854775808', '18446744073709551616', '99999999999999999999']) {
          const response = await platform.app.inject({ method: 'GET', url: `${list}?order=${order}&cursor=${cursor}` })
          assertHorizonBadRequest(response, 'cursor', `${list} ${order} ${cursor}`)
        }
        for (const cursor of ['9223372036854775807', '0', '000']) {
          const response = await platform.app.inject({ method: 'GET', url: `${list}?order=${order}&cursor=${cursor}` })
          assert.equal(response.statusCode, 200, `${list} ${order} ${cursor}: ${response.body}`)
        }
      }
    }
  })

  it('a notification cursor holding a date no backend can store is a 400 (was a 500), on the client and the sandbox views', async () => {
    const reported = ['-271821-04-20T00:00:00.000Z|x', '+275760-09-13T00:00:00.000Z|x']
    const impossible = [
      ...reported,
      '-004713-01-01T00:00:00.000Z|ntf_x',
      '+200000-12-31T00:00:00.000Z|ntf_x',
      '+010000-01-01T00:00:00.000Z|ntf_x',
      '1969-12-31T23:59:59.999Z|ntf_x',
      '0000-01-01T00:00:00.000Z|ntf_x',
      '2026-01-01T00:00:00.000Z|\u0000',
      '2026-01-01T00:00:00.000Z|ntf_\u0000',
      '2026-01-01T00:00:00.000Z|ntf_\ufffd',
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:00:00.000Z|',
      '2026-01-01T00:00:00.000Z|a|b',
      '|ntf_x',
      '2026-01-01|ntf_x',
      '2026-01-01T00:00:00Z|ntf_x',
      `2026-01-01T00:00:00.000Z|${'x'.repeat(65)}`,
      '9223372036854775808|ntf_x',
      'NaN|ntf_x',
    ]
    const cursors = [
      ...impossible.map(cursorOf),
      // Bytes that are not UTF-8, and base64url with characters Node's decoder would skip.
      Buffer.concat([Buffer.from('2026-01-01T00:00:00.000Z|'), Buffer.from([0xff, 0xfe, 0xc0, 0x80])]).toString('base64url'),
      `${cursorOf('2026-01-01T00:00:00.000Z|ntf_x')}!!`,
      `*${cursorOf('2026-01-01T00:00:00.000Z|ntf_x')}`,
    ]
    for (const cursor of cursors) {
      for (const [url, headers] of [
        [`/v2/client/notifications?cursor=${encodeURIComponent(cursor)}`, bearer(token)],
        [`/sandbox/users/${userId}/notifications?cursor=${encodeURIComponent(cursor)}`, {}],
        [`/sandbox/users/${userId}/notifications?app_id=${app.app_id}&cursor=${encodeURIComponent(cursor)}`, {}],
      ] as const) {
        const response = await platform.app.inject({ method: 'GET', url, headers })
        const decoded = Buffer.from(cursor, 'base64url').toString('utf8')
        assertInvalidArguments(response, `${url.split('?')[0]} cursor ${JSON.stringify(decoded)}`)
      }
    }
  })

  it('a number in a query not written in decimal digits is 400, not served as another number (limit=1.5 was served as 1, 0x10 as 16)', async () => {
    for (const limit of ['1.5', '1.0', '0x10', '+1', ' 1', '1 ', '1e1', '-0']) {
      for (const [url, headers] of [
        [`/v2/client/notifications?limit=${encodeURIComponent(limit)}`, bearer(token)],
        [`/sandbox/apps?limit=${encodeURIComponent(limit)}`, {}],
      ] as const) {
        assertInvalidArguments(await platform.app.inject({ method: 'GET', url, headers }), url)
      }
      assertHorizonBadRequest(
        await platform.app.inject({ method: 'GET', url: `/ledger/ledgers?limit=${encodeURIComponent(limit)}` }),
        'limit',
        `ledgers limit ${limit}`,
      )
    }
    for (const limit of ['7', '007']) {
      const response = await platform.app.inject({ method: 'GET', url: `/sandbox/apps?limit=${limit}`, headers: {} })
      assert.equal(response.statusCode, 200, `limit ${limit}: ${response.body}`)
    }
  })

  it('the cursor range, 1970 to 9999, is one both backends store: its ends page normally', async () => {
    for (const decoded of ['1970-01-01T00:00:00.000Z|ntf_x', '9999-12-31T23:59:59.999Z|ntf_x']) {
      const response = await platform.app.inject({
        method: 'GET',
        url: `/v2/client/notifications?cursor=${cursorOf(decoded)}`,
        headers: bearer(token),
      })
      assert.equal(response.statusCode, 200, `${decoded}: ${response.body}`)
    }
  })
})

/* ------------------------------------------------------------------ text */

/** Text that must be stored and answered exactly as sent. */
const KEPT: Record<string, string> = {
  'a leading BOM': '\ufeffBOM first',
  'only a BOM': '\ufeff',
  'a BOM inside': 'a\ufeffb',
  'mixed text': '\ufeffé 😀\u200b\u202eend\u00a0',
}
/** Text that cannot be stored exactly, so must be refused. */
const REFUSED: Record<string, string> = {
  'a lone high surrogate': 'a\ud800b',
  'a lone low surrogate': 'a\udc00b',
  'a high surrogate at the end': '\ufeffx\ud83d',
  'a swapped pair': '\ude00\ud83d',
  'a NUL': 'a\u0000b',
}

interface TextField {
  name: string
  table: string
  /** Sends the text; answers the response, the value the response echoes, and (when accepted) a way to read it back. */
  send(
    text: string,
  ): Promise<{ response: LightMyRequestResponse; echoed?: unknown; readBack?: () => Promise<unknown>; stored?: () => Promise<unknown> }>
  refusedStatus: number
  refusedCode?: string
}

describe('text is stored exactly as sent, or refused', () => {
  let platform: TestPlatform
  let app: SandboxApp
  let token: string
  let uid: string
  const inject = (options: InjectOptions) => platform.app.inject(options)
  const one = async (query: ReturnType<typeof sql>) => (await query.execute(platform.db)).rows[0] as Record<string, unknown> | undefined

  before(async () => {
    platform = await startPlatform()
    const sb = sandbox(platform.app)
    app = await sb.createApp()
    const user = await sb.createUser()
    const auth = await sb.authenticate(app.app_id, user.user_id, [...SCOPES])
    token = auth.accessToken
    uid = auth.user.uid
  })
  after(() => platform.close())

  const a2u = async (payment: Record<string, unknown>) => {
    const response = await inject({
      method: 'POST',
      url: '/v2/payments',
      headers: key(app),
      payload: { payment: { amount: 1, uid, ...payment } },
    })
    const id = response.statusCode === 200 ? (response.json().identifier as string) : undefined
    const read = async () => (await inject({ method: 'GET', url: `/v2/payments/${id}`, headers: key(app) })).json()
    // Another A2U payment for the user needs this one finished.
    const done = async () => {
      if (id !== undefined)
        assert.equal((await inject({ method: 'POST', url: `/v2/payments/${id}/cancel`, headers: key(app) })).statusCode, 200)
    }
    return { response, id, read, done }
  }

  const fields: TextField[] = [
    {
      name: 'A2U memo',
      table: 'payments',
      refusedStatus: 400,
      send: async (text) => {
        const { response, id, read, done } = await a2u({ memo: text, metadata: {} })
        const echoed = response.statusCode === 200 ? response.json().memo : undefined
        const readBack = async () => (await read()).memo
        const stored = async () => (await one(sql`select memo from payments where identifier = ${id}`))?.memo
        return { response, echoed, readBack: async () => readBack().finally(done), stored }
      },
    },
    {
      name: 'A2U metadata value',
      table: 'payments',
      refusedStatus: 400,
      refusedCode: 'invalid_metadata',
      send: async (text) => {
        const { response, id, read, done } = await a2u({ memo: 'm', metadata: { note: text } })
        const echoed = response.statusCode === 200 ? response.json().metadata.note : undefined
        const stored = async () => (await one(sql`select metadata->>'note' as note from payments where identifier = ${id}`))?.note
        return { response, echoed, readBack: async () => (await read()).metadata.note, stored: async () => stored().finally(done) }
      },
    },
    {
      name: 'A2U metadata key',
      table: 'payments',
      refusedStatus: 400,
      refusedCode: 'invalid_metadata',
      send: async (text) => {
        const { response, id, read, done } = await a2u({ memo: 'm', metadata: { [text]: 1 } })
        const echoed = response.statusCode === 200 ? Object.keys(response.json().metadata)[0] : undefined
        const stored = async () =>
          (await one(sql`select (select k from jsonb_object_keys(metadata) k) as k from payments where identifier = ${id}`))?.k
        return {
          response,
          echoed,
          readBack: async () => Object.keys((await read()).metadata)[0],
          stored: async () => stored().finally(done),
        }
      },
    },
    {
      name: 'U2A memo',
      table: 'payments',
      refusedStatus: 400,
      send: async (text) => {
        const response = await inject({
          method: 'POST',
          url: '/v2/client/payments',
          headers: bearer(token),
          payload: { amount: 1, memo: text, metadata: {} },
        })
        const id = response.statusCode === 201 ? (response.json().identifier as string) : undefined
        const done = async () => {
          if (id !== undefined)
            assert.equal(
              (await inject({ method: 'POST', url: `/v2/client/payments/${id}/cancel`, headers: bearer(token) })).statusCode,
              200,
            )
        }
        return {
          response,
          echoed: id === undefined ? undefined : response.json().memo,
          readBack: async () => {
            const memo = (await inject({ method: 'GET', url: `/v2/client/payments/${id}`, headers: bearer(token) })).json().memo
            await done()
            return memo
          },
          stored: async () => (await one(sql`select memo from payments where identifier = ${id}`))?.memo,
        }
      },
    },
    {
      name: 'app name',
      table: 'apps',
      refusedStatus: 400,
      send: async (text) => {
        const response = await inject({ method: 'POST', url: '/sandbox/apps', payload: { name: text } })
        const id = response.statusCode === 201 ? (response.json().app_id as string) : undefined
        return {
          response,
          echoed: id === undefined ? undefined : response.json().name,
          readBack: async () => (await inject({ method: 'GET', url: `/sandbox/apps/${id}` })).json().name,
          stored: async () => (await one(sql`select name from apps where id = ${id}`))?.name,
        }
      },
    },
    ...(['title', 'body', 'subroute'] as const).map(
      (field): TextField => ({
        name: `notification ${field}`,
        table: 'notifications',
        refusedStatus: 422,
        send: async (text) => {
          const value = field === 'subroute' ? `/${text}` : text
          const notification = { title: 'Title', body: 'Body', subroute: '/', user_uid: uid, [field]: value }
          const response = await inject({
            method: 'POST',
            url: '/v2/in_app_notifications/notify',
            headers: key(app),
            payload: { notifications: [notification] },
          })
          const delivered = response.statusCode === 201 ? (response.json().delivered_notifications[0] as Record<string, string>) : undefined
          const strip = (v: unknown) => (field === 'subroute' && typeof v === 'string' ? v.slice(1) : v)
          return {
            response,
            echoed: strip(delivered?.[field]),
            readBack: async () => {
              const list = (await inject({ method: 'GET', url: '/v2/client/notifications?limit=100', headers: bearer(token) })).json()
              return strip((list.notifications as Array<Record<string, string>>).find((n) => n.id === delivered?.id)?.[field])
            },
            stored: async () => strip((await one(sql`select ${sql.ref(field)} as v from notifications where id = ${delivered?.id}`))?.v),
          }
        },
      }),
    ),
  ]

  for (const field of fields) {
    it(`${field.name}: a BOM, a BOM inside, mixed text are answered, read back and stored exactly as sent`, async () => {
      for (const [what, text] of Object.entries(KEPT)) {
        const { response, echoed, readBack, stored } = await field.send(text)
        assert.ok(response.statusCode < 300, `${field.name}, ${what}: ${response.statusCode} ${response.body}`)
        assert.equal(echoed, text, `${field.name}, ${what}: the create answer`)
        assert.equal(await stored?.(), text, `${field.name}, ${what}: the stored value (SQL)`)
        assert.equal(await readBack?.(), text, `${field.name}, ${what}: read back through the API`)
      }
    })

    it(`${field.name}: a lone surrogate or a NUL is refused (${field.refusedStatus}) and nothing is stored`, async () => {
      for (const [what, text] of Object.entries(REFUSED)) {
        const before = await one(sql`select count(*)::int as n from ${sql.table(field.table)}`)
        const { response } = await field.send(text)
        if (field.refusedStatus === 422) {
          assert.equal(response.statusCode, 422, `${field.name}, ${what}: ${response.body}`)
          assert.match((response.json() as { error: string }).error, /NUL|unpaired surrogate/, `${field.name}, ${what}`)
        } else assertInvalidArguments(response, `${field.name}, ${what}`, field.refusedCode)
        const afterwards = await one(sql`select count(*)::int as n from ${sql.table(field.table)}`)
        assert.deepEqual(afterwards, before, `${field.name}, ${what}: nothing stored`)
      }
    })
  }

  it('username: only letters, digits and underscores, so a BOM, a surrogate or a NUL is 400', async () => {
    for (const text of [...Object.values(KEPT), ...Object.values(REFUSED)]) {
      const response = await inject({ method: 'POST', url: '/sandbox/users', payload: { username: `user${text}` } })
      assertInvalidArguments(response, `username ${JSON.stringify(text)}`)
    }
  })

  it('a lone surrogate in a path or query string that reaches a lookup is 400, not a lookup of U+FFFD', async () => {
    const response = await inject({
      method: 'POST',
      url: '/v2/payments',
      headers: key(app),
      payload: { payment: { amount: 1, memo: 'm', metadata: {}, uid: 'a\ud800' } },
    })
    assertInvalidArguments(response, 'uid with a lone surrogate')
  })
})
