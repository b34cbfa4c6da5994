import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { Account, Asset, Keypair, Operation, TransactionBuilder } from '@stellar/stellar-base'
import { type RawResponse, rawRequest } from '../helpers/raw-http.js'
import { type ClientPlatform, startClientPlatform } from './client-platform.js'

/** A port nothing listens on now (the server process takes it next). */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise((resolve) => server.close(resolve))
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}

type Balances = { balances: Array<{ asset_type: string; balance: string }> }

/**
 * Each network's Horizon at the root of its own origin, called with the exact requests Soneso's
 * stellar-php-sdk (under the official pi-php) builds when given just the origin (issue #39; PHP is
 * not installed here, so its requests are sent as raw bytes): `GET /fee_stats`, `/accounts/{id}`,
 * `/ledgers`, `/accounts?signer=`, and `POST /transactions?tx=<envelope>` with no body and no
 * Content-Type (with Content-Length: 0, and with none). Each origin answers its own network's
 * ledger, and a transaction submitted there moves money on that network only.
 */
describe("Soneso's PHP SDK's requests at each network's own Horizon origin", () => {
  let platform: ClientPlatform
  const ports: Record<'Pi Testnet' | 'Pi Network', number> = { 'Pi Testnet': 0, 'Pi Network': 0 }

  before(async () => {
    ports['Pi Testnet'] = await freePort()
    ports['Pi Network'] = await freePort()
    platform = await startClientPlatform({
      PLINTH_TESTNET_HORIZON_PORT: String(ports['Pi Testnet']),
      PLINTH_MAINNET_HORIZON_PORT: String(ports['Pi Network']),
    })
  })
  after(async () => {
    await platform?.close()
  })

  const fund = async (address: string, amount: string, network: string) => {
    const answer = await platform.node.inject({ method: 'POST', url: '/sandbox/ledger/fund', payload: { address, amount, network } })
    assert.equal(answer.statusCode, 200, answer.body)
  }

  for (const network of ['Pi Testnet', 'Pi Network'] as const) {
    const other = network === 'Pi Testnet' ? 'Pi Network' : 'Pi Testnet'
    it(`${network}: fee_stats, an account, the ledgers, accounts by signer, and a transaction as a query with no body`, async () => {
      const port = ports[network]
      const origin = `http://127.0.0.1:${port}`
      /** One request as the PHP SDK's Guzzle sends it: no Content-Type; `length` its Content-Length, if any. */
      const send = async (method: 'GET' | 'POST', target: string, length?: string): Promise<RawResponse> =>
        rawRequest(
          port,
          [
            `${method} ${target} HTTP/1.1`,
            `Host: 127.0.0.1:${port}`,
            'Accept: application/json',
            'User-Agent: GuzzleHttp/7',
            ...(length === undefined ? [] : [`Content-Length: ${length}`]),
            'Connection: close',
            '',
            '',
          ].join('\r\n'),
        )
      const json = <T>(response: RawResponse): T => {
        assert.equal(response.status, 200, `${response.status} ${response.body}`)
        return JSON.parse(response.body) as T
      }

      const [from, to, third] = [Keypair.random(), Keypair.random(), Keypair.random()]
      // Different balances on each network: an origin that read the other network's would show it.
      for (const key of [from, to, third]) {
        await fund(key.publicKey(), network === 'Pi Testnet' ? '100' : '50', network)
        await fund(key.publicKey(), '9', other)
      }
      const start = network === 'Pi Testnet' ? '100.0000000' : '50.0000000'

      const fees = json<{ last_ledger_base_fee: string }>(await send('GET', '/fee_stats'))
      assert.equal(fees.last_ledger_base_fee, '100')

      const account = json<Balances & { id: string; sequence: string }>(await send('GET', `/accounts/${from.publicKey()}`))
      assert.equal(account.id, from.publicKey())
      assert.equal(account.balances.find((b) => b.asset_type === 'native')?.balance, start)

      const signed = json<{ _embedded: { records: Array<Balances & { id: string }> } }>(
        await send('GET', `/accounts?signer=${from.publicKey()}`),
      )
      assert.deepEqual(
        signed._embedded.records.map((r) => [r.id, r.balances.find((b) => b.asset_type === 'native')?.balance]),
        [[from.publicKey(), start]],
      )

      // Two submissions, as Soneso sends them: `?tx=` and no body, with Content-Length: 0 and with none.
      let sequence = account.sequence
      for (const [receiver, length] of [
        [to, '0'],
        [third, undefined],
      ] as const) {
        const source = new Account(from.publicKey(), sequence)
        const tx = new TransactionBuilder(source, { fee: '100', networkPassphrase: network })
          .addOperation(Operation.payment({ destination: receiver.publicKey(), asset: Asset.native(), amount: '2' }))
          .setTimeout(120)
          .build()
        tx.sign(from)
        sequence = source.sequenceNumber()
        const envelope = tx.toEnvelope().toXDR('base64')
        const submitted = json<{ hash: string; successful: boolean }>(
          await send('POST', `/transactions?${new URLSearchParams({ tx: envelope })}`, length),
        )
        assert.equal(submitted.hash, tx.hash().toString('hex'))
        const paid = json<Balances>(await send('GET', `/accounts/${receiver.publicKey()}`))
        assert.equal(paid.balances.find((b) => b.asset_type === 'native')?.balance, network === 'Pi Testnet' ? '102.0000000' : '52.0000000')
      }
      // The ledgers the two submissions closed, on this network.
      const ledgers = json<{ _embedded: { records: Array<{ _links: { self: { href: string } } }> } }>(
        await send('GET', '/ledgers?order=desc&limit=1'),
      )
      assert.equal(ledgers._embedded.records.length, 1)
      assert.ok(ledgers._embedded.records[0]?._links.self.href.startsWith(origin), 'links built for the origin')

      // The other network's ledger moved nothing.
      const elsewhere = await platform.node.inject({ method: 'GET', url: `/sandbox/ledger/accounts/${to.publicKey()}` })
      const balances = (elsewhere.json() as { balances: Array<{ network: string; balance: string }> }).balances
      assert.equal(balances.find((b) => b.network === other)?.balance, '9.0000000')
    })
  }
})
