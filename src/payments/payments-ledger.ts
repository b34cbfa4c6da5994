import type { Clock } from '../clock/clock.js'
import { ApiError } from '../core/errors.js'
import { parseStoredAmount } from '../ledger/amounts.js'
import { LedgerError } from '../ledger/ledger-errors.js'
import type { LedgerService } from '../ledger/ledger-service.js'
import type { BatchHook, HookDecision } from '../ledger/ledger-types.js'
import { PAYMENT_NOT_APPROVED, PAYMENT_NOT_LINKED } from '../ledger/ledger-types.js'
import type { LedgerNetwork } from '../ledger/networks.js'
import { paymentLinksRepo } from './payment-links-repo.js'
import type { PaymentsLedger } from './payments-service.js'

/**
 * The ledger's batch hook (src/ledger/ledger-closer.ts): links the payment each transaction of a
 * batch pays, and refuses a transaction that pays a user-to-app payment its app has not approved
 * (nothing of it moves). Money never moves for a payment that cannot take it yet, so the approval
 * window can cancel such a payment without ever cancelling a paid one.
 *
 * A transaction links the payment its text memo names when its source is the payment's payer and
 * the payment is open, not linked yet and, user-to-app, approved; it is verified when its single
 * operation pays the payment's recipient its exact amount on its network. The payments the batch
 * names are locked first (one statement), so a concurrent approve or cancel waits, or is seen;
 * each transaction is then decided in ledger order in memory (the first of two paying one payment
 * links it), and the links are written by the batch's one write statement.
 */
export function linkPayments(clock: Clock): BatchHook {
  return {
    async prepare(trx, txs) {
      const memos = [...new Set(txs.flatMap((tx) => (tx.memoType === 'text' && tx.memo !== null ? [tx.memo] : [])))]
      const locked = memos.length === 0 ? [] : await paymentLinksRepo(trx).lockForLinking(memos)
      return {
        pass() {
          const payments = new Map(locked.map((row) => [row.identifier, { ...row }]))
          const links: Array<{ identifier: string; txid: string; verified: boolean }> = []
          return {
            decide(tx): HookDecision {
              const payment = tx.memoType === 'text' && tx.memo !== null ? payments.get(tx.memo) : undefined
              if (payment === undefined || payment.from_address !== tx.sourceAccount) return { linked: undefined }
              const unapproved = payment.direction === 'user_to_app' && !payment.developer_approved
              if (unapproved) {
                return {
                  refusal: {
                    transaction: PAYMENT_NOT_APPROVED,
                    detail: `The transaction was refused: the app has not approved payment ${payment.identifier} yet.`,
                  },
                }
              }
              if (payment.txid !== null || !payment.open) return { linked: undefined }
              const [op] = tx.operations
              const verified =
                tx.operations.length === 1 &&
                op !== undefined &&
                op.from === tx.sourceAccount &&
                op.to === payment.to_address &&
                parseStoredAmount(op.amount) === parseStoredAmount(payment.amount) &&
                tx.network === payment.network
              payment.txid = tx.hash
              links.push({ identifier: payment.identifier, txid: tx.hash, verified })
              return { linked: payment.identifier }
            },
            writes: () => paymentLinksRepo(trx).linkWrites(links, clock.now()),
          }
        },
      }
    },
  }
}

/** Payments' narrow view of the ledgers, each payment on its network's: refusals become values, not exceptions. */
export function paymentsLedger(
  ledgers: Readonly<Record<LedgerNetwork, Pick<LedgerService, 'submitSigned' | 'getTransaction'>>>,
): PaymentsLedger {
  return {
    async submit(network, source, destination, sign, forPayment) {
      try {
        const applied = await ledgers[network].submitSigned(source, sign, {
          accounts: [source, destination],
          // Money the platform moves for a payment must end up linked to it, or not move at all.
          condition: (decision) =>
            'linked' in decision && decision.linked === forPayment
              ? undefined
              : { transaction: PAYMENT_NOT_LINKED, detail: `Payment ${forPayment} no longer takes a transaction.` },
        })
        return { ok: true, hash: applied.hash }
      } catch (error) {
        // Applied, then erased by a reset or a restore before it was read back: not applied, in the world that answers.
        if (
          error instanceof LedgerError &&
          (error.problem.extras?.reason === 'world_replaced' || error.problem.extras?.reason === 'ledger_busy')
        )
          throw new ApiError('service_unavailable', error.problem.detail).retryAfter(1)
        const codes = error instanceof LedgerError ? error.resultCodes : undefined
        if (codes === undefined) throw error
        return codes.operations === undefined
          ? { ok: false, transaction: codes.transaction }
          : { ok: false, transaction: codes.transaction, operations: codes.operations }
      }
    },
    async findTransaction(network, hash) {
      const tx = await ledgers[network].getTransaction(hash)
      return tx === undefined ? undefined : { memo: tx.memo, sourceAccount: tx.sourceAccount }
    },
  }
}
