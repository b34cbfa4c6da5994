import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  afterLedgerToken,
  cursorLedger,
  decodeToid,
  ledgerPagingToken,
  ledgerPosition,
  MAX_APPLICATION_ORDER,
  MAX_OPERATION_INDEX,
  operationPagingToken,
  operationPosition,
  transactionPagingToken,
  transactionPosition,
} from '../../src/ledger/paging-tokens.js'

const INT64_MAX = 2n ** 63n - 1n
/** Horizon's TOID, written out here rather than taken from the module under test. */
const toid = (ledger: bigint, order: bigint, operation: bigint) => (ledger << 32n) | (order << 12n) | operation

/** a > b (1), a < b (−1) or equal (0), field by field: what SQL's row comparison does. */
function compareTuples(a: readonly bigint[], b: readonly bigint[]): number {
  for (const [i, x] of a.entries()) {
    const y = b[i] ?? 0n
    if (x !== y) return x > y ? 1 : -1
  }
  return 0
}

/**
 * Cursors a client may send: every kind of record's token, and hostile ones (int64's ends, a low
 * part with bits set where no record has them: operation bits on a ledger, order bits past 2^20 − 1).
 */
const CURSORS = [
  0n,
  1n,
  4095n,
  4096n,
  INT64_MAX,
  INT64_MAX - 1n,
  toid(5n, 0n, 0n),
  toid(5n, 1n, 0n),
  toid(5n, 1n, 1n),
  toid(5n, 2n, 4095n),
  toid(5n, 3n, 0n),
  toid(5n, 0n, 1n),
  toid(5n, 0n, 4095n),
  toid(5n, 0xfffffn, 0xfffn),
  toid(5n, 0x80000n, 0x801n),
  toid(5n, 0x55555n, 0xaaan),
  (5n << 32n) | 0x80000001n,
  (5n << 32n) | 0xfffff000n,
  BigInt(afterLedgerToken(4n)),
  BigInt(afterLedgerToken(5n)),
  2n ** 32n - 1n,
  (2n ** 31n - 1n) << 32n,
]

/** Records around ledger 5 (and at the ends of the range), as (ledger, order, operation). */
const RECORDS: Array<readonly [bigint, bigint, bigint]> = []
for (const ledger of [0n, 4n, 5n, 6n, 2n ** 31n - 1n])
  for (const order of [1n, 2n, 3n, 0x55555n, 0x80000n, 0xfffffn])
    for (const operation of [1n, 2n, 0x801n, 0xaaan, 0xfffn]) RECORDS.push([ledger, order, operation])

