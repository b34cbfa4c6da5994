import { Type } from 'typebox'
import { parseInt64Id } from '../../lib/integers.js'
import { badParameter, notFound } from '../ledger-errors.js'
import { isAccountId } from '../ledger-rules.js'
import type { LedgerService } from '../ledger-service.js'
import type { LedgerAccount, LedgerOperation, LedgerSummary, LedgerTransaction } from '../ledger-types.js'

export const AccountId = Type.String({ minLength: 1, maxLength: 100, description: 'A G… account id' })
export const TxHash = Type.String({ minLength: 1, maxLength: 100, description: 'Transaction hash, 64 hex characters' })
export const LedgerSequence = Type.String({ minLength: 1, maxLength: 20, description: 'A ledger number' })
export const OperationId = Type.String({ minLength: 1, maxLength: 20, description: 'An operation id (its TOID)' })
const TX_HASH = /^[0-9a-f]{64}$/

/** What a sub-collection belongs to: each throws Horizon's 404 when it does not exist. */
export function scopes(ledger: LedgerService) {
  return {
    async account(accountId: string): Promise<LedgerAccount> {
      const account = isAccountId(accountId) ? await ledger.getAccount(accountId) : undefined
      if (account === undefined) throw notFound()
      return account
    },

    async transaction(hash: string): Promise<LedgerTransaction> {
      const normalized = hash.toLowerCase()
      const tx = TX_HASH.test(normalized) ? await ledger.getTransaction(normalized) : undefined
      if (tx === undefined) throw notFound()
      return tx
    },

    async operation(id: string): Promise<LedgerOperation> {
      if (parseInt64Id(id) === undefined) throw badParameter('id', 'an operation id (an integer from 0 to 2^63 − 1)')
      const op = await ledger.getOperation(id)
      if (op === undefined) throw notFound()
      return op
    },

    async ledger(text: string): Promise<LedgerSummary> {
      const sequence = parseInt64Id(text)
      if (sequence === undefined) throw badParameter('sequence', 'a ledger number (an integer from 0 to 2^63 − 1)')
      const summary = await ledger.getLedger(sequence.toString())
      if (summary === undefined) throw notFound()
      return summary
    },
  }
}

export type Scopes = ReturnType<typeof scopes>
