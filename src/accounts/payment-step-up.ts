import type { Kysely } from 'kysely'
import { ApiError } from '../core/errors.js'
import type { SessionPrincipal } from '../core/principals.js'
import type { DB } from '../db/schema.js'
import { formatAmount, parseAmount, parseStoredAmount } from '../ledger/amounts.js'
import type { AccountsService } from './accounts-service.js'

/** "100.0000000" → "100", "2.5000000" → "2.5": how the messages name an amount. */
const plain = (stroops: bigint) => formatAmount(stroops).replace(/\.?0+$/, '')

/**
 * Large payments ask for the password (docs/production.md, "Large payments ask for the
 * password"): a payment of more than the step-up amount (PLINTH_PAYMENT_STEP_UP_AMOUNT) is paid
 * only by a request that carries the user's password, checked then and there, so what confirms
 * it is fresh and bound to this one payment: no earlier sign-in, no other payment's password and
 * no stolen session alone pays it. Password attempts count as sign-in attempts (per account and
 * per address), so a stolen session cannot guess the password through it.
 */
export function paymentStepUpFactory(deps: { db: Kysely<DB>; accounts: AccountsService; stepUpAmount: string }) {
  const { db, accounts } = deps
  const threshold = parseAmount(deps.stepUpAmount)

  return {
    /** The step-up amount, as the page shows it ("100"). */
    stepUpAmount: plain(threshold),

    /**
     * Refuses paying `paymentId` when it is above the step-up amount and `password` is missing
     * (403 step_up_required) or wrong (403 step_up_failed). A payment that is not the user's is
     * left to the pay itself (404).
     */
    async check(principal: SessionPrincipal, paymentId: string, password: string | undefined, address: string): Promise<void> {
      const row = await db
        .selectFrom('payments')
        .select('amount')
        .where('identifier', '=', paymentId)
        .where('user_id', '=', principal.userId)
        .executeTakeFirst()
      if (row === undefined || parseStoredAmount(row.amount) <= threshold) return
      const above = { step_up_amount: plain(threshold) }
      if (password === undefined) {
        throw new ApiError(
          'step_up_required',
          `This payment is more than ${plain(threshold)} π: confirm it with your password. Nothing was paid.`,
          above,
        )
      }
      if (!(await accounts.confirmPassword(principal, password, address))) {
        throw new ApiError('step_up_failed', 'The password is wrong. Nothing was paid.', above)
      }
    },
  }
}

export type PaymentStepUp = ReturnType<typeof paymentStepUpFactory>
