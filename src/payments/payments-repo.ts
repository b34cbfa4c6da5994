import { type Kysely, type RawBuilder, type Selectable, sql } from 'kysely'
import { platformNow, platformNowPlus } from '../clock/platform-now.js'
import { prepared } from '../db/prepared.js'
import type { DB, PaymentsTable } from '../db/schema.js'
import { EVENT_COLUMNS, eventsOf, type MoveBy, OPEN } from './payment-events-sql.js'

export type { MoveBy } from './payment-events-sql.js'

export type PaymentRow = Selectable<PaymentsTable>

/** One complete of many (completeMany). */
export interface CompleteItem {
  identifier: string
  appId: string
  txid: string
  now: Date
  by: MoveBy
}

/** One app-to-user create of many (insertForMembers). */
export interface MemberPaymentItem extends Pick<NewPayment, 'identifier' | 'amount' | 'memo' | 'metadata'> {
  appId: string
  uid: string
  by: MoveBy
}

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

/** Whether a database error is the one-open-payment index refusing a second open payment. */
export function isOpenPaymentConflict(error: unknown): boolean {
  const e = error as { code?: unknown; constraint?: unknown; message?: unknown }
  return e.code === '23505' && (e.constraint === 'payments_one_open' || String(e.message).includes('payments_one_open'))
}

/** Who made a move, as the prepared statements take it (each field one parameter). */
interface ByValues {
  actor: MoveBy['actor']
  actorId: string | null
  requestId: string | null
}

const byValues = (by: MoveBy): ByValues => ({ actor: by.actor, actorId: by.actorId, requestId: by.requestId })

// The payment lifecycle's statements, compiled once (src/db/prepared.ts): the hot path of every A2U
// and U2A payment (BENCHMARKS.md).

const insertForMemberStatement = prepared(
  (db, v: ByValues & { appId: string; uid: string; identifier: string; amount: string; memo: string; metadata: string }) =>
    db
      .with('moved', () =>
        db
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
                sql<string>`${v.identifier}::text`.as('identifier'),
                'au.app_id',
                'au.user_id',
                'au.uid',
                sql<string>`'app_to_user'`.as('direction'),
                sql<string>`${v.amount}::numeric`.as('amount'),
                sql<string>`${v.memo}::text`.as('memo'),
                sql<string>`cast(${v.metadata} as jsonb)`.as('metadata'),
                'a.wallet_address as from_address',
                'u.wallet_address as to_address',
                'a.network',
                platformNow.as('created_at'),
              ])
              .where('au.app_id', '=', v.appId)
              .where('au.uid', '=', v.uid)
              .where(sql<boolean>`'wallet_address' = any(au.scopes)`),
          )
          .returningAll(),
      )
      .with('ev', (qb) =>
        qb
          .insertInto('payment_events')
          .columns(EVENT_COLUMNS)
          .expression(eventsOf('created', v, sql`created_at`)),
      )
      .selectFrom('moved')
      .selectAll(),
)

const insertStatement = prepared((db, v: ByValues & Omit<NewPayment, 'metadata'> & { metadata: string }) =>
  db
    .with('moved', (qb) =>
      qb
        .insertInto('payments')
        .values({
          identifier: v.identifier,
          app_id: v.app_id,
          user_id: v.user_id,
          user_uid: v.user_uid,
          direction: v.direction,
          amount: v.amount,
          memo: v.memo,
          metadata: sql<string>`cast(${v.metadata} as jsonb)`,
          from_address: v.from_address,
          to_address: v.to_address,
          network: v.network,
          created_at: platformNow,
        })
        .returningAll(),
    )
    .with('ev', (qb) =>
      qb
        .insertInto('payment_events')
        .columns(EVENT_COLUMNS)
        .expression(eventsOf('created', v, sql`created_at`)),
    )
    .selectFrom('moved')
    .selectAll(),
)

const approveStatement = prepared((db, v: ByValues & { identifier: string; appId: string; sinceMs: number }) =>
  db
    .with('moved', () =>
      db
        .updateTable('payments')
        .set({ developer_approved: true, approved_at: platformNow })
        .where('identifier', '=', v.identifier)
        .where('app_id', '=', v.appId)
        .where('direction', '=', 'user_to_app')
        .where('developer_approved', '=', false)
        .where('cancelled', '=', false)
        .where('user_cancelled', '=', false)
        .where('created_at', '>', platformNowPlus(v.sinceMs))
        .returningAll(),
    )
    .with('ev', (qb) =>
      qb
        .insertInto('payment_events')
        .columns(EVENT_COLUMNS)
        .expression(eventsOf('approved', v, sql`approved_at`)),
    )
    .selectFrom('moved')
    .selectAll(),
)

