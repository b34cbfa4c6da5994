import { LedgerError, problem } from '../ledger/ledger-errors.js'
import type { LedgerService } from '../ledger/ledger-service.js'
import { paymentsRepo } from './payments-repo.js'
import { PAYMENT_NOT_LINKED, type PaymentsLedger } from './payments-service.js'

/** Payments' narrow view of the ledger: refusals become values, not exceptions. */
export function paymentsLedger(ledger: Pick<LedgerService, 'getAccount' | 'submit' | 'getTransaction'>): PaymentsLedger {
  return {
    async accountSequence(address) {
      return (await ledger.getAccount(address))?.sequence
    },
    async submit(envelopeXdr, forPayment) {
      try {
        const applied = await ledger.submit(envelopeXdr, {
          // Money the platform moves for a payment must end up linked to it, or not move at all.
          afterApply: async (trx, tx) => {
            if ((await paymentsRepo(trx).linkedTxid(forPayment)) === tx.hash) return
            throw new LedgerError(
              problem('transaction_failed', `Payment ${forPayment} no longer takes a transaction.`, {
                result_codes: { transaction: PAYMENT_NOT_LINKED },
              }),
            )
          },
        })
        return { ok: true, hash: applied.hash }
      } catch (error) {
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
