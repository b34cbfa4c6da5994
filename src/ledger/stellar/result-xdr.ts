import { xdr } from '@stellar/stellar-base'
import type { OpCode, TxCode } from '../ledger-rules.js'

const payment = (result: xdr.PaymentResult) => xdr.OperationResult.opInner(xdr.OperationResultTr.payment(result))

const OPERATION_RESULTS: Record<OpCode, () => xdr.OperationResult> = {
  op_success: () => payment(xdr.PaymentResult.paymentSuccess()),
  op_malformed: () => payment(xdr.PaymentResult.paymentMalformed()),
  op_underfunded: () => payment(xdr.PaymentResult.paymentUnderfunded()),
  op_no_destination: () => payment(xdr.PaymentResult.paymentNoDestination()),
  op_not_supported: () => xdr.OperationResult.opNotSupported(),
  op_no_source_account: () => xdr.OperationResult.opNoAccount(),
  op_bad_auth: () => xdr.OperationResult.opBadAuth(),
}

const TRANSACTION_RESULTS: Record<Exclude<TxCode, 'tx_success' | 'tx_failed'>, () => xdr.TransactionResultResult> = {
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

/**
 * A base64 `xdr.TransactionResult`, as Horizon returns in `result_xdr`: stellar-sdk decodes
 * it after every submit, so it must be real XDR. `operations` holds one code per operation
 * for tx_success and tx_failed.
 */
export function transactionResultXdr(feeCharged: bigint, code: TxCode, operations: readonly OpCode[] = []): string {
  const opResults = () => operations.map((op) => OPERATION_RESULTS[op]())
  const result =
    code === 'tx_success'
      ? xdr.TransactionResultResult.txSuccess(opResults())
      : code === 'tx_failed'
        ? xdr.TransactionResultResult.txFailed(opResults())
        : TRANSACTION_RESULTS[code]()
  return new xdr.TransactionResult({
    feeCharged: xdr.Int64.fromString(feeCharged.toString()),
    result,
    ext: new xdr.TransactionResultExt(0),
  }).toXDR('base64')
}