/** The payments with these identifiers, with the platform time (the coalesced read of GET /v2/payments/{id}). */
const findManyStatement = prepared((db, v: { identifiers: string[] }) =>
  db.selectFrom('payments').selectAll().select(platformNow.as('platform_now')).where('identifier', '=', sql<string>`any(${v.identifiers})`),
)

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
      const [inserted] = await insertStatement(db, { ...row, metadata: JSON.stringify(row.metadata), ...byValues(by) })
      if (inserted === undefined) throw new Error('the payment insert returned no row')
      return inserted
    },

    async findForApp(identifier: string, appId: string): Promise<PaymentRead | undefined> {
      return read().where('identifier', '=', identifier).where('app_id', '=', appId).executeTakeFirst()
    },

    /** The payments with these identifiers, of any app: the caller checks the app (coalesced reads, src/db/coalesce.ts). */
    async findMany(identifiers: string[]): Promise<Map<string, PaymentRead>> {
      const rows = await findManyStatement(db, { identifiers })
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
      const [inserted] = await insertForMemberStatement(db, {
        appId,
        uid,
        identifier: row.identifier,
        amount: row.amount,
        memo: row.memo,
        metadata: JSON.stringify(row.metadata),
        ...byValues(by),
      })
      return inserted
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
      const [approved] = await approveStatement(db, { identifier, appId, sinceMs: -windowMs, ...byValues(by) })
      return approved
    },

    /**
     * Completes many payments in one statement (concurrent completes, coalesced by the service):
     * each as `complete` does, with its own time and timeline event. Answers each item's row, or
     * undefined where its guard did not hold (the service then reads the payment to say why).
     * Two items on one payment update it once; both get the row when their txid is its.
     */
    async completeMany(items: ReadonlyArray<CompleteItem>): Promise<Array<PaymentRow | undefined>> {
      const { rows } = await sql<PaymentRow & Record<'event_actor' | 'event_actor_id' | 'event_request_id', string | null>>`
        with v as (
          select * from unnest(${items.map((i) => i.identifier)}::text[], ${items.map((i) => i.appId)}::text[],
            ${items.map((i) => i.txid)}::text[], ${items.map((i) => i.now)}::timestamptz[], ${items.map((i) => i.by.actor)}::text[],
            ${items.map((i) => i.by.actorId)}::text[], ${items.map((i) => i.by.requestId)}::text[])
            as v(identifier, app_id, txid, at, actor, actor_id, request_id)
        ), moved as (
          update payments as p set developer_completed = true, completed_at = v.at
          from v
          where p.identifier = v.identifier and p.app_id = v.app_id and p.txid = v.txid and p.tx_verified
            and not p.developer_completed and not p.cancelled and not p.user_cancelled
          returning p.*, v.actor as event_actor, v.actor_id as event_actor_id, v.request_id as event_request_id
        ), ev as (
          insert into payment_events (payment_id, app_id, kind, actor, actor_id, at, request_id, detail)
          select identifier, app_id, 'completed', event_actor, event_actor_id, completed_at, event_request_id, 'txid ' || txid from moved
        )
        select * from moved`.execute(db)
      const byIdentifier = new Map(
        rows.map(({ event_actor: _actor, event_actor_id: _actorId, event_request_id: _requestId, ...row }) => [
          row.identifier,
          row as PaymentRow,
        ]),
      )
      return items.map((item) => {
        const row = byIdentifier.get(item.identifier)
        return row !== undefined && row.app_id === item.appId && row.txid === item.txid ? row : undefined
      })
    },

    /**
     * Creates many app-to-user payments in one statement (concurrent creates, coalesced by the
     * service): each as `insertForMember` does. An item whose member is missing or lacks the
     * scope, or whose user already has an open payment with the app, is skipped (undefined): the
     * service makes it again alone, which says why.
     */
    async insertForMembers(items: ReadonlyArray<MemberPaymentItem>): Promise<Array<PaymentRow | undefined>> {
      const { rows } = await sql<PaymentRow>`
        with v as (
          select * from unnest(${items.map((i) => i.identifier)}::text[], ${items.map((i) => i.appId)}::text[],
            ${items.map((i) => i.uid)}::text[], ${items.map((i) => i.amount)}::numeric[], ${items.map((i) => i.memo)}::text[],
            ${items.map((i) => JSON.stringify(i.metadata))}::jsonb[], ${items.map((i) => i.by.actor)}::text[],
            ${items.map((i) => i.by.actorId)}::text[], ${items.map((i) => i.by.requestId)}::text[])
            as v(identifier, app_id, uid, amount, memo, metadata, actor, actor_id, request_id)
        ), moved as (
          insert into payments (identifier, app_id, user_id, user_uid, direction, amount, memo, metadata, from_address, to_address,
              network, created_at)
          select v.identifier, au.app_id, au.user_id, au.uid, 'app_to_user', v.amount, v.memo, v.metadata, a.wallet_address,
              u.wallet_address, a.network, ${platformNow}
          from v
          join app_users au on au.app_id = v.app_id and au.uid = v.uid and 'wallet_address' = any(au.scopes)
          join users u on u.id = au.user_id
          join apps a on a.id = au.app_id
          on conflict (app_id, user_id, direction) where not developer_completed and not cancelled and not user_cancelled do nothing
          returning *
        ), ev as (
          insert into payment_events (payment_id, app_id, kind, actor, actor_id, at, request_id, detail)
          select m.identifier, m.app_id, 'created', v.actor, v.actor_id, m.created_at, v.request_id, null from moved m join v using (identifier)
        )
        select * from moved`.execute(db)
      const byIdentifier = new Map(rows.map((row) => [row.identifier, row]))
      return items.map((item) => byIdentifier.get(item.identifier))
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
