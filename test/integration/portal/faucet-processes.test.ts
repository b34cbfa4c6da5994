/**
 * The faucet's daily limit across two `src/server.ts` processes on one PostgreSQL schema
 * (docs/ledger.md, "Friendbot"): requests for one address racing on both processes, more than
 * the limit, pay exactly the limit; the rest are refused and move nothing; the books balance.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Keypair } from '@stellar/stellar-base'
import { GOOD_PASSWORD, SESSION_COOKIE } from '../../helpers/accounts.js'
import { TEST_DB } from '../../helpers/platform.js'
import { type Cluster, runPlinthCli, startCluster } from '../../helpers/server-process.js'

const PER_ADDRESS = 3

describe('the faucet across two production processes', { skip: TEST_DB !== 'postgres' && 'two processes need PostgreSQL' }, () => {
  let cluster: Cluster

  const friendbot = async (index: number, addr: string) => {
    const server = cluster.servers[index % cluster.servers.length]
    assert.ok(server)
    const response = await fetch(`${server.base}/ledger/friendbot?addr=${addr}`)
    return { status: response.status, body: (await response.json()) as Record<string, unknown> }
  }

  before(async () => {
    cluster = await startCluster({
      processes: 2,
      env: { PLINTH_MODE: 'production', PLINTH_FAUCET_AMOUNT: '7', PLINTH_FAUCET_DAILY_PER_ADDRESS: String(PER_ADDRESS) },
    })
  })

  after(async () => {
    await cluster?.close()
  })

  it('eight racing requests for one address on two processes: exactly the limit paid, the rest refused (429)', async () => {
    const address = Keypair.random().publicKey()
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => friendbot(i, address)))
    assert.deepEqual(
      answers.map((a) => a.status).sort(),
      [...Array(PER_ADDRESS).fill(200), ...Array(8 - PER_ADDRESS).fill(429)],
      JSON.stringify(answers.map((a) => a.body)),
    )
    const account = await fetch(`${cluster.servers[1]?.base}/ledger/accounts/${address}`)
    assert.equal(((await account.json()) as { balances: Array<{ balance: string }> }).balances[0]?.balance, (7 * PER_ADDRESS).toFixed(7))

    // The books balance: the faucet's issues, and nothing for the refused requests.
    await runPlinthCli(['admin', 'create-operator', 'olga', '--json'], { env: cluster.setup.env, input: `${GOOD_PASSWORD}\n` })
    const server = cluster.servers[0]
    assert.ok(server)
    const signin = await fetch(`${server.base}/account/signin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'olga', password: GOOD_PASSWORD }),
    })
    const cookie = /plinth_session=([^;]+)/.exec(signin.headers.get('set-cookie') ?? '')?.[1] ?? ''
    const books = (await (
      await fetch(`${server.base}/operator/ledger/check`, { headers: { cookie: `${SESSION_COOKIE}=${cookie}` } })
    ).json()) as Record<string, unknown>
    assert.equal(books.balanced, true, JSON.stringify(books))
    assert.equal(books.total_faucet, (PER_ADDRESS * 7.00001).toFixed(7))
  })
})
