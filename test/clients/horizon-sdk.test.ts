import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { StrKey, xdr } from '@stellar/stellar-base'
import { Asset, Horizon, Keypair, Memo, Operation, TransactionBuilder } from '@stellar/stellar-sdk'
import { type ClientPlatform, type SignedIn, signedIn, startClientPlatform } from './client-platform.js'

/**
 * stellar-sdk 17's Horizon.Server against a real Plinth process: every CallBuilder of the
 * resources the ledger serves, with call(), next(), prev(), cursor/order/limit, and the link
 * functions the SDK makes of `_links`. `calls` counts the distinct SDK calls exercised.
 */
describe('stellar-sdk Horizon.Server against a real Plinth process', () => {
  let platform: ClientPlatform
  let s: SignedIn
  let server: Horizon.Server
  let sender: Keypair
  let receiver: string
  /** Two transactions: a two-payment one (text memo, time bounds) and a one-payment one. */
  const sent: Array<{ hash: string; envelope: string; amounts: string[] }> = []
  const calls = new Set<string>()
  const used = <T>(name: string, value: T): T => {
    calls.add(name)
    return value
  }

  async function pay(amounts: string[], memo: string): Promise<void> {
    const account = used('loadAccount', await server.loadAccount(sender.publicKey()))
    const bounds = used('fetchTimebounds', await server.fetchTimebounds(120))
    const fee = used('fetchBaseFee', await server.fetchBaseFee())
    const builder = new TransactionBuilder(account, { fee: String(fee), networkPassphrase: s.app.network, timebounds: bounds })
    for (const amount of amounts) builder.addOperation(Operation.payment({ destination: receiver, asset: Asset.native(), amount }))
    const tx = builder.addMemo(Memo.text(memo)).build()
    tx.sign(sender)
    const result = used('submitTransaction', await server.submitTransaction(tx))
    assert.equal(result.hash, Buffer.from(tx.hash()).toString('hex'))
    sent.push({ hash: result.hash, envelope: tx.toXDR(), amounts })
  }

  before(async () => {
    platform = await startClientPlatform()
    s = await signedIn(platform)
    server = new Horizon.Server(`${platform.base}/ledger`, { allowHttp: true })
    sender = Keypair.fromSecret(s.app.wallet.seed)
    receiver = s.user.wallet.address
    await pay(['1.5', '2.25'], 'first')
    await pay(['3'], 'second')
  })
  after(async () => {
    // Kept for the report: how many distinct stellar-sdk calls this suite drives.
    console.log(`stellar-sdk calls exercised: ${calls.size}: ${[...calls].sort().join(', ')}`)
    await platform.close()
  })

  it('root and feeStats: links to every resource', async () => {
    const root = used('root', await server.root())
    assert.equal(root.network_passphrase, 'Pi Testnet')
    const links = ((await (await fetch(`${platform.base}/ledger`)).json()) as { _links: Record<string, { href: string }> })._links
    for (const name of ['self', 'payments', 'operations', 'effects', 'transactions', 'ledgers']) assert.ok(links[name]?.href, name)
    const stats = used('feeStats', await server.feeStats())
    assert.equal(stats.last_ledger_base_fee, '100')
  })

  it('accounts().accountId(): fields and the link functions', async () => {
    const account = used('accounts.accountId', await server.accounts().accountId(receiver).call())
    assert.equal(account.account_id, receiver)
    assert.match(String(account.last_modified_time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
    const ops = used('account.operations()', await account.operations())
    assert.deepEqual(
      ops.records.map((op) => op.transaction_hash),
      [sent[0]?.hash, sent[0]?.hash, sent[1]?.hash],
    )
    const payments = used('account.payments()', await account.payments())
    assert.deepEqual(
      payments.records.map((p) => (p as Horizon.ServerApi.PaymentOperationRecord).amount),
      ['1.5000000', '2.2500000', '3.0000000'],
    )
    const effects = used('account.effects()', await account.effects())
    assert.deepEqual(
      effects.records.map((e) => e.type),
      ['account_credited', 'account_credited', 'account_credited'],
    )
    const txs = used('account.transactions()', await account.transactions())
    assert.deepEqual(
      txs.records.map((t) => t.hash),
      sent.map((t) => t.hash),
    )
  })

  it('transactions: all, forAccount, forLedger, transaction(hash), next/prev, and the record links', async () => {
    const [first, second] = sent
    assert.ok(first !== undefined && second !== undefined)
    const page = used('transactions.call', await server.transactions().forAccount(sender.publicKey()).order('asc').limit(1).call())
    calls.add('transactions.forAccount')
    assert.deepEqual(
      page.records.map((t) => t.hash),
      [first.hash],
    )
    const next = used('page.next', await page.next())
    assert.deepEqual(
      next.records.map((t) => t.hash),
      [second.hash],
    )
    const prev = used('page.prev', await next.prev())
    assert.deepEqual(
      prev.records.map((t) => t.hash),
      [first.hash],
    )
    const all = used('transactions.all', await server.transactions().order('desc').limit(200).call())
    assert.ok(all.records.some((t) => t.hash === second.hash))
    const record = used('transactions.transaction', await server.transactions().transaction(first.hash).call())
    assert.equal(record.memo, 'first')
    assert.equal(record.memo_bytes, Buffer.from('first').toString('base64'))
    assert.equal(record.signatures.length, 1)
    assert.equal(record.fee_account, sender.publicKey())
    assert.ok(record.preconditions?.timebounds?.max_time)
    // The meta XDR decodes: the fee on the source, the sequence bump, then per payment the sender's and receiver's entries.
    // LedgerEntryChanges has no typed decoder: framed as a TransactionMeta v1 (its txChanges, then no operations), it decodes.
    const u32 = (n: number) => Buffer.from([0, 0, 0, n])
    const fee = xdr.TransactionMeta.fromXDR(Buffer.concat([u32(1), Buffer.from(record.fee_meta_xdr, 'base64'), u32(0)]))
      .v1()
      .txChanges()
    assert.equal(fee.length, 2)
    const account = (change: xdr.LedgerEntryChange) => {
      const entry = change.switch().name === 'ledgerEntryState' ? change.state() : change.updated()
      const a = entry.data().account()
      return { id: StrKey.encodeEd25519PublicKey(a.accountId().ed25519()), balance: BigInt(a.balance().toString()) }
    }
    const [feeBefore, feeAfter] = fee.map(account)
    assert.equal(feeBefore?.id, sender.publicKey())
    assert.equal((feeBefore?.balance ?? 0n) - (feeAfter?.balance ?? 0n), 200n)
    const meta = xdr.TransactionMeta.fromXDR(record.result_meta_xdr, 'base64').v2()
    // The ledger's number, drawn at COMMIT, is written into every entry this transaction changed:
    // each `updated`, and each `state` after the first change of its account (the fee's comes before it).
    const lastModified = (change: xdr.LedgerEntryChange) =>
      (change.switch().name === 'ledgerEntryState' ? change.state() : change.updated()).lastModifiedLedgerSeq()
    assert.deepEqual(fee.map(lastModified), [0, record.ledger_attr])
    assert.deepEqual(meta.txChangesBefore().map(lastModified), [record.ledger_attr, record.ledger_attr])
    // Per payment: sender state, sender updated, receiver state, receiver updated. The receiver's
    // first state is from before this ledger; every other entry already has this ledger's number.
    const stamps = meta.operations().map((op) => op.changes().map(lastModified))
    assert.equal(stamps.length, 2)
    assert.ok((stamps[0]?.[2] ?? Number.POSITIVE_INFINITY) < record.ledger_attr)
    assert.deepEqual(
      stamps.map((changes, index) => changes.filter((_, at) => index > 0 || at !== 2)),
      [Array(3).fill(record.ledger_attr), Array(4).fill(record.ledger_attr)],
    )
    const moves = meta.operations().map((op) => op.changes().map(account))
    assert.deepEqual(
      moves.map((changes) => [
        changes[0]?.id,
        (changes[0]?.balance ?? 0n) - (changes[1]?.balance ?? 0n),
        changes[2]?.id,
        (changes[3]?.balance ?? 0n) - (changes[2]?.balance ?? 0n),
      ]),
      [
        [sender.publicKey(), 15_000_000n, receiver, 15_000_000n],
        [sender.publicKey(), 22_500_000n, receiver, 22_500_000n],
      ],
    )
    const byLedger = used('transactions.forLedger', await server.transactions().forLedger(record.ledger_attr).call())
    assert.deepEqual(
      byLedger.records.map((t) => t.hash),
      [first.hash],
    )
    const ops = used('transaction.operations()', await all.records.find((t) => t.hash === first.hash)?.operations())
    assert.equal(ops?.records.length, 2)
    const effects = used('transaction.effects()', await all.records.find((t) => t.hash === first.hash)?.effects())
    assert.deepEqual(
      effects?.records.map((e) => e.type),
      ['account_credited', 'account_debited', 'account_credited', 'account_debited'],
    )
  })

  it('operations: all, operation(id), forAccount, forLedger, forTransaction, cursor', async () => {
    const [first] = sent
    assert.ok(first !== undefined)
    const forTx = used('operations.forTransaction', await server.operations().forTransaction(first.hash).call())
    const [op1, op2] = forTx.records
    assert.ok(op1 !== undefined && op2 !== undefined)
    assert.equal(op1.type, 'payment')
    const one = used('operations.operation', await server.operations().operation(op2.id).call())
    assert.equal((one as Horizon.ServerApi.PaymentOperationRecord).amount, '2.2500000')
    const after = used('operations.cursor', await server.operations().forAccount(receiver).cursor(op1.paging_token).limit(1).call())
    calls.add('operations.forAccount')
    assert.deepEqual(
      after.records.map((op) => op.id),
      [op2.id],
    )
    const all = used('operations.all', await server.operations().order('desc').limit(3).call())
    assert.ok(all.records.length > 0)
    const ledger = (await server.transactions().transaction(first.hash).call()).ledger_attr
    const byLedger = used('operations.forLedger', await server.operations().forLedger(ledger).call())
    assert.deepEqual(
      byLedger.records.map((op) => op.id),
      [op1.id, op2.id],
    )
    const effects = used('operation.effects()', await op1.effects())
    assert.deepEqual(
      effects.records.map((e) => [e.type, e.account]),
      [
        ['account_credited', receiver],
        ['account_debited', sender.publicKey()],
      ],
    )
    const tx = used('operation.transaction()', await op1.transaction())
    assert.equal(tx.hash, first.hash)
  })

  it('payments: all, forAccount, forLedger, forTransaction', async () => {
    const [first, second] = sent
    assert.ok(first !== undefined && second !== undefined)
    const forTx = used('payments.forTransaction', await server.payments().forTransaction(second.hash).call())
    assert.deepEqual(
      forTx.records.map((p) => (p as Horizon.ServerApi.PaymentOperationRecord).amount),
      ['3.0000000'],
    )
    const forAccount = used('payments.forAccount', await server.payments().forAccount(receiver).order('desc').limit(1).call())
    assert.equal(forAccount.records[0]?.transaction_hash, second.hash)
    const ledger = (await server.transactions().transaction(second.hash).call()).ledger_attr
    const byLedger = used('payments.forLedger', await server.payments().forLedger(ledger).call())
    assert.equal(byLedger.records.length, 1)
    const all = used('payments.all', await server.payments().limit(200).call())
    assert.ok(all.records.some((p) => p.transaction_hash === first.hash))
  })

  it('effects: all, forAccount, forLedger, forTransaction, forOperation, paging by effect tokens', async () => {
    const [first] = sent
    assert.ok(first !== undefined)
    const forTx = used('effects.forTransaction', await server.effects().forTransaction(first.hash).limit(3).call())
    assert.equal(forTx.records.length, 3)
    const [e1] = forTx.records
    assert.ok(e1 !== undefined)
    assert.match(e1.id, /^\d{19}-\d{10}$/)
    assert.match(e1.paging_token, /^\d+-1$/)
    const next = await forTx.next()
    assert.equal(next.records.length, 1)
    assert.equal(next.records[0]?.type, 'account_debited')
    const forAccount = used('effects.forAccount', await server.effects().forAccount(sender.publicKey()).call())
    assert.ok(forAccount.records.every((e) => e.account === sender.publicKey()))
    const ledger = (await server.transactions().transaction(first.hash).call()).ledger_attr
    const byLedger = used('effects.forLedger', await server.effects().forLedger(ledger).call())
    assert.equal(byLedger.records.length, 4)
    const opId = e1.paging_token.split('-')[0] ?? ''
    const byOp = used('effects.forOperation', await server.effects().forOperation(opId).call())
    assert.equal(byOp.records.length, 2)
    const all = used('effects.all', await server.effects().order('desc').limit(2).call())
    assert.equal(all.records.length, 2)
  })

  it('ledgers: all, ledger(n), cursor=now', async () => {
    const latest = used('ledgers.all', await server.ledgers().order('desc').limit(1).call())
    const sequence = latest.records[0]?.sequence
    assert.ok(sequence !== undefined)
    const one = used('ledgers.ledger', await server.ledgers().ledger(sequence).call())
    assert.equal((one as unknown as { sequence: number }).sequence, sequence)
    const [newest, before] = (await server.ledgers().order('desc').limit(2).call()).records
    assert.ok(newest !== undefined && before !== undefined)
    assert.equal(newest.prev_hash, before.hash)
    const header = xdr.LedgerHeader.fromXDR(newest.header_xdr, 'base64')
    assert.equal(header.ledgerSeq(), newest.sequence)
    assert.equal(header.previousLedgerHash().toString('hex'), before.hash)
    // The fee pool is the fees burned through each ledger: the newest adds its own fee (100 stroops a payment).
    const stroops = (amount: string) => BigInt(amount.replace('.', ''))
    const newestTx = (await server.transactions().forLedger(newest.sequence).call()).records[0]
    assert.equal(stroops(newest.fee_pool) - stroops(before.fee_pool), BigInt(newestTx?.fee_charged ?? -1))
    assert.ok(Number(newest.total_coins) > 0)
    const now = used('cursor(now)', await server.payments().forAccount(receiver).cursor('now').call())
    assert.deepEqual(now.records, [])
    // The empty page's next link waits after the newest ledger: a payment made now is on it.
    await pay(['0.5'], 'after now')
    const following = await now.next()
    assert.deepEqual(
      following.records.map((p) => p.transaction_hash),
      [sent.at(-1)?.hash],
    )
    const txs = used('ledger.transactions()', await latest.records[0]?.transactions())
    assert.equal(txs?.records.length, 1)
  })

  it('submitTransaction of an applied envelope answers its earlier result, also from two clients at once', async () => {
    const [first] = sent
    assert.ok(first !== undefined)
    const tx = TransactionBuilder.fromXDR(first.envelope, s.app.network)
    const other = new Horizon.Server(`${platform.base}/ledger`, { allowHttp: true })
    const results = await Promise.all([server.submitTransaction(tx), other.submitTransaction(tx), server.submitTransaction(tx)])
    calls.add('submitTransaction (resubmission)')
    for (const result of results) assert.equal(result.hash, first.hash)
    const txs = await server.transactions().forAccount(sender.publicKey()).limit(200).call()
    assert.equal(txs.records.filter((t) => t.hash === first.hash).length, 1)
  })

  it('a new envelope submitted by two clients at once applies once; both get its result', async () => {
    const other = new Horizon.Server(`${platform.base}/ledger`, { allowHttp: true })
    const before = (await server.loadAccount(receiver)).balances[0]?.balance
    const account = await server.loadAccount(sender.publicKey())
    const tx = new TransactionBuilder(account, { fee: '100', networkPassphrase: s.app.network })
      .addOperation(Operation.payment({ destination: receiver, asset: Asset.native(), amount: '1' }))
      .setTimeout(120)
      .build()
    tx.sign(sender)
    const results = await Promise.all([server.submitTransaction(tx), other.submitTransaction(tx)])
    const hash = Buffer.from(tx.hash()).toString('hex')
    assert.deepEqual(
      results.map((r) => r.hash),
      [hash, hash],
    )
    assert.equal(results[0]?.ledger, results[1]?.ledger)
    const after = (await server.loadAccount(receiver)).balances[0]?.balance
    const stroops = (amount: string | undefined) => BigInt((amount ?? '').replace('.', ''))
    assert.equal(stroops(after) - stroops(before), 10_000_000n)
  })

  it('bad cursors are Horizon 400 problems on cursor; unknown resources 404', async () => {
    for (const path of ['/payments?cursor=abc', '/effects?cursor=1-2-3', `/operations?cursor=${2n ** 64n}`, '/transactions?cursor=-1']) {
      const response = await fetch(`${platform.base}/ledger${path}`)
      assert.equal(response.status, 400, path)
      const body = (await response.json()) as { extras?: { invalid_field?: string } }
      assert.equal(body.extras?.invalid_field, 'cursor', path)
    }
    for (const path of ['/operations/4294967297', `/ledgers/999999999/effects`, `/accounts/${Keypair.random().publicKey()}/payments`]) {
      assert.equal((await fetch(`${platform.base}/ledger${path}`)).status, 404, path)
    }
  })

  it('CORS as Horizon: any origin on every new collection, preflights answered', async () => {
    for (const path of ['/payments', `/accounts/${receiver}/effects`, '/operations?cursor=now']) {
      const get = await fetch(`${platform.base}/ledger${path}`, { headers: { origin: 'https://explorer.example' } })
      assert.equal(get.status, 200, path)
      assert.equal(get.headers.get('access-control-allow-origin'), '*', path)
      const preflight = await fetch(`${platform.base}/ledger${path}`, {
        method: 'OPTIONS',
        headers: { origin: 'https://explorer.example', 'access-control-request-method': 'GET' },
      })
      assert.equal(preflight.status, 204, path)
      assert.equal(preflight.headers.get('access-control-allow-origin'), '*', path)
    }
  })
})
