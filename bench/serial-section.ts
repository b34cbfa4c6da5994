/**
 * The ledger's serial section, measured: how long a COMMIT that closes a ledger takes (the trigger
 * under the ledger-number lock, then the WAL flush, both serialised across every process), for
 * batches of 1 to 256 transactions, on the PostgreSQL server in DATABASE_URL. BENCHMARKS.md,
 * "The ledger's serial section". `PLINTH_TEST_DB=postgres DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --import tsx bench/serial-section.ts`
 */
import { performance } from 'node:perf_hooks'
import { Account, Asset, Keypair, Memo, Operation, TransactionBuilder } from '@stellar/stellar-base'
import pg from 'pg'
import { ledgerServiceFactory } from '../src/ledger/ledger-service.js'
import { startPlatform } from '../test/helpers/platform.js'

if (process.env.PLINTH_TEST_DB !== 'postgres' || process.env.DATABASE_URL === undefined) {
  throw new Error('run with PLINTH_TEST_DB=postgres DATABASE_URL=postgres://…: the serial section is PostgreSQL’s')
}

const commits: number[] = []
// Kysely commits with the text `commit` on the batch's own connection: time each one.
const original = pg.Client.prototype.query as (this: pg.Client, ...args: unknown[]) => unknown
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | undefined)?.text
  const result = original.apply(this, args)
  if (text?.toLowerCase() === 'commit' && result instanceof Promise) {
    const start = performance.now()
    return result.then((value) => {
      commits.push(performance.now() - start)
      return value
    })
  }
  return result
} as typeof pg.Client.prototype.query

const platform = await startPlatform()
try {
  const passphrase = 'Pi Testnet'
  for (const size of [1, 4, 16, 64, 256]) {
    const ledger = ledgerServiceFactory({
      network: 'Pi Testnet',
      db: platform.db,
      clock: platform.clock,
      closer: { maxBatch: size, maxWaitMs: 200, maxQueue: 10_000 },
    })
    const rounds = size >= 64 ? 5 : 20
    const times: number[] = []
    for (let round = 0; round < rounds; round++) {
      const pairs = Array.from({ length: size }, () => ({ from: Keypair.random(), to: Keypair.random() }))
      for (const { from, to } of pairs) {
        await ledger.fund(from.publicKey(), '100')
        await ledger.fund(to.publicKey(), '1')
      }
      const envelopes = pairs.map(({ from, to }) => {
        const tx = new TransactionBuilder(new Account(from.publicKey(), '0'), {
          fee: '100',
          networkPassphrase: passphrase,
          timebounds: { minTime: 0, maxTime: 0 },
        })
          .addOperation(Operation.payment({ destination: to.publicKey(), asset: Asset.native(), amount: '1' }))
          .addMemo(Memo.text('serial'))
          .build()
        tx.sign(from)
        return tx.toEnvelope().toXDR('base64')
      })
      commits.length = 0
      const submitted = await Promise.all(envelopes.map((envelope) => ledger.submit(envelope)))
      if (new Set(submitted.map((tx) => tx.ledger)).size !== 1) throw new Error(`batch of ${size} closed several ledgers`)
      times.push(...commits)
    }
    times.sort((a, b) => a - b)
    const median = times[Math.floor(times.length / 2)] ?? 0
    console.log(
      `batch of ${String(size).padStart(3)}: COMMIT median ${median.toFixed(2)} ms (${times.length} ledgers), ${(median / size).toFixed(3)} ms a transaction`,
    )
  }
} finally {
  await platform.close()
}
