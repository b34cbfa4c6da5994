import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { effectId, effectPagingToken, effectsOf, isPast, parseEffectCursor } from '../../src/ledger/ledger-effects.js'
import type { LedgerOperation } from '../../src/ledger/ledger-types.js'
import { operationPagingToken } from '../../src/ledger/paging-tokens.js'

const op: LedgerOperation = {
  transactionHash: 'a'.repeat(64),
  ledger: '3',
  applicationOrder: 1,
  index: 0,
  type: 'payment',
  from: 'GFROM',
  to: 'GTO',
  amount: '1.0000000',
  createdAt: new Date(0),
}

describe('effects as Horizon forms them', () => {
  it("a payment credits the receiver (order 1), then debits the sender (order 2), with Horizon's ids and tokens", () => {
    const [credited, debited] = effectsOf(op)
    assert.ok(credited !== undefined && debited !== undefined)
    const toid = operationPagingToken(3n, 1, 0)
    assert.equal(toid, '12884905985')
    assert.deepEqual(
      [credited.type, credited.account, debited.type, debited.account],
      ['account_credited', 'GTO', 'account_debited', 'GFROM'],
    )
    assert.equal(effectId(credited), `00000000${toid}-0000000001`)
    assert.equal(effectPagingToken(debited), `${toid}-2`)
  })

  it('parses "<toid>-<order>" and a TOID alone (after every effect of it), refuses the rest', () => {
    assert.deepEqual(parseEffectCursor('12884905985-1'), { operationId: 12884905985n, order: 1n })
    assert.deepEqual(parseEffectCursor('12884905985'), { operationId: 12884905985n, order: 2n ** 63n - 1n })
    for (const bad of ['', '-1', '1-2-3', 'now', 'x-1', `${2n ** 63n}-1`, `1-${2n ** 64n}`, '1-'])
      assert.equal(parseEffectCursor(bad), undefined, bad)
  })

  it('orders effects by (operation, order) against a cursor, both ways', () => {
    const [credited, debited] = effectsOf(op)
    assert.ok(credited !== undefined && debited !== undefined)
    const cursor = { operationId: credited.operationId, order: 1n }
    assert.equal(isPast(credited, cursor, 'asc'), false)
    assert.equal(isPast(debited, cursor, 'asc'), true)
    assert.equal(isPast(credited, { operationId: credited.operationId, order: 2n }, 'desc'), true)
    assert.equal(isPast(debited, { operationId: credited.operationId, order: 2n ** 63n - 1n }, 'asc'), false)
  })
})
