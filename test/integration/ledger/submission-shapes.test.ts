/**
 * `POST /ledger/transactions` as real clients send it, in raw bytes: Horizon reads `tx` from the
 * form or, failing that, the query string, whatever the Content-Type (Soneso's PHP SDK sends
 * `POST /transactions?tx=<envelope>` with no body and no Content-Type). Bad input still gets a
 * Horizon problem, and a refusal moves no money (the ledger check after each test).
 */
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { before, describe, it } from 'node:test'
import type { Keypair } from '@stellar/stellar-base'
import { checkLedgerAfterEach, ledgerClient, type Problem, type TransactionBody } from '../../helpers/ledger-client.js'
import { usePlatform } from '../../helpers/platform.js'
import { type RawResponse, rawRequest } from '../../helpers/raw-http.js'

const PATH = '/ledger/transactions'

describe('POST /ledger/transactions: the shapes real clients send', () => {
  const platform = usePlatform()
  checkLedgerAfterEach(platform)
  const { account, build, hashOf, funded, get } = ledgerClient(platform)
  let port: number
  before(async () => {
    await platform.app.listen({ port: 0, host: '127.0.0.1' })
    port = (platform.app.server.address() as AddressInfo).port
  })

  /** One request as bytes: `headers` as given (no Content-Type unless one is there), then the body. */
  const post = (target: string, headers: string[], body = ''): Promise<RawResponse> =>
    rawRequest(port, [`POST ${target} HTTP/1.1`, 'Host: 127.0.0.1', ...headers, 'Connection: close', '', body].join('\r\n'))
  const query = (envelope: string) => `${PATH}?${new URLSearchParams({ tx: envelope })}`
  const body = <T>(response: RawResponse) => JSON.parse(response.body) as T

  /** A payment of 1 from a fresh account to another: [envelope, sender, receiver]. */
  async function payment(): Promise<[string, Keypair, Keypair]> {
    const from = await funded()
    const to = await funded()
    return [await build({ from, to: to.publicKey(), amount: '1' }), from, to]
  }

  async function assertApplied(response: RawResponse, envelope: string, to: Keypair) {
    assert.equal(response.status, 200, response.body)
    assert.equal(body<TransactionBody>(response).hash, hashOf(envelope))
    assert.equal((await account(to.publicKey())).balance, '101.0000000')
  }

  function assertProblem(response: RawResponse, status: number, type: string): Problem {
    assert.equal(response.status, status, response.body)
    assert.match(response.headers['content-type'] ?? '', /^application\/problem\+json/)
    const problem = body<Problem>(response)
    assert.equal(problem.type, `https://stellar.org/horizon-errors/${type}`)
    assert.equal(problem.status, status)
    return problem
  }

  it("reads tx from the query with no body and no Content-Type (Soneso's PHP SDK), with Content-Length: 0 or none", async () => {
    const [first, , firstTo] = await payment()
    await assertApplied(await post(query(first), ['Content-Length: 0']), first, firstTo)
    const [second, , secondTo] = await payment()
    await assertApplied(await post(query(second), []), second, secondTo)
  })

  it('reads tx from the query with an empty form (axios.post(url)) or empty text/plain (fetch) body', async () => {
    for (const type of ['application/x-www-form-urlencoded', 'text/plain;charset=UTF-8']) {
      const [envelope, , to] = await payment()
      await assertApplied(await post(query(envelope), [`Content-Type: ${type}`, 'Content-Length: 0']), envelope, to)
    }
  })

  it('reads tx from a form body, as stellar-sdk sends it', async () => {
    const [envelope, , to] = await payment()
    const form = new URLSearchParams({ tx: envelope }).toString()
    await assertApplied(
      await post(PATH, ['Content-Type: application/x-www-form-urlencoded', `Content-Length: ${Buffer.byteLength(form)}`], form),
      envelope,
      to,
    )
  })

  it("the body's tx wins over the query's, as Horizon's form value does; an empty one does not", async () => {
    const from = await funded()
    const to = await funded()
    // Two envelopes on one sequence number: the one not taken stays unapplied.
    const inBody = await build({ from, to: to.publicKey(), amount: '1' })
    const inQuery = await build({ from, to: to.publicKey(), amount: '7' })
    const form = new URLSearchParams({ tx: inBody }).toString()
    const both = await post(
      query(inQuery),
      ['Content-Type: application/x-www-form-urlencoded', `Content-Length: ${Buffer.byteLength(form)}`],
      form,
    )
    await assertApplied(both, inBody, to)
    assert.equal((await get(`${PATH}/${hashOf(inQuery)}`)).statusCode, 404)

    const [envelope, , other] = await payment()
    const json = JSON.stringify({ tx: '' })
    await assertApplied(
      await post(query(envelope), ['Content-Type: application/json', `Content-Length: ${Buffer.byteLength(json)}`], json),
      envelope,
      other,
    )
  })

  it('bad input still gets Horizon problems, and moves nothing', async () => {
    const [envelope, from, to] = await payment()
    const before = [await account(from.publicKey()), await account(to.publicKey())]

    const garbage = assertProblem(await post(`${PATH}?tx=AAAA`, ['Content-Length: 0']), 400, 'transaction_malformed')
    assert.equal(garbage.extras?.envelope_xdr, 'AAAA')
    // No tx anywhere.
    assertProblem(await post(PATH, ['Content-Length: 0']), 400, 'bad_request')
    assertProblem(await post(`${PATH}?tx=`, ['Content-Length: 0']), 400, 'bad_request')
    // tx twice in the query: refused naming the field, not one of them picked.
    const twice = `${query(envelope)}&${new URLSearchParams({ tx: envelope })}`
    const repeated = assertProblem(await post(twice, ['Content-Length: 0']), 400, 'bad_request') as Problem & {
      extras: { invalid_field?: string }
    }
    assert.equal(repeated.extras.invalid_field, 'tx')
    // A body the server cannot read is refused, not ignored in favour of the query.
    const form = new URLSearchParams({ tx: envelope }).toString()
    assertProblem(await post(query(envelope), [`Content-Length: ${form.length}`], form), 415, 'unsupported_media_type')
    assertProblem(
      await post(query(envelope), ['Content-Type: text/plain', `Content-Length: ${form.length}`], form),
      415,
      'unsupported_media_type',
    )
    // The query is bounded by the request's head (16 KiB), refused before any route reads it.
    const long = await post(`${PATH}?tx=${'A'.repeat(20_000)}`, ['Content-Length: 0'])
    assert.equal(long.status, 431)
    assert.equal(body<{ error: string }>(long).error, 'headers_too_large')

    assert.deepEqual([await account(from.publicKey()), await account(to.publicKey())], before)
    assert.equal((await get(`${PATH}/${hashOf(envelope)}`)).statusCode, 404)
  })
})
