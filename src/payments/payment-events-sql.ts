import { type RawBuilder, sql } from 'kysely'

/*
 * What every payment statement shares (payments-repo.ts, payment-links-repo.ts, payment-approval-repo.ts):
 * who made a move, the timeline rows a move writes in its own statement, and what "open" means.
 */

/**
 * Who made a move, for the payment's timeline (payment_events, migration 0011): the app (its
 * key id), the user (their uid), the approval window, the ledger or the sandbox, and the request
 * that made it (its X-Request-Id, which the request log shows too).
 */
export interface MoveBy {
  actor: 'app' | 'user' | 'approval_window' | 'ledger' | 'sandbox' | 'portal'
  actorId: string | null
  requestId: string | null
}
export const LEDGER: MoveBy = { actor: 'ledger', actorId: null, requestId: null }
export const APPROVAL_WINDOW: MoveBy = { actor: 'approval_window', actorId: null, requestId: null }

export const EVENT_COLUMNS = ['payment_id', 'app_id', 'kind', 'actor', 'actor_id', 'at', 'request_id', 'detail'] as const
/**
 * The timeline rows of the rows a move's statement changed (the CTE `moved`): one statement
 * writes the move and its events, so they commit together or not at all.
 */
export function eventsOf(kind: string, by: MoveBy, at: RawBuilder<unknown>, detail: RawBuilder<unknown> = sql`null::text`) {
  return sql`select identifier, app_id, ${kind}::text, ${by.actor}::text, ${by.actorId}::text, ${at}, ${by.requestId}::text, ${detail} from moved`
}

/** Still holding the user's one open slot: neither completed nor cancelled by anyone. */
export const OPEN = sql<boolean>`not developer_completed and not cancelled and not user_cancelled`
