import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { formatAmount, parseAmount, parseAmountInput, parseStoredAmount, tryParseAmount } from '../../src/ledger/amounts.js'

describe('amounts', () => {
  it('parses a decimal of Pi into stroops, exactly', () => {
    assert.equal(parseAmount('1.5'), 15_000_000n)
    assert.equal(parseAmount('0.0000001'), 1n)
    assert.equal(parseAmount('1000'), 10_000_000_000n)
    assert.equal(parseAmount('0'), 0n)
    assert.equal(parseAmount('9999999999999.9999999'), 99_999_999_999_999_999_999n)
  })

  it('refuses anything else: more than 7 places, signs, exponents, blanks, too many digits', () => {
    for (const text of ['1.12345678', '-1', '+1', '1e3', '', ' 1', '1.', '.5', '01', '0x10', 'NaN', '1,5', '10000000000000']) {
      assert.equal(tryParseAmount(text), undefined, text)
      assert.throws(() => parseAmount(text), { name: 'AmountError' })
    }
  })

  it('formats stroops with exactly 7 places, as Horizon does', () => {
    assert.equal(formatAmount(15_000_000n), '1.5000000')
    assert.equal(formatAmount(1n), '0.0000001')
    assert.equal(formatAmount(0n), '0.0000000')
    assert.equal(formatAmount(-100n), '-0.0000100')
    assert.equal(formatAmount(10_000_000_000n), '1000.0000000')
  })

  it('round-trips: format(parse(x)) is x with 7 places', () => {
    for (const [text, formatted] of [
      ['12.5', '12.5000000'],
      ['0.1', '0.1000000'],
      ['123456.7654321', '123456.7654321'],
    ] as const) {
      assert.equal(formatAmount(parseAmount(text)), formatted)
    }
  })

  it('accepts a JSON number only when it names at most 7 places exactly', () => {
    assert.equal(parseAmountInput(0.1), 1_000_000n)
    assert.equal(parseAmountInput(12.5), 125_000_000n)
    assert.equal(parseAmountInput(1e-7), 1n)
    assert.equal(parseAmountInput('3.25'), 32_500_000n)
    for (const value of [0.12345678, -1, Number.NaN, Number.POSITIVE_INFINITY, 1e21]) {
      assert.equal(parseAmountInput(value), undefined, String(value))
    }
  })

  it('reads sums and balances the database computed, signed and of any size', () => {
    assert.equal(parseStoredAmount('11000.0000000'), 110_000_000_000n)
    assert.equal(parseStoredAmount('0'), 0n)
    assert.equal(parseStoredAmount('-0.0000100'), -100n)
    assert.equal(parseStoredAmount('123456789012345678.5'), 1_234_567_890_123_456_785_000_000n)
    assert.throws(() => parseStoredAmount('1.12345678'), { name: 'AmountError' })
  })
})
