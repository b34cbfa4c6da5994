import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { xdr } from '@stellar/stellar-base'
import type { OpCode, TxCode } from '../../src/ledger/ledger-rules.js'
import { transactionResultXdr } from '../../src/ledger/stellar/result-xdr.js'

/** The result as stellar-base builds and encodes it: what the hand-written words must equal. */
const payment = (result: xdr.PaymentResult) => xdr.OperationResult.opInner(xdr.OperationResultTr.payment(result))
const OPERATIONS: Record<OpCode, () => xdr.OperationResult> = {
  op_success: () => payment(xdr.PaymentResult.paymentSuccess()),
  op_malformed: () => payment(xdr.PaymentResult.paymentMalformed()),
  op_underfunded: () => payment(xdr.PaymentResult.paymentUnderfunded()),
  op_no_destination: () => payment(xdr.PaymentResult.paymentNoDestination()),
  op_not_supported: () => xdr.OperationResult.opNotSupported(),
  op_no_source_account: () => xdr.OperationResult.opNoAccount(),
  op_bad_auth: () => xdr.OperationResult.opBadAuth(),
}
const TRANSACTIONS: Record<Exclude<TxCode, 'tx_success' | 'tx_failed'>, () => xdr.TransactionResultResult> = {
  tx_too_early: () => xdr.TransactionResultResult.txTooEarly(),
  tx_too_late: () => xdr.TransactionResultResult.txTooLate(),
  tx_missing_operation: () => xdr.TransactionResultResult.txMissingOperation(),
  tx_bad_seq: () => xdr.TransactionResultResult.txBadSeq(),
  tx_bad_auth: () => xdr.TransactionResultResult.txBadAuth(),
  tx_insufficient_balance: () => xdr.TransactionResultResult.txInsufficientBalance(),
  tx_no_source_account: () => xdr.TransactionResultResult.txNoAccount(),
  tx_insufficient_fee: () => xdr.TransactionResultResult.txInsufficientFee(),
  tx_bad_auth_extra: () => xdr.TransactionResultResult.txBadAuthExtra(),
  tx_not_supported: () => xdr.TransactionResultResult.txNotSupported(),
}

function reference(fee: bigint, code: TxCode, operations: readonly OpCode[]): string {
  const results = () => operations.map((op) => OPERATIONS[op]())
  const result =
    code === 'tx_success'
      ? xdr.TransactionResultResult.txSuccess(results())
      : code === 'tx_failed'
        ? xdr.TransactionResultResult.txFailed(results())
        : TRANSACTIONS[code]()
  return new xdr.TransactionResult({
    feeCharged: xdr.Int64.fromString(fee.toString()),
    result,
    ext: new xdr.TransactionResultExt(0),
  }).toXDR('base64')
}

describe('result XDR', () => {
  it('is what stellar-base encodes, for every code, fees at the int64 bounds and up to 100 operations', () => {
    const ops = Object.keys(OPERATIONS) as OpCode[]
    const fees = [0n, 100n, 2n ** 31n, 2n ** 63n - 1n, -(2n ** 63n)]
    for (const fee of fees) {
      for (const code of Object.keys(TRANSACTIONS) as TxCode[])
        assert.equal(transactionResultXdr(fee, code), reference(fee, code, []), code)
      for (const code of ['tx_success', 'tx_failed'] as const) {
        assert.equal(transactionResultXdr(fee, code, []), reference(fee, code, []), `${code}, no operation`)
        for (const op of ops) assert.equal(transactionResultXdr(fee, code, [op]), reference(fee, code, [op]), `${code} ${op}`)
        const hundred = Array.from({ length: 100 }, (_, i) => ops[i % ops.length] as OpCode)
        assert.equal(transactionResultXdr(fee, code, hundred), reference(fee, code, hundred), `${code}, 100 operations`)
      }
    }
  })
})
