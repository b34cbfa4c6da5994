import { type Kysely, type RawBuilder, type Selectable, sql } from 'kysely'
import { platformNow, platformNowPlus } from '../clock/platform-now.js'
import type { DB, PaymentsTable } from '../db/schema.js'

export type PaymentRow = Selectable<PaymentsTable>
/** A payment as read, with the platform time the same statement read (the approval window is judged against it). */
export type PaymentRead = PaymentRow & { platform_now: Date }

export interface NewPayment {
  identifier: string
  app_id: string
  user_id: string
  user_uid: string
  direction: PaymentRow['direction']
  amount: string
  memo: string
  metadata: Record<string, unknown>
  from_address: string
  to_address: string
  network: PaymentRow['network']
}

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

const EVENT_COLUMNS = ['payment_id', 'app_id', 'kind', 'actor', 'actor_id', 'at', 'request_id', 'detail'] as const
/**
 * The timeline rows of the rows a move's statement changed (the CTE `moved`): one statement
 * writes the move and its events, so they commit together or not at all.
 */
function eventsOf(kind: string, by: MoveBy, at: RawBuilder<unknown>, detail: RawBuilder<unknown> = sql`null::text`) {
  return sql`select identifier, app_id, ${kind}::text, ${by.actor}::text, ${by.actorId}::text, ${at}, ${by.requestId}::text, ${detail} from moved`
}

/** Whether a database error is the one-open-payment index refusing a second open payment. */
export function isOpenPaymentConflict(error: unknown): boolean {
  const e = error as { code?: unknown; constraint?: unknown; message?: unknown }
  return e.code === '23505' && (e.constraint === 'payments_one_open' || String(e.message).includes('payments_one_open'))
}

/** Still holding the user's one open slot: neither completed nor cancelled by anyone. */
const OPEN = sql<boolean>`not developer_completed and not cancelled and not user_cancelled`

/**
 * Every state change is one UPDATE whose WHERE clause is the state the move is allowed from
 * (payment-state.ts); no row back means the move lost a race or is not allowed, and the
 * service re-reads the row to say which.
 */
