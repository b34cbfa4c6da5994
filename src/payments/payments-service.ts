import { Account, Asset, Memo, Operation, TransactionBuilder } from '@stellar/stellar-base'
import type { Kysely } from 'kysely'
import type { Clock } from '../clock/clock.js'
import { ApiError } from '../core/errors.js'
import type { TokenPrincipal } from '../core/principals.js'
import { coalescingReader, coalescingWriter } from '../db/coalesce.js'
import type { DB } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import { PAYMENT_NOT_LINKED } from '../ledger/ledger-types.js'
import type { LedgerNetwork } from '../ledger/networks.js'
import { signWithSeed } from '../ledger/stellar/ed25519.js'
import { randomToken } from '../lib/crypto.js'
import { unstorableText } from '../lib/text.js'
import { paymentApprovalRepo } from './payment-approval-repo.js'
import { type PaymentDTO, toPaymentDTO } from './payment-dto.js'
import { checkAmount, checkMemo, checkMetadata } from './payment-input.js'
import { approvalExpired, decide, type Move } from './payment-state.js'
import {
  type CompleteItem,
  isOpenPaymentConflict,
  type MemberPaymentItem,
  type MoveBy,
  type PaymentRead,
  type PaymentRow,
  paymentsRepo,
} from './payments-repo.js'

/** What payments need of the ledger: narrow, so the ledger never depends on payments. */
export interface PaymentsLedger {
  /**
   * Applies a transaction of `source` that `sign` builds and signs with the sequence number the
   * ledger reads for it, serialised with every other such transaction of `source` (so two
   * payments of one wallet never take the same number). It applies only if it links to payment
   * `forPayment`.
   */
  submit(
    /** The payment's network: the transaction is applied on its ledger. */
    network: LedgerNetwork,
    source: string,
    destination: string,
    sign: (sequence: string) => string,
    forPayment: string,
  ): Promise<{ ok: true; hash: string } | { ok: false; transaction: string; operations?: string[] }>
  findTransaction(network: LedgerNetwork, hash: string): Promise<{ memo: string | null; sourceAccount: string } | undefined>
}

export interface PaymentInput {
  amount?: unknown
  memo?: unknown
  metadata?: unknown
}

/** How many incomplete server payments one call lists (oldest first). */
export const INCOMPLETE_LIST_LIMIT = 200
/** A transaction the platform signs for a user is valid this long. */
const SUBMIT_TIMEOUT_SECONDS = 180
const BASE_FEE = '100'
/**
 * How often a submit signs again when its sequence number was taken meanwhile. The platform's own
 * payments of one wallet are serialised by the ledger and never take each other's number; only a
 * transaction the user signed and submitted themselves at that moment can, so a few tries suffice.
 */
const SUBMIT_ATTEMPTS = 5
/** A submit that lost its sequence number waits this long before signing again (milliseconds, times the attempt, randomised). */
const SEQUENCE_BACKOFF_MS = 20
/** What `Retry-After` says when the wallet stays busy: contention, never a refusal. */
const BUSY_RETRY_AFTER_SECONDS = 1

const notFound = (id: string) => new ApiError('payment_not_found', `No payment ${id}.`)

function checked<T>(
  result: { ok: true; value: T } | { ok: false; code: 'invalid_amount' | 'invalid_metadata' | 'invalid_arguments'; message: string },
): T {
  if (!result.ok) throw new ApiError(result.code, result.message)
  return result.value
}

export interface PaymentsDeps {
  db: Kysely<DB>
  clock: Clock
  publicUrl: string
  approvalWindowMs: number
  ledger: PaymentsLedger
  /** Opens the wallet seed the platform holds for a user, to sign the user's payment. */
  userSeed: (userId: string) => Promise<string>
  /**
   * Production's Mainnet listing (src/apps/listing-gate.ts): throws 403 app_not_listed when the
   * app is held for review and the other party is not one of its members. None in sandbox mode.
   */
  listingGate?: (appId: string, party: { userId: string } | { uid: string }) => Promise<void>
}

/** Whose wallet pays: a user, in one app. */
type PayingUser = Pick<TokenPrincipal, 'appId' | 'userId'>