describe('paging tokens (TOIDs)', () => {
  it('a ledger, a transaction and an operation have Horizon’s TOIDs', () => {
    assert.equal(ledgerPagingToken(5n), (5n << 32n).toString())
    assert.equal(transactionPagingToken(5n, 1), ((5n << 32n) | 4096n).toString())
    assert.equal(transactionPagingToken(5n, 3), ((5n << 32n) | (3n << 12n)).toString())
    assert.equal(operationPagingToken(3n, 1, 0), '12884905985')
    assert.equal(operationPagingToken(5n, 2, 4), ((5n << 32n) | (2n << 12n) | 5n).toString())
  })

  it('round-trips every application order 1 … 2^20 − 1 and operation indexes 0 … 4094', () => {
    for (const ledger of [1n, 7n, 2n ** 31n - 1n]) {
      for (let order = 1; order <= MAX_APPLICATION_ORDER; order++) {
        const transaction = BigInt(transactionPagingToken(ledger, order))
        const decoded = decodeToid(transaction)
        if (decoded.ledger !== ledger || decoded.order !== BigInt(order) || decoded.operation !== 0n)
          assert.fail(`transaction (${ledger}, ${order}) decodes as ${JSON.stringify(decoded, (_k, v) => String(v))}`)
      }
      for (const order of [1, 2, 4095, 4096, MAX_APPLICATION_ORDER]) {
        for (let index = 0; index <= MAX_OPERATION_INDEX; index++) {
          const token = BigInt(operationPagingToken(ledger, order, index))
          assert.deepEqual(decodeToid(token), { ledger, order: BigInt(order), operation: BigInt(index) + 1n })
          assert.ok(token > BigInt(transactionPagingToken(ledger, order)))
          assert.ok(
            token < BigInt(order === MAX_APPLICATION_ORDER ? ledgerPagingToken(ledger + 1n) : transactionPagingToken(ledger, order + 1)),
          )
        }
      }
    }
    assert.equal(BigInt(operationPagingToken(2n ** 31n - 1n, MAX_APPLICATION_ORDER, MAX_OPERATION_INDEX)), INT64_MAX)
  })

  it('TOID order is (ledger, order, operation) order', () => {
    for (const a of RECORDS)
      for (const b of RECORDS) assert.equal(Math.sign(Number(toid(...a) - toid(...b))), compareTuples(a, b), `${a} vs ${b}`)
  })

  it('a ledger comes after (before) any cursor exactly when its number is past the ledger bound', () => {
    for (const cursor of CURSORS) {
      for (const ledger of [0n, 3n, 4n, 5n, 6n, 2n ** 31n - 2n, 2n ** 31n - 1n]) {
        const token = BigInt(ledgerPagingToken(ledger))
        assert.equal(ledger > ledgerPosition(cursor, 'asc'), token > cursor, `asc ledger ${ledger} after ${cursor}`)
        assert.equal(ledger < ledgerPosition(cursor, 'desc'), token < cursor, `desc ledger ${ledger} before ${cursor}`)
      }
    }
  })

  it('a transaction comes after (before) any cursor exactly when its (ledger, order) is past the transaction bound', () => {
    for (const cursor of CURSORS) {
      for (const [ledger, order] of RECORDS) {
        const token = toid(ledger, order, 0n)
        const position = [ledger, order]
        assert.equal(compareTuples(position, transactionPosition(cursor, 'asc')) > 0, token > cursor, `asc (${position}) after ${cursor}`)
        assert.equal(
          compareTuples(position, transactionPosition(cursor, 'desc')) < 0,
          token < cursor,
          `desc (${position}) before ${cursor}`,
        )
      }
    }
  })

  it('an operation comes after (before) any cursor exactly when its (ledger, order, index + 1) is past the cursor’s fields', () => {
    for (const cursor of CURSORS) {
      for (const record of RECORDS) {
        const token = toid(...record)
        assert.equal(compareTuples(record, operationPosition(cursor)) > 0, token > cursor, `(${record}) after ${cursor}`)
        assert.equal(compareTuples(record, operationPosition(cursor)) < 0, token < cursor, `(${record}) before ${cursor}`)
      }
    }
  })

  it('cursor=now is the largest TOID of the latest ledger: no record of it comes after, the next ledger’s all do', () => {
    const now = BigInt(afterLedgerToken(3n))
    assert.equal(now, BigInt(operationPagingToken(3n, MAX_APPLICATION_ORDER, MAX_OPERATION_INDEX)))
    assert.ok(now < BigInt(ledgerPagingToken(4n)))
    assert.deepEqual(transactionPosition(now, 'asc'), [3n, BigInt(MAX_APPLICATION_ORDER)])
    assert.equal(ledgerPosition(now, 'asc'), 3n)
  })

  it('names the ledger a TOID or an effect token points into, and nothing else', () => {
    assert.equal(cursorLedger(transactionPagingToken(7n, 300)), 7n)
    assert.equal(cursorLedger(`${operationPagingToken(7n, 2, 3)}-2`), 7n)
    assert.equal(cursorLedger(INT64_MAX.toString()), 2n ** 31n - 1n)
    for (const bad of ['', 'now', '-1', '1-2-3', 'x']) assert.equal(cursorLedger(bad), undefined, bad)
  })
})
