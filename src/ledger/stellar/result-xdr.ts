import { xdr } from '@stellar/stellar-base'
import type { OpCode, TxCode } from '../ledger-rules.js'

/**
 * A TransactionResult is a handful of 4-byte words: written here directly rather than built as
 * js-xdr objects and encoded (issue 40: a ninth of the encode's CPU). The numbers are
 * stellar-base's own, read from its enums once; test/unit/result-xdr.test.ts checks every code
 * against stellar-base's encoding.
 */

/** An operation's result: OperationResultCode, then for opINNER its type and that type's result code. */
const PAYMENT = xdr.OperationType.payment().value
const INNER = xdr.OperationResultCode.opInner().value
const OPERATION_RESULTS: Record<OpCode, readonly number[]> = {
  op_success: [INNER, PAYMENT, xdr.PaymentResultCode.paymentSuccess().value],
  op_malformed: [INNER, PAYMENT, xdr.PaymentResultCode.paymentMalformed().value],
  op_underfunded: [INNER, PAYMENT, xdr.PaymentResultCode.paymentUnderfunded().value],
  op_no_destination: [INNER, PAYMENT, xdr.PaymentResultCode.paymentNoDestination().value],
  op_not_supported: [xdr.OperationResultCode.opNotSupported().value],
  op_no_source_account: [xdr.OperationResultCode.opNoAccount().value],
  op_bad_auth: [xdr.OperationResultCode.opBadAuth().value],
}

const TRANSACTION_RESULTS: Record<TxCode, number> = {
  tx_success: xdr.TransactionResultCode.txSuccess().value,
  tx_failed: xdr.TransactionResultCode.txFailed().value,
  tx_too_early: xdr.TransactionResultCode.txTooEarly().value,
  tx_too_late: xdr.TransactionResultCode.txTooLate().value,
  tx_missing_operation: xdr.TransactionResultCode.txMissingOperation().value,
  tx_bad_seq: xdr.TransactionResultCode.txBadSeq().value,
  tx_bad_auth: xdr.TransactionResultCode.txBadAuth().value,
  tx_insufficient_balance: xdr.TransactionResultCode.txInsufficientBalance().value,
  tx_no_source_account: xdr.TransactionResultCode.txNoAccount().value,
  tx_insufficient_fee: xdr.TransactionResultCode.txInsufficientFee().value,
  tx_bad_auth_extra: xdr.TransactionResultCode.txBadAuthExtra().value,
  tx_not_supported: xdr.TransactionResultCode.txNotSupported().value,
}

/**
 * A base64 `xdr.TransactionResult`, as Horizon returns in `result_xdr`: stellar-sdk decodes
 * it after every submit, so it must be real XDR. `operations` holds one code per operation
 * for tx_success and tx_failed.
 */
export function transactionResultXdr(feeCharged: bigint, code: TxCode, operations: readonly OpCode[] = []): string {
  // feeCharged (int64), the result's code and, for success and failure, its operations' results; then ext (arm 0).
  const words: number[] = [TRANSACTION_RESULTS[code]]
  if (code === 'tx_success' || code === 'tx_failed') {
    words.push(operations.length)
    for (const op of operations) words.push(...OPERATION_RESULTS[op])
  }
  words.push(0)
  const bytes = Buffer.allocUnsafe(8 + words.length * 4)
  bytes.writeBigInt64BE(feeCharged, 0)
  for (const [at, word] of words.entries()) bytes.writeInt32BE(word, 8 + at * 4)
  return bytes.toString('base64')
}