export function paymentsServiceFactory(deps: PaymentsDeps) {
  const { db, clock, publicUrl, approvalWindowMs, ledger } = deps
  const repo = paymentsRepo(db)
  const approvals = paymentApprovalRepo(db)
  // Concurrent A2U creates and completes share one statement per round trip (src/db/coalesce.ts):
  // BENCHMARKS.md, "Coalesced creates and completes".
  const creates = coalescingWriter((items: MemberPaymentItem[]) => repo.insertForMembers(items))
  const completes = coalescingWriter((items: CompleteItem[]) => repo.completeMany(items))
  const dto = (row: PaymentRow): PaymentDTO => toPaymentDTO(row, publicUrl)
  /** `GET /v2/payments/{id}`: concurrent reads share one query (batched, never cached). */
  const byId = coalescingReader((ids) => repo.findMany(ids))

  /**
   * Applies the platform's approval timeout to a row just read, so every answer reflects it. The
   * window is judged on the platform time the read itself took from the database
   * (`platform_now`), not on this process's copy of the clock's offset, so every process judges alike.
   */
  async function current(row: PaymentRead, reread: () => Promise<PaymentRead | undefined>): Promise<PaymentRow> {
    if (!approvalExpired(row, row.platform_now, approvalWindowMs)) return row
    await approvals.expireApproval({ identifier: row.identifier }, approvalWindowMs)
    return (await reread()) ?? row
  }

  async function readForApp(appId: string, id: string): Promise<PaymentRow> {
    const reread = () => repo.findForApp(id, appId)
    const found = await byId.get(id)
    // Another app's payment does not exist for this one.
    const row = found?.app_id === appId ? found : undefined
    if (row === undefined) throw notFound(id)
    return current(row, reread)
  }

  async function readForUser(principal: PayingUser, id: string): Promise<PaymentRow> {
    const reread = () => repo.findForUser(id, principal.appId, principal.userId)
    const row = await reread()
    if (row === undefined) throw notFound(id)
    return current(row, reread)
  }

  /**
   * A payment as it stands now for deciding a move, without writing: an approval window that
   * passed shows as the cancellation expireApproval records. A refused or replayed move then
   * changes nothing (reads still record the expiry). The window is judged on the platform time
   * the read took from the database, as the approve's guarded UPDATE judges it, so no process
   * can approve what another refused as expired: the clock only moves forward.
   */
  function expiryView(row: PaymentRead): PaymentRow {
    if (!approvalExpired(row, row.platform_now, approvalWindowMs)) return row
    return { ...row, cancelled: true, cancelled_at: new Date(row.created_at.getTime() + approvalWindowMs) }
  }

  async function viewForApp(appId: string, id: string): Promise<PaymentRow> {
    const row = await repo.findForApp(id, appId)
    if (row === undefined) throw notFound(id)
    return expiryView(row)
  }

  async function viewForUser(principal: PayingUser, id: string): Promise<PaymentRow> {
    const row = await repo.findForUser(id, principal.appId, principal.userId)
    if (row === undefined) throw notFound(id)
    return expiryView(row)
  }

  /**
   * Runs a move: first the guarded UPDATE (one round trip when it is allowed); when that
   * changes nothing, the row is read again and the pure rules say whether this was a replay
   * or which refusal answers it.
   */
  async function move(row: () => Promise<PaymentRow>, attempt: () => Promise<PaymentRow | undefined>, action: Move): Promise<PaymentRow> {
    const updated = await attempt()
    if (updated !== undefined) return updated
    const state = await row()
    const decision = decide(state, action)
    if (decision.kind === 'replay') return state
    if (decision.kind === 'refuse') throw new ApiError(decision.code, decision.message, { payment: dto(state) })
    // Allowed now but the guarded update missed: the state changed between the two; try once more.
    const retried = await attempt()
    if (retried !== undefined) return retried
    const latest = await row()
    const again = decide(latest, action)
    if (again.kind === 'replay') return latest
    if (again.kind === 'refuse') throw new ApiError(again.code, again.message, { payment: dto(latest) })
    // Still allowed yet still not applied: the payment keeps changing under this move. Never claim success.
    throw new ApiError('payment_busy', 'The payment changed while this move was applied; read it and try again.', { payment: dto(latest) })
  }

  function newIdentifier(): string {
    // 24 characters: fits the ledger's 28-byte text memo, which carries the identifier.
    return randomToken(18)
  }

  function ongoing(row: PaymentRow): ApiError {
    return new ApiError('ongoing_payment_found', `The user already has an open payment ${row.identifier} with this app.`, {
      payment: dto(row),
    })
  }

  const service = {
    /** A2U: the app pays one of its users. */
    async createAppToUser(appId: string, input: PaymentInput & { uid?: unknown }, by: MoveBy): Promise<PaymentDTO> {
      const amount = checked(checkAmount(input.amount))
      const memo = checked(checkMemo(input.memo))
      const metadata = checked(checkMetadata(input.metadata))
      if (typeof input.uid !== 'string' || input.uid.length === 0 || input.uid.length > 64 || unstorableText(input.uid) !== undefined) {
        throw new ApiError('invalid_arguments', 'payment.uid must be the app-specific uid of the recipient.')
      }
      const uid = input.uid
      await deps.listingGate?.(appId, { uid })
      // The one-open-payment rule is the unique index: insert (one statement, the member's wallets
      // read by the INSERT itself), and on a conflict say which payment blocks.
      for (let attempt = 0; attempt < 3; attempt++) {
        try {
          const payment = { identifier: newIdentifier(), amount, memo, metadata }
          // Made alone when the shared statement skipped it: that says why (a conflict, a missing member).
          const row = (await creates.run({ ...payment, appId, uid, by })) ?? (await repo.insertForMember(appId, uid, payment, by))
          if (row !== undefined) return dto(row)
          const member = await repo.findMember(appId, uid)
          if (member === undefined) throw new ApiError('user_not_found', `No user with uid ${uid} has signed in to this app.`)
          if (!member.scopes.includes('wallet_address')) {
            throw new ApiError(
              'missing_scope',
              'The user has not granted this app the wallet_address scope, which app-to-user payments need.',
            )
          }
          // The member granted wallet_address in between: try again.
        } catch (error) {
          if (!isOpenPaymentConflict(error)) throw error
          const member = await repo.findMember(appId, uid)
          const open = member === undefined ? undefined : await repo.findOpen(appId, member.user_id, 'app_to_user')
          if (open !== undefined) throw ongoing(open)
          // It closed in between: try again.
        }
      }
      throw new ApiError('ongoing_payment_found', 'Another payment for this user keeps being created; try again.')
    },

    /**
     * U2A, on the user's side (the client SDK's createPayment). The platform's one-open-payment
     * rule: an open payment without a transaction is cancelled by the new one; one that was
     * already paid on the ledger blocks it until the app completes it.
     */
    async createUserToApp(principal: TokenPrincipal, input: PaymentInput, by: MoveBy): Promise<PaymentDTO> {
      const amount = checked(checkAmount(input.amount))
      const memo = checked(checkMemo(input.memo))
      const metadata = checked(checkMetadata(input.metadata))
      await deps.listingGate?.(principal.appId, { userId: principal.userId })
      const now = clock.now()
      // Creation is serialised per user and app (a row lock on the membership): a new payment
      // cancels the open one, so two racing creates must not cancel each other's.
      const create = () =>
        inTransaction(db, async (trx) => {
          const txRepo = paymentsRepo(trx)
          await txRepo.lockMember(principal.appId, principal.userId)
          const open = await txRepo.findOpen(principal.appId, principal.userId, 'user_to_app')
          if (open !== undefined) {
            if (open.txid !== null) throw ongoing(open)
            // The old payment may have been paid since it was read: then it blocks, as above.
            const replaced = 'replaced by a new payment of the user (one open payment per user and app)'
            if ((await txRepo.cancel(open.identifier, principal.appId, now, by, replaced)) === undefined) {
              const still = await txRepo.findOpen(principal.appId, principal.userId, 'user_to_app')
              if (still !== undefined) throw ongoing(still)
            }
          }
          const parties = await txRepo.findParties(principal.appId, principal.userId)
          return txRepo.insert(
            {
              identifier: newIdentifier(),
              app_id: principal.appId,
              user_id: principal.userId,
              user_uid: principal.uid,
              direction: 'user_to_app',
              amount,
              memo,
              metadata,
              from_address: parties.user_wallet,
              to_address: parties.app_wallet,
              network: parties.network,
            },
            by,
          )
        })
      try {
        return dto(await create())
      } catch (error) {
        // The unique index is the last word on the one-open-payment rule.
        if (!isOpenPaymentConflict(error)) throw error
        const open = await repo.findOpen(principal.appId, principal.userId, 'user_to_app')
        throw open === undefined
          ? new ApiError('ongoing_payment_found', 'Another payment of this user was just created; try again.')
          : ongoing(open)
      }
    },

    async getForApp(appId: string, id: string): Promise<PaymentDTO> {
      return dto(await readForApp(appId, id))
    },

    async getForUser(principal: TokenPrincipal, id: string): Promise<PaymentDTO> {
      return dto(await readForUser(principal, id))
    },

    /**
     * The payment as its user sees it in the platform's own pages (production's account routes):
     * the user's payment in any app, with the app's name. Another user's payment does not exist.
     */
    async getForAccount(userId: string, id: string): Promise<{ payment: PaymentDTO; appName: string }> {
      const owner = await repo.ownerOf(id)
      if (owner === undefined || owner.user_id !== userId) throw notFound(id)
      return { payment: dto(await readForUser({ appId: owner.app_id, userId }, id)), appName: owner.app_name }
    },

    /** The signed-in user's payments in every app, newest first: what the wallet shows beside each transaction. */
    async listForAccount(userId: string, limit: number): Promise<Array<{ appName: string; payment: PaymentDTO }>> {
      const rows = await repo.listForUser(userId, limit)
      return rows.map((row) => ({ appName: row.app_name, payment: dto(expiryView(row)) }))
    },

    /** The signed-in user confirms a payment (POST /account/payments/{id}/pay): the platform pays it from their wallet. */
    async payForAccount(userId: string, id: string): Promise<PaymentDTO> {
      const owner = await repo.ownerOf(id)
      if (owner === undefined || owner.user_id !== userId) throw notFound(id)
      return service.submit({ appId: owner.app_id, userId }, id)
    },

    async approve(appId: string, id: string, by: MoveBy): Promise<PaymentDTO> {
      const row = await move(
        () => viewForApp(appId, id),
        () => repo.approve(id, appId, approvalWindowMs, by),
        { kind: 'approve' },
      )
      return dto(row)
    },

    async complete(appId: string, id: string, txid: string, by: MoveBy): Promise<PaymentDTO> {
      try {
        return dto(
          await move(
            () => viewForApp(appId, id),
            () => completes.run({ identifier: id, appId, txid, now: clock.now(), by }),
            { kind: 'complete', txid },
          ),
        )
      } catch (error) {
        if (error instanceof ApiError && error.code === 'verification_failed') {
          // Say why the transaction did not link: the developer can act on it.
          // On the payment's network's ledger: a transaction on the other network never pays it.
          const network = (await repo.findForApp(id, appId))?.network
          const tx = network === undefined ? undefined : await ledger.findTransaction(network, txid)
          const reason = tx === undefined ? 'tx_not_found' : tx.memo !== id ? 'tx_memo_payment_identifier_mismatch' : 'tx_source_not_payer'
          error.extra.verification_error = reason
        }
        throw error
      }
    },

    /** `recorded`, when given, runs in the cancel's own transaction with the payment cancelled (the portal's audit record). */
    async cancel(
      appId: string,
      id: string,
      by: MoveBy,
      recorded?: (trx: Kysely<DB>, payment: PaymentRow) => Promise<unknown>,
    ): Promise<PaymentDTO> {
      const attempt =
        recorded === undefined
          ? () => repo.cancel(id, appId, clock.now(), by)
          : () =>
              inTransaction(db, async (trx) => {
                const moved = await paymentsRepo(trx).cancel(id, appId, clock.now(), by)
                if (moved !== undefined) await recorded(trx, moved)
                return moved
              })
      return dto(await move(() => viewForApp(appId, id), attempt, { kind: 'cancel' }))
    },

    async userCancel(principal: TokenPrincipal, id: string, by: MoveBy): Promise<PaymentDTO> {
      return dto(
        await move(
          () => viewForUser(principal, id),
          () => repo.userCancel(id, principal.appId, principal.userId, clock.now(), by),
          { kind: 'user_cancel' },
        ),
      )
    },

    /**
     * The user pays, in the platform's wallet: the platform signs the payment transaction with
     * the user's key (memo = identifier) and submits it to the ledger, which links it.
     */
    async submit(principal: PayingUser, id: string): Promise<PaymentDTO> {
      for (let attempt = 0; attempt < SUBMIT_ATTEMPTS; attempt++) {
        const row = await viewForUser(principal, id)
        const decision = decide(row, { kind: 'submit' })
        if (decision.kind === 'replay') return dto(row)
        if (decision.kind === 'refuse') throw new ApiError(decision.code, decision.message, { payment: dto(row) })

        // Opened before the ledger's database transaction: signing inside it is pure computation.
        const seed = await deps.userSeed(principal.userId)
        const sign = (sequence: string): string => {
          const nowSeconds = Math.floor(clock.now().getTime() / 1000)
          const tx = new TransactionBuilder(new Account(row.from_address, sequence), {
            fee: BASE_FEE,
            networkPassphrase: row.network,
            timebounds: { minTime: 0, maxTime: nowSeconds + SUBMIT_TIMEOUT_SECONDS },
          })
            .addOperation(Operation.payment({ destination: row.to_address, asset: Asset.native(), amount: row.amount }))
            .addMemo(Memo.text(row.identifier))
            .build()
          tx.signatures.push(signWithSeed(seed, tx.hash(), row.from_address))
          return tx.toEnvelope().toXDR('base64')
        }
        const result = await ledger.submit(row.network, row.from_address, row.to_address, sign, id)
        if (result.ok) return dto(await readForUser(principal, id))
        if (result.transaction === 'tx_no_source_account') throw new ApiError('missing_wallet', 'The user has no account on the ledger.')
        // A transaction the user submitted themselves took the sequence, or the payment was
        // cancelled (or paid) while this was being applied (then nothing moved): look again.
        if (result.transaction === 'tx_bad_seq') {
          await new Promise((resolve) => setTimeout(resolve, Math.random() * SEQUENCE_BACKOFF_MS * (attempt + 1)))
          continue
        }
        if (result.transaction === PAYMENT_NOT_LINKED) continue
        const codes =
          result.operations === undefined
            ? { transaction: result.transaction }
            : { transaction: result.transaction, operations: result.operations }
        const funds = result.transaction === 'tx_insufficient_balance' || result.operations?.includes('op_underfunded') === true
        throw new ApiError(
          'transaction_failed',
          funds
            ? "The user's wallet does not hold enough to pay this amount and the fee."
            : `The ledger refused the payment (${result.transaction}).`,
          { result_codes: codes },
        )
      }
      // Contention, not a refusal: nothing moved, and the same call later will pay.
      throw new ApiError('wallet_busy', "The user's wallet was busy with other transactions; try again.").retryAfter(
        BUSY_RETRY_AFTER_SECONDS,
      )
    },

    /** Persists the platform's cancel of every payment of the app whose approval window passed (for listings that read rows directly). */
    async expireDueApprovals(appId: string): Promise<void> {
      await approvals.expireApproval({ appId }, approvalWindowMs)
    },

    async incompleteServerPayments(appId: string): Promise<PaymentDTO[]> {
      return (await repo.listIncompleteServerPayments(appId, INCOMPLETE_LIST_LIMIT)).map(dto)
    },

    async incompleteForUser(principal: TokenPrincipal): Promise<PaymentDTO | null> {
      const row = await repo.findIncompleteUserPayment(principal.appId, principal.userId)
      return row === undefined ? null : dto(row)
    },
  }
  return service
}

export type PaymentsService = ReturnType<typeof paymentsServiceFactory>