export function paymentsRepo(db: Kysely<DB>) {
  const select = () => db.selectFrom('payments').selectAll()
  const read = () => select().select(platformNow.as('platform_now'))
  const update = () => db.updateTable('payments')
  /** A guarded move's UPDATE … RETURNING with its timeline event, as one statement. */
  const recorded = (moved: ReturnType<ReturnType<typeof update>['returningAll']>, events: RawBuilder<unknown>) =>
    db
      .with('moved', () => moved)
      .with('ev', (qb) => qb.insertInto('payment_events').columns(EVENT_COLUMNS).expression(events))
      .selectFrom('moved')
      .selectAll()
      .executeTakeFirst() as Promise<PaymentRow | undefined>

  return {
    async insert(row: NewPayment, by: MoveBy): Promise<PaymentRow> {
      return db
        .with('moved', (qb) =>
          qb
            .insertInto('payments')
            .values({ ...row, metadata: sql<string>`cast(${JSON.stringify(row.metadata)} as jsonb)`, created_at: platformNow })
            .returningAll(),
        )
        .with('ev', (qb) =>
          qb
            .insertInto('payment_events')
            .columns(EVENT_COLUMNS)
            .expression(eventsOf('created', by, sql`created_at`)),
        )
        .selectFrom('moved')
        .selectAll()
        .executeTakeFirstOrThrow()
    },

    async findForApp(identifier: string, appId: string): Promise<PaymentRead | undefined> {
      return read().where('identifier', '=', identifier).where('app_id', '=', appId).executeTakeFirst()
    },

    /** The payments with these identifiers, of any app: the caller checks the app (coalesced reads, src/db/coalesce.ts). */
    async findMany(identifiers: string[]): Promise<Map<string, PaymentRead>> {
      const rows = await read().where('identifier', '=', sql<string>`any(${identifiers})`).execute()
      return new Map(rows.map((row) => [row.identifier, row]))
    },

    async findForUser(identifier: string, appId: string, userId: string): Promise<PaymentRead | undefined> {
      return read().where('identifier', '=', identifier).where('app_id', '=', appId).where('user_id', '=', userId).executeTakeFirst()
    },

    /** A user's payments in every app, newest first, with each app's name. */
    async listForUser(userId: string, limit: number): Promise<Array<PaymentRead & { app_name: string }>> {
      return db
        .selectFrom('payments')
        .innerJoin('apps as a', 'a.id', 'payments.app_id')
        .selectAll('payments')
        .select([platformNow.as('platform_now'), 'a.name as app_name'])
        .where('payments.user_id', '=', userId)
        .orderBy('payments.created_at', 'desc')
        .orderBy('payments.identifier')
        .limit(limit)
        .execute() as Promise<Array<PaymentRead & { app_name: string }>>
    },

    /** The app and user of a payment, and the app's name. */
    async ownerOf(identifier: string): Promise<{ app_id: string; user_id: string; app_name: string } | undefined> {
      return db
        .selectFrom('payments as p')
        .innerJoin('apps as a', 'a.id', 'p.app_id')
        .select(['p.app_id', 'p.user_id', 'a.name as app_name'])
        .where('p.identifier', '=', identifier)
        .executeTakeFirst()
    },

    async linkedTxid(identifier: string): Promise<string | null | undefined> {
      return (await db.selectFrom('payments').select('txid').where('identifier', '=', identifier).executeTakeFirst())?.txid
    },

    async findOpen(appId: string, userId: string, direction: PaymentRow['direction']): Promise<PaymentRow | undefined> {
      return select()
        .where('app_id', '=', appId)
        .where('user_id', '=', userId)
        .where('direction', '=', direction)
        .where(OPEN)
        .executeTakeFirst()
    },

    /**
     * Creates an app-to-user payment for the app's member with this uid in one statement: the
     * recipient's and the app's wallets come from the membership, which must have granted
     * wallet_address. Answers undefined when there is no such member (findMember then says why).
     */
    async insertForMember(
      appId: string,
      uid: string,
      row: Pick<NewPayment, 'identifier' | 'amount' | 'memo' | 'metadata'>,
      by: MoveBy,
    ): Promise<PaymentRow | undefined> {
      const inserted = db
        .insertInto('payments')
        .columns([
          'identifier',
          'app_id',
          'user_id',
          'user_uid',
          'direction',
          'amount',
          'memo',
          'metadata',
          'from_address',
          'to_address',
          'network',
          'created_at',
        ])
        .expression(
          db
            .selectFrom('app_users as au')
            .innerJoin('users as u', 'u.id', 'au.user_id')
            .innerJoin('apps as a', 'a.id', 'au.app_id')
            .select([
              sql<string>`${row.identifier}::text`.as('identifier'),
              'au.app_id',
              'au.user_id',
              'au.uid',
              sql<string>`'app_to_user'`.as('direction'),
              sql<string>`${row.amount}::numeric`.as('amount'),
              sql<string>`${row.memo}::text`.as('memo'),
              sql<string>`cast(${JSON.stringify(row.metadata)} as jsonb)`.as('metadata'),
              'a.wallet_address as from_address',
              'u.wallet_address as to_address',
              'a.network',
              platformNow.as('created_at'),
            ])
            .where('au.app_id', '=', appId)
            .where('au.uid', '=', uid)
            .where(sql<boolean>`'wallet_address' = any(au.scopes)`),
        )
        .returningAll()
      return db
        .with('moved', () => inserted)
        .with('ev', (qb) =>
          qb
            .insertInto('payment_events')
            .columns(EVENT_COLUMNS)
            .expression(eventsOf('created', by, sql`created_at`)),
        )
        .selectFrom('moved')
        .selectAll()
        .executeTakeFirst()
    },

    /** The recipient of an app-to-user payment (the app's member with this uid, with consent and wallet) and the app's wallet. */
    async findMember(
      appId: string,
      uid: string,
    ): Promise<
      | { user_id: string; uid: string; scopes: string[]; wallet_address: string; app_wallet: string; network: PaymentRow['network'] }
      | undefined
    > {
      return db
        .selectFrom('app_users as au')
        .innerJoin('users as u', 'u.id', 'au.user_id')
        .innerJoin('apps as a', 'a.id', 'au.app_id')
        .select(['au.user_id', 'au.uid', 'au.scopes', 'u.wallet_address', 'a.wallet_address as app_wallet', 'a.network'])
        .where('au.app_id', '=', appId)
        .where('au.uid', '=', uid)
        .executeTakeFirst()
    },

    /** Serialises user-to-app payment creation per user and app: a new one cancels the open one. */
    async lockMember(appId: string, userId: string): Promise<void> {
      await db.selectFrom('app_users').select('uid').where('app_id', '=', appId).where('user_id', '=', userId).forNoKeyUpdate().execute()
    },

    /** The two wallets of a user-to-app payment, and the app's network. */
    async findParties(appId: string, userId: string): Promise<{ app_wallet: string; user_wallet: string; network: PaymentRow['network'] }> {
      return db
        .selectFrom('apps')
        .innerJoin('users', (join) => join.on('users.id', '=', userId))
        .select(['apps.wallet_address as app_wallet', 'apps.network', 'users.wallet_address as user_wallet'])
        .where('apps.id', '=', appId)
        .executeTakeFirstOrThrow()
    },

    /** Approves while the approval window (`windowMs`) is open on the platform clock as stored. */
    async approve(identifier: string, appId: string, windowMs: number, by: MoveBy): Promise<PaymentRow | undefined> {
      const moved = update()
        .set({ developer_approved: true, approved_at: platformNow })
        .where('identifier', '=', identifier)
        .where('app_id', '=', appId)
        .where('direction', '=', 'user_to_app')
        .where('developer_approved', '=', false)
        .where('cancelled', '=', false)
        .where('user_cancelled', '=', false)
        .where('created_at', '>', platformNowPlus(-windowMs))
        .returningAll()
      return recorded(moved, eventsOf('approved', by, sql`approved_at`))
    },

    async complete(identifier: string, appId: string, txid: string, now: Date, by: MoveBy): Promise<PaymentRow | undefined> {
      const moved = update()
        .set({ developer_completed: true, completed_at: now })
        .where('identifier', '=', identifier)
        .where('app_id', '=', appId)
        .where('txid', '=', txid)
        .where('tx_verified', '=', true)
        .where(OPEN)
        .returningAll()
      return recorded(moved, eventsOf('completed', by, sql`completed_at`, sql`${`txid ${txid}`}::text`))
    },

    /** The developer's (or the platform's) cancel: allowed while open and not paid by a verified transaction. */
    async cancel(identifier: string, appId: string, now: Date, by: MoveBy, why?: string): Promise<PaymentRow | undefined> {
      const moved = update()
        .set({ cancelled: true, cancelled_at: now })
        .where('identifier', '=', identifier)
        .where('app_id', '=', appId)
        .where(OPEN)
        .where((eb) => eb.or([eb('txid', 'is', null), eb('tx_verified', '=', false)]))
        .returningAll()
      return recorded(moved, eventsOf('cancelled', by, sql`cancelled_at`, sql`${why ?? null}::text`))
    },

    async userCancel(identifier: string, appId: string, userId: string, now: Date, by: MoveBy): Promise<PaymentRow | undefined> {
      const moved = update()
        .set({ user_cancelled: true, cancelled_at: now })
        .where('identifier', '=', identifier)
        .where('app_id', '=', appId)
        .where('user_id', '=', userId)
        .where('direction', '=', 'user_to_app')
        .where(OPEN)
        .where('txid', 'is', null)
        .returningAll()
      return recorded(moved, eventsOf('user_cancelled', by, sql`cancelled_at`))
    },

    /**
     * The platform's cancel of user-to-app payments whose approval window passed, dated when the
     * window closed: one payment, every due payment of an app, or every due payment (before a
     * clock reset). Due on the platform clock as stored.
     */
    async expireApproval(which: { identifier: string } | { appId: string } | 'all', windowMs: number): Promise<void> {
      const due = update()
        .set({ cancelled: true, cancelled_at: sql<Date>`created_at + make_interval(secs => ${windowMs / 1000})` })
        .where('direction', '=', 'user_to_app')
        .where('developer_approved', '=', false)
        .where(OPEN)
        // A payment with a transaction was paid (before the rule that refuses it): never cancel it here.
        .where('txid', 'is', null)
        .where('created_at', '<=', platformNowPlus(-windowMs))
      const moved = (
        which === 'all'
          ? due
          : 'identifier' in which
            ? due.where('identifier', '=', which.identifier)
            : due.where('app_id', '=', which.appId)
      ).returningAll()
      const detail = sql`${`not approved within ${windowMs / 1000} s`}::text`
      await db
        .with('moved', () => moved)
        .with('ev', (qb) =>
          qb
            .insertInto('payment_events')
            .columns(EVENT_COLUMNS)
            .expression(eventsOf('expired', APPROVAL_WINDOW, sql`cancelled_at`, detail)),
        )
        .selectFrom('moved')
        .select('identifier')
        .execute()
    },

    /**
     * Before a clock reset (sandbox/world/clock-reset.ts): every user-to-app payment still waiting for
     * approval keeps the window it had left, so its `created_at` moves back by the offset.
     */
    async shiftPendingApprovals(offsetMs: number): Promise<void> {
      await update()
        .set({ created_at: sql<Date>`created_at - make_interval(secs => ${offsetMs / 1000})` })
        .where('direction', '=', 'user_to_app')
        .where('developer_approved', '=', false)
        .where(OPEN)
        .where('txid', 'is', null)
        .execute()
    },

    /**
     * Links a ledger transaction sent by `payer` to the open, unlinked payment `identifier`, in one
     * statement; verified when its single payment matches the payment's recipient, exact amount
     * and network. A user-to-app payment the app has not approved takes no transaction: the answer
     * says so, and the ledger refuses the transaction (docs/payments.md). The statement matches
     * the payer's payment whatever its state, so it waits for a concurrent approve or cancel of it
     * and decides on the state that move left.
     */
    async linkFromPayer(
      identifier: string,
      link: { txid: string; payer: string; network: string; payment: { to: string; amount: string } | undefined },
      now: Date,
    ): Promise<'linked' | 'not_linked' | 'not_approved'> {
      const { payment } = link
      const verified =
        payment === undefined
          ? sql<boolean>`false`
          : sql<boolean>`(to_address = ${payment.to} and amount = cast(${payment.amount} as numeric) and network = ${link.network})`
      const unapproved = sql<boolean>`(direction = 'user_to_app' and not developer_approved)`
      const links = sql<boolean>`(txid is null and ${OPEN} and not ${unapproved})`
      const moved = update()
        .set({
          txid: sql<string>`case when ${links} then ${link.txid} else txid end`,
          tx_verified: sql<boolean>`case when ${links} then ${verified} else tx_verified end`,
          tx_linked_at: sql<Date>`case when ${links} then ${now}::timestamptz else tx_linked_at end`,
        })
        .where('identifier', '=', identifier)
        .where('from_address', '=', link.payer)
        .returning([
          'identifier',
          'app_id',
          'tx_linked_at',
          'tx_verified',
          sql<boolean>`txid = ${link.txid}`.as('linked'),
          unapproved.as('unapproved'),
        ])
      // The transaction linked: its event, and a second one when it also verified (same statement).
      const linkedDetail = sql`${`txid ${link.txid}`}::text`
      const events = sql`${eventsOf('transaction_linked', LEDGER, sql`tx_linked_at`, linkedDetail)} where linked
        union all ${eventsOf('transaction_verified', LEDGER, sql`tx_linked_at`, linkedDetail)} where linked and tx_verified`
      const row = await db
        .with('moved', () => moved)
        .with('ev', (qb) => qb.insertInto('payment_events').columns(EVENT_COLUMNS).expression(events))
        .selectFrom('moved')
        .select(['linked', 'unapproved'])
        .executeTakeFirst()
      if (row === undefined) return 'not_linked'
      return row.linked ? 'linked' : row.unapproved ? 'not_approved' : 'not_linked'
    },

    /** The app's app-to-user payments not yet completed nor cancelled, oldest first. */
    async listIncompleteServerPayments(appId: string, limit: number): Promise<PaymentRow[]> {
      return select()
        .where('app_id', '=', appId)
        .where('direction', '=', 'app_to_user')
        .where(OPEN)
        .orderBy('created_at')
        .orderBy('identifier')
        .limit(limit)
        .execute()
    },

    /** The user's paid but uncompleted user-to-app payment in this app (what onIncompletePaymentFound reports). */
    async findIncompleteUserPayment(appId: string, userId: string): Promise<PaymentRow | undefined> {
      return select()
        .where('app_id', '=', appId)
        .where('user_id', '=', userId)
        .where('direction', '=', 'user_to_app')
        .where('txid', 'is not', null)
        .where(OPEN)
        .executeTakeFirst()
    },
  }
}
