import { ApiError } from '../core/errors.js'
import { LedgerError } from '../ledger/ledger-errors.js'
import type { LedgerService } from '../ledger/ledger-service.js'
import type { OnTransactionApplied } from '../ledger/ledger-types.js'
import { PAYMENT_NOT_APPROVED, PAYMENT_NOT_LINKED } from '../ledger/ledger-types.js'
import { paymentsRepo } from './payments-repo.js'
import type { PaymentsLedger, PaymentsService } from './payments-service.js'

/**
 * The ledger's `onTransactionApplied` hook: links the payment a transaction pays, and refuses a
 * transaction that pays a user-to-app payment its app has not approved (it rolls back: nothing
 * moves). Money never moves for a payment that cannot take it yet, so the approval window can
 * cancel such a payment without ever cancelling a paid one.
 */
export function linkPayments(payments: () => Pick<PaymentsService, 'linkTransaction'>): OnTransactionApplied {
  return async (trx, tx) => {
    if ((await payments().linkTransaction(trx, tx)) !== 'not_approved') return undefined
    return {
      transaction: PAYMENT_NOT_APPROVED,
      detail: `The transaction was refused: the app has not approved payment ${tx.memo ?? ''} yet.`,
    }
  }
}

/** Payments' narrow view of the ledger: refusals become values, not exceptions. */
export function paymentsLedger(ledger: Pick<LedgerService, 'submitSigned' | 'getTransaction'>): PaymentsLedger {
  return {
    async submit(source, sign, forPayment) {
      try {
        const applied = await ledger.submitSigned(source, sign, {
          // Money the platform moves for a payment must end up linked to it, or not move at all.
          afterApply: async (trx, tx) =>
            (await paymentsRepo(trx).linkedTxid(forPayment)) === tx.hash
              ? undefined
              : { transaction: PAYMENT_NOT_LINKED, detail: `Payment ${forPayment} no longer takes a transaction.` },
        })
        return { ok: true, hash: applied.hash }
      } catch (error) {
        // Applied, then erased by a reset or a restore before it was read back: not applied, in the world that answers.
        if (error instanceof LedgerError && error.problem.extras?.reason === 'world_replaced')
          throw new ApiError('service_unavailable', error.problem.detail).retryAfter(1)
        const codes = error instanceof LedgerError ? error.resultCodes : undefined
        if (codes === undefined) throw error
        return codes.operations === undefined
          ? { ok: false, transaction: codes.transaction }
          : { ok: false, transaction: codes.transaction, operations: codes.operations }
      }
    },
    async findTransaction(hash) {
      const tx = await ledger.getTransaction(hash)
      return tx === undefined ? undefined : { memo: tx.memo, sourceAccount: tx.sourceAccount }
    },
  }
}
