import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { checkAmount, checkMemo, checkMetadata, MAX_AMOUNT } from '../../src/payments/payment-input.js'

describe('payment input', () => {
  const good: Array<[number, string]> = [
    [1, '1.0000000'],
    [0.1, '0.1000000'],
    [3.14, '3.1400000'],
    [0.0000001, '0.0000001'],
    [1.2345678, '1.2345678'],
    [MAX_AMOUNT, '100000000.0000000'],
  ]
  for (const [value, expected] of good) {
    it(`takes amount ${value} as ${expected}`, () => assert.deepEqual(checkAmount(value), { ok: true, value: expected }))
  }
  // A decimal numeral in a string is that number, under the same bounds and precision.
  const goodStrings: Array<[string, string]> = [
    ['1', '1.0000000'],
    ['0.1', '0.1000000'],
    ['3.14', '3.1400000'],
    ['0.0000001', '0.0000001'],
    ['1.2345678', '1.2345678'],
    ['100000000', '100000000.0000000'],
  ]
  for (const [value, expected] of goodStrings) {
    it(`takes amount "${value}" as ${expected}`, () => assert.deepEqual(checkAmount(value), { ok: true, value: expected }))
  }

  const bad: Array<[string, unknown]> = [
    ['zero', 0],
    ['negative', -1],
    ['8 decimals', 1.23456789],
    ['under a stroop', 0.00000001],
    ['above the maximum', MAX_AMOUNT + 1],
    ['infinite', Number.POSITIVE_INFINITY],
    ['NaN', Number.NaN],
    ['a string that is not a numeral', 'one'],
    ['an empty string', ''],
    ['a string with an exponent', '1e3'],
    ['a signed string', '-1'],
    ['a string with spaces', ' 1'],
    ['a hexadecimal string', '0x10'],
    ['a string with a bare point', '1.'],
    ['a string with 8 decimals', '1.23456789'],
    ['a zero string', '0'],
    ['a string above the maximum', '100000000.0000001'],
    ['a string Infinity', 'Infinity'],
    ['null', null],
    ['absent', undefined],
  ]
  for (const [what, value] of bad) {
    it(`refuses an amount that is ${what} with invalid_amount`, () => {
      const result = checkAmount(value)
      assert.equal(result.ok, false)
      assert.equal(!result.ok && result.code, 'invalid_amount')
    })
  }

  it('takes a memo of up to 1000 characters and refuses others', () => {
    assert.deepEqual(checkMemo(''), { ok: true, value: '' })
    assert.deepEqual(checkMemo('ü'.repeat(1000)), { ok: true, value: 'ü'.repeat(1000) })
    for (const memo of ['x'.repeat(1001), 42, null, undefined, 'nul\u0000']) {
      const result = checkMemo(memo)
      assert.equal(result.ok, false, JSON.stringify(memo))
      assert.equal(!result.ok && result.code, 'invalid_arguments')
    }
  })

  it('takes metadata objects up to 4 KiB, absent as {}, and refuses others', () => {
    assert.deepEqual(checkMetadata(undefined), { ok: true, value: {} })
    assert.deepEqual(checkMetadata({ order: 7, nested: { a: [1] } }), { ok: true, value: { order: 7, nested: { a: [1] } } })
    for (const metadata of [null, [], 'x', 5, { big: 'x'.repeat(4100) }, { nul: 'a\u0000b' }]) {
      const result = checkMetadata(metadata)
      assert.equal(result.ok, false, JSON.stringify(metadata).slice(0, 40))
      assert.equal(!result.ok && result.code, 'invalid_metadata')
    }
  })

  it('refuses metadata PostgreSQL cannot store or JSON.stringify cannot write: unpaired surrogates, nesting past the stack', () => {
    const deep = JSON.parse(`{"a":${'['.repeat(10_000)}${']'.repeat(10_000)}}`)
    for (const metadata of [{ lone: '\ud800' }, { 'a\\\udc00': 1 }, deep]) {
      const result = checkMetadata(metadata)
      assert.equal(!result.ok && result.code, 'invalid_metadata')
    }
    // A paired surrogate (an emoji) is fine, and so is the text "\ud800" written with a backslash.
    assert.equal(checkMetadata({ emoji: '😀', text: '\\ud800' }).ok, true)
  })
})
