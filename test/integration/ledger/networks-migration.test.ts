/**
 * Migration 0029 (two ledgers) from a database as the previous release left it: one ledger whose
 * transactions were signed under either passphrase. Each row goes to the network it was verified
 * under, nothing is lost, and the supply check balances on each network after the upgrade.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, it } from 'node:test'
import { Keypair } from '@stellar/stellar-base'
import { type Kysely, sql } from 'kysely'
import { issuingFactory } from '../../../src/admin/issuing.js'
import { migrateToLatest } from '../../../src/db/migrate.js'
import { ledgerClient, type TransactionBody } from '../../helpers/ledger-client.js'
import { migrateDownToBefore } from '../../helpers/migrations.js'
import { json, sandbox, TEST_DB, usePlatform } from '../../helpers/platform.js'

const hashOf = (label: string) => createHash('sha256').update(label).digest('hex')

describe(`migration 0029: one ledger becomes two (${TEST_DB})`, () => {
  const platform = usePlatform()
  const { build, submit, get } = ledgerClient(platform)

  it('puts each row on the network it was verified under; the supply balances on each network; the ledgers work on', async () => {
    const sb = sandbox(platform.app)
    const mainnetApp = await sb.createApp(undefined, 'Pi Network')
    const testnetApp = await sb.createApp(undefined, 'Pi Testnet')
    const user = Keypair.random()
    const issuer = Keypair.random().publicKey()
    const [I, U, A, B] = [issuer, user.publicKey(), mainnetApp.wallet.address, testnetApp.wallet.address]

    await migrateDownToBefore(platform.db as Kysely<unknown>, platform.schema, '0029-ledger-networks')
    // The previous release's one ledger: the issuer minted 100 + fee for an operator's issue (paid under
    // Pi Network) and 5 + fee for the faucet (under Pi Testnet); the user paid the Mainnet app 10 under
    // Pi Network, and the Testnet app 20 under Pi Testnet, more test-π than the faucet gave them.
    const db = platform.db as Kysely<unknown>
    await sql`delete from ledger_operations`.execute(db)
    await sql`delete from ledger_transactions`.execute(db)
    await sql`delete from ledger_fundings`.execute(db)
    await sql`delete from ledger_accounts`.execute(db)
    await sql`delete from audit_log`.execute(db)
    await sql`insert into platform_meta (key, value) values ('issuer', ${JSON.stringify({ address: I, seed: 'sealed' })})`.execute(db)
    const at = sql`now()`
    for (const [address, balance, sequence] of [
      [I, '0', '2'],
      [U, '74.9999800', '2'],
      [A, '10', '0'],
      [B, '20', '0'],
    ] as const) {
      await sql`insert into ledger_accounts (address, balance, sequence, created_at) values (${address}, ${balance}, ${sequence}, ${at})`.execute(
        db,
      )
    }
    await sql`insert into ledger_fundings (address, amount, created_at) values (${I}, 100.00001, ${at}), (${I}, 5.00001, ${at})`.execute(db)
    const txs = [
      { hash: hashOf('issue'), ledger: 1, order: 1, network: 'Pi Network', source: I, seq: 1, to: U, amount: '100', pool: 100 },
      { hash: hashOf('faucet'), ledger: 2, order: 1, network: 'Pi Testnet', source: I, seq: 2, to: U, amount: '5', pool: 200 },
      { hash: hashOf('mainnet app'), ledger: 3, order: 1, network: 'Pi Network', source: U, seq: 1, to: A, amount: '10', pool: 400 },
      // One ledger held transactions of both networks: this one was second in it.
      { hash: hashOf('testnet app'), ledger: 3, order: 2, network: 'Pi Testnet', source: U, seq: 2, to: B, amount: '20', pool: 400 },
    ]
    for (const tx of txs) {
      await sql`
        insert into ledger_transactions (hash, ledger, application_order, network, source_account, source_account_sequence, fee_charged,
          max_fee, operation_count, memo_type, envelope_xdr, result_xdr, created_at, fee_pool)
        values (${tx.hash}, ${tx.ledger}, ${tx.order}, ${tx.network}, ${tx.source}, ${tx.seq}, 100, 100, 1, 'none', 'AAAA', 'AAAA', ${at},
          ${tx.pool})`.execute(db)
      await sql`
        insert into ledger_operations (transaction_hash, index, type, "from", "to", amount, created_at)
        values (${tx.hash}, 0, 'payment', ${tx.source}, ${tx.to}, ${tx.amount}, ${at})`.execute(db)
    }
    await sql`select setval('ledger_numbers', 3)`.execute(db)
    for (const [action, details, n] of [
      ['issue', { amount: '100.0000000', minted: '100.0000100', to: U }, 1],
      ['faucet', { amount: '5.0000000', minted: '5.0000100', to: U, network: 'Pi Testnet' }, 2],
    ] as const) {
      await sql`insert into audit_log (actor, action, target, details, prev_hash, hash)
        values ('test', ${action}, ${U}, ${JSON.stringify(details)}::jsonb, ${hashOf(`p${n}`)}, ${hashOf(`h${n}`)})`.execute(db)
    }

    await migrateToLatest(db, platform.schema)

    const accounts = await sql<{ network: string; address: string; balance: string; sequence: string }>`
      select network, address, balance::text as balance, sequence::text as sequence from ledger_accounts order by address, network`.execute(
      db,
    )
    const balance = (network: string, address: string) =>
      accounts.rows.find((row) => row.network === network && row.address === address)?.balance
    // The user: the operator's issue stays real π, less the Mainnet payment; the Testnet payment spent
    // more test-π than the faucet gave, so Pi Testnet funds the difference (marked network_split).
    assert.equal(balance('Pi Network', U), '89.9999900')
    assert.equal(balance('Pi Testnet', U), '0.0000000')
    assert.equal(balance('Pi Network', A), '10.0000000')
    assert.equal(balance('Pi Testnet', A), '0.0000000')
    assert.equal(balance('Pi Testnet', B), '20.0000000')
    assert.equal(balance('Pi Network', B), '0.0000000')
    assert.equal(balance('Pi Network', I), '0.0000000')
    assert.equal(balance('Pi Testnet', I), '0.0000000')
    assert.equal(accounts.rows.length, 8, 'every account on both networks')
    for (const row of accounts.rows.filter((r) => r.address === U)) assert.equal(row.sequence, '2', 'one sequence across networks')

    const fundings = await sql<{ network: string; address: string; amount: string; network_split: boolean }>`
      select network, address, amount::text as amount, network_split from ledger_fundings order by id`.execute(db)
    assert.deepEqual(
      fundings.rows.map((f) => [f.network, f.address, f.amount, f.network_split]),
      [
        ['Pi Network', I, '100.0000100', false],
        ['Pi Testnet', I, '5.0000100', false],
        ['Pi Testnet', U, '15.0000100', true],
      ],
    )
    const moved = await sql<{ hash: string; network: string; ledger: string; application_order: number; fee_pool: string }>`
      select hash, network, ledger::text as ledger, application_order, fee_pool::text as fee_pool from ledger_transactions`.execute(db)
    const tx = (label: string) => moved.rows.find((row) => row.hash === hashOf(label))
    assert.deepEqual([tx('testnet app')?.network, tx('testnet app')?.ledger, tx('testnet app')?.application_order], ['Pi Testnet', '3', 1])
    assert.deepEqual([tx('mainnet app')?.fee_pool, tx('testnet app')?.fee_pool], ['200', '200'], "each network's own fees")

    const books = await issuingFactory({
      db: platform.db,
      clock: platform.clock,
      secretKey: platform.secretKey,
      actor: 'test',
    }).supplyCheck()
    assert.equal(books.balanced, true, JSON.stringify(books))
    const of = (network: string) => books.networks.find((n) => n.network === network)
    assert.deepEqual(
      [of('Pi Network')?.total_issued, of('Pi Network')?.total_audited, of('Pi Network')?.total_split],
      ['100.0000100', '100.0000100', '0.0000000'],
    )
    assert.deepEqual(
      [of('Pi Testnet')?.total_issued, of('Pi Testnet')?.total_audited, of('Pi Testnet')?.total_faucet, of('Pi Testnet')?.total_split],
      ['20.0000200', '20.0000200', '5.0000100', '15.0000100'],
    )

    // The ledgers go on: the user pays the Mainnet app under Pi Network through /ledger, at the next sequence.
    const paid = await submit(await build({ from: user, to: A, amount: '1', network: 'Pi Network' }))
    assert.equal(paid.statusCode, 200, paid.body)
    assert.ok(BigInt(json<TransactionBody>(paid).ledger) > 3n, 'Mainnet numbers go on past the one ledger')
    const testnetLedgers = json<{ _embedded: { records: Array<{ sequence: number }> } }>(await get('/ledger/ledgers?order=asc'))
    assert.deepEqual(
      testnetLedgers._embedded.records.map((l) => l.sequence),
      [2, 3],
      "/ledger shows Pi Testnet's ledgers only",
    )
    assert.equal(
      (await issuingFactory({ db: platform.db, clock: platform.clock, secretKey: platform.secretKey, actor: 'test' }).supplyCheck())
        .balanced,
      true,
    )
  })
})
