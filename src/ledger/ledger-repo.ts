import { type Kysely, type RawBuilder, sql } from 'kysely'
import type { DB, LedgerTransactionsTable } from '../db/schema.js'
import { type LedgerNetwork, networkStorage } from './networks.js'

/** Int8 and numeric values are read as text: a JS number would lose sequence numbers and amounts. */
export interface AccountRow {
  address: string
  /** Pi, 7 places. */
  balance: string
  sequence: string
  last_modified_ledger: string
  created_at: Date
}

export interface TransactionRow {
  hash: string
  ledger: string
  application_order: number
  network: LedgerTransactionsTable['network']
  source_account: string
  source_account_sequence: string
  /** Stroops. */
  fee_charged: string
  max_fee: string
  operation_count: number
  memo: string | null
  memo_type: LedgerTransactionsTable['memo_type']
  envelope_xdr: string
  result_xdr: string
  created_at: Date
  fee_meta_xdr: string
  result_meta_xdr: string
}

/**
 * A closed ledger, from the rows of its transactions: their count and operations, its close time
 * and fee pool (the same on each), its first transaction, the ledger before it, the Pi funded by its close.
 */
export interface LedgerRow {
  ledger: string
  /** Of its transaction with the lowest application order (1). */
  first_transaction_hash: string
  transaction_count: number
  operation_count: number
  closed_at: Date
  /** Stroops burned by fees up to and including this ledger. */
  fee_pool: string
  prev_ledger: string | null
  prev_first_transaction_hash: string | null
  /** Pi, 7 places. */
  total_funded: string
}

export interface OperationRow {
  transaction_hash: string
  ledger: string
  application_order: number
  index: number
  type: 'payment'
  from: string
  to: string
  /** Pi, 7 places. */
  amount: string
  created_at: Date
}

/**
 * A page of records in the order of their position: a ledger's number; a transaction's (ledger,
 * application order); an operation's (ledger, application order, index + 1), the fields of their TOIDs.
 */
export interface Page<Position> {
  order: 'asc' | 'desc'
  limit: number
  /** The position the page starts strictly after (ascending) or before (descending); undefined: from the start (or the end). */
  after: Position | undefined
}

type LedgerPage = Page<bigint>
type TransactionPage = Page<readonly [ledger: bigint, order: bigint]>
export type OperationPage = Page<readonly [ledger: bigint, order: bigint, operation: bigint]>

export interface OperationFilter {
  account?: string
  ledger?: string
  transaction?: string
  /** With `transaction`: one operation. */
  index?: number
}

export interface Totals {
  total_balances: string
  total_funded: string
  /** Of total_funded: migration 0029's fundings of money that crossed networks. */
  total_split: string
  total_fees_stroops: string
  negative_balances: number
  mismatched_accounts: number
}

/*
 * LEDGER_NUMBER_LOCK, the advisory lock (class 0x504c4c4e, object 0) under which a ledger number is
 * drawn, lives in migration 0019's `ledger_close`: taken at COMMIT and held until the applying
 * transaction ends, so numbers are drawn in commit order (docs/design.md, "Ledger numbers in commit order").
 */

const text = (column: string) => sql<string>`${sql.ref(column)}::text`

/** `(columns) > (values)` ascending, `<` descending: a row comparison, which the (ledger, application_order) index serves. */
const past = (order: 'asc' | 'desc', columns: RawBuilder<unknown>, position: readonly bigint[]) =>
  sql<boolean>`(${columns}) ${sql.raw(order === 'asc' ? '>' : '<')} (${sql.join(position.map((value) => sql`${value.toString()}::bigint`))})`

/** The ledger of one network (migration 0029): every read and write is that network's. */
export function ledgerRepo(db: Kysely<DB>, network: LedgerNetwork) {
  const selectAccounts = () =>
    db
      .selectFrom('ledger_accounts')
      .select([
        'address',
        text('balance').as('balance'),
        text('sequence').as('sequence'),
        text('last_modified_ledger').as('last_modified_ledger'),
        'created_at',
      ])
      .where('network', '=', network)
  const selectOperations = () =>
    db
      .selectFrom('ledger_operations as o')
      .innerJoin('ledger_transactions as t', 't.hash', 'o.transaction_hash')
      .select([
        'o.transaction_hash',
        text('t.ledger').as('ledger'),
        't.application_order',
        'o.index',
        'o.type',
        'o.from',
        'o.to',
        text('o.amount').as('amount'),
        'o.created_at',
      ])
      .where('o.network', '=', network)
  const transactionColumns = [
    't.hash',
    text('t.ledger').as('ledger'),
    't.application_order',
    't.network',
    't.source_account',
    text('t.source_account_sequence').as('source_account_sequence'),
    text('t.fee_charged').as('fee_charged'),
    text('t.max_fee').as('max_fee'),
    't.operation_count',
    't.memo',
    't.memo_type',
    't.envelope_xdr',
    't.result_xdr',
    't.created_at',
    't.fee_meta_xdr',
    't.result_meta_xdr',
  ] as const
  const selectTransactions = () => db.selectFrom('ledger_transactions as t').select(transactionColumns).where('t.network', '=', network)
  /**
   * The ledgers of `firsts`, a query of the `ledger` and `hash` of their first transactions
   * (application order 1: every ledger has one), in `order`, each summed up from its
   * transactions' rows. Each lateral read is an index range on (ledger, application_order): a
   * page reads its own ledgers' rows and one row before each, whatever the size of the table.
   */
  const selectLedgers = async (firsts: RawBuilder<unknown>, order: 'asc' | 'desc'): Promise<LedgerRow[]> => {
    const { rows } = await sql<LedgerRow>`
      select f.ledger::text as ledger, f.hash as first_transaction_hash, b.transaction_count, b.operation_count,
        b.closed_at, b.fee_pool, p.ledger::text as prev_ledger, p.hash as prev_first_transaction_hash,
        (select coalesce(sum(g.amount), 0)::text from ledger_fundings g where g.network = ${network} and g.created_at <= b.closed_at) as total_funded
      from (${firsts}) as f
      cross join lateral (
        select count(*)::integer as transaction_count, sum(t.operation_count)::integer as operation_count,
          max(t.created_at) as closed_at, max(t.fee_pool)::text as fee_pool
        from ledger_transactions t where t.network = ${network} and t.ledger = f.ledger) as b
      left join lateral (
        select t.ledger, t.hash from ledger_transactions t
        where t.network = ${network} and t.ledger < f.ledger and t.application_order = 1
        order by t.ledger desc limit 1) as p on true
      order by f.ledger ${sql.raw(order)}`.execute(db)
    return rows
  }

  /** An account's sequence number is one across networks (docs/ledger.md, "Sequence numbers"): a new account takes its other network's. */
  const sharedSequence = (address: string) =>
    sql<string>`coalesce((select max(s.sequence) from ledger_accounts s where s.address = ${address}), 0)`

  return {
    /** Creates an account unless one exists at that address; answers whether it did. */
    async insertAccount(address: string, balance: string, at: Date): Promise<boolean> {
      const row = await db
        .insertInto('ledger_accounts')
        .values({ network, address, balance, sequence: sharedSequence(address), created_at: at })
        .onConflict((oc) => oc.columns(['network', 'address']).doNothing())
        .returning('address')
        .executeTakeFirst()
      return row !== undefined
    },

    /** Adds to an account's balance, creating the account if missing; answers the new balance. */
    async credit(address: string, amount: string, at: Date): Promise<string> {
      const row = await db
        .insertInto('ledger_accounts')
        .values({ network, address, balance: amount, sequence: sharedSequence(address), created_at: at })
        .onConflict((oc) => oc.columns(['network', 'address']).doUpdateSet({ balance: sql`ledger_accounts.balance + excluded.balance` }))
        .returning(text('balance').as('balance'))
        .executeTakeFirstOrThrow()
      return row.balance
    },

    async insertFunding(address: string, amount: string, at: Date): Promise<void> {
      await db.insertInto('ledger_fundings').values({ network, address, amount, created_at: at }).execute()
    },

    async findAccount(address: string): Promise<AccountRow | undefined> {
      return selectAccounts().where('address', '=', address).executeTakeFirst()
    },

    /** The accounts with these addresses (coalesced reads, src/db/coalesce.ts). */
    async findAccounts(addresses: string[]): Promise<Map<string, AccountRow>> {
      const rows = await selectAccounts().where('address', '=', sql<string>`any(${addresses})`).execute()
      return new Map(rows.map((row) => [row.address, row]))
    },

    async findTransaction(hash: string): Promise<TransactionRow | undefined> {
      return selectTransactions().where('t.hash', '=', hash).executeTakeFirst()
    },

    /** The transactions with these hashes (the closer reads its batch back after COMMIT, in one statement). */
    async findTransactions(hashes: readonly string[]): Promise<Map<string, TransactionRow>> {
      const rows = await selectTransactions()
        .where('t.hash', '=', sql<string>`any(${[...hashes]}::text[])`)
        .execute()
      return new Map(rows.map((row) => [row.hash, row]))
    },

    async findLedger(ledger: string): Promise<LedgerRow | undefined> {
      const [row] = await selectLedgers(
        sql`select t.ledger, t.hash from ledger_transactions t
          where t.network = ${network} and t.ledger = ${ledger}::bigint and t.application_order = 1`,
        'asc',
      )
      return row
    },

    /** Ledgers in number order: the page's ledgers first (by their first transactions), then their sums. */
    async listLedgers(page: LedgerPage): Promise<LedgerRow[]> {
      const after = page.after === undefined ? sql`true` : past(page.order, sql`t.ledger`, [page.after])
      return selectLedgers(
        sql`select t.ledger, t.hash from ledger_transactions t where t.network = ${network} and t.application_order = 1 and ${after}
          order by t.ledger ${sql.raw(page.order)} limit ${page.limit}`,
        page.order,
      )
    },

    async findOperations(hash: string): Promise<OperationRow[]> {
      return selectOperations().where('o.transaction_hash', '=', hash).orderBy('o.index').execute()
    },

    /**
     * Transactions in (ledger, application order) order; with `account`, those it sent, or that paid
     * it or were paid from it; with `ledger`, that ledger's.
     */
    async listTransactions(page: TransactionPage, filter: { account?: string; ledger?: string } = {}): Promise<TransactionRow[]> {
      const { account } = filter
      let query = selectTransactions()
      if (filter.ledger !== undefined) query = query.where('t.ledger', '=', filter.ledger)
      if (account !== undefined) {
        query = query.where('t.hash', 'in', (eb) =>
          eb
            .selectFrom('ledger_transactions')
            .select('hash')
            .where('network', '=', network)
            .where('source_account', '=', account)
            .union(
              eb
                .selectFrom('ledger_operations')
                .select('transaction_hash as hash')
                .where('network', '=', network)
                .where('from', '=', account),
            )
            .union(
              eb
                .selectFrom('ledger_operations')
                .select('transaction_hash as hash')
                .where('network', '=', network)
                .where('to', '=', account),
            ),
        )
      }
      if (page.after !== undefined) query = query.where(past(page.order, sql`t.ledger, t.application_order`, page.after))
      return query.orderBy('t.ledger', page.order).orderBy('t.application_order', page.order).limit(page.limit).execute()
    },

    /**
     * Operations in (ledger, application order, index) order, strictly after (ascending) or before
     * (descending) `page.after` when given; filtered by account (sender or receiver), ledger or transaction.
     */
    async listOperations(page: OperationPage, filter: OperationFilter): Promise<OperationRow[]> {
      let query = selectOperations()
      if (filter.account !== undefined) {
        const account = filter.account
        query = query.where((eb) => eb.or([eb('o.from', '=', account), eb('o.to', '=', account)]))
      }
      if (filter.ledger !== undefined) query = query.where('t.ledger', '=', filter.ledger)
      if (filter.transaction !== undefined) query = query.where('o.transaction_hash', '=', filter.transaction)
      if (filter.index !== undefined) query = query.where('o.index', '=', filter.index)
      if (page.after !== undefined) query = query.where(past(page.order, sql`t.ledger, t.application_order, o.index + 1`, page.after))
      return query
        .orderBy('t.ledger', page.order)
        .orderBy('t.application_order', page.order)
        .orderBy('o.index', page.order)
        .limit(page.limit)
        .execute()
    },

    /**
     * The ledger with the greatest number. Ordered by the bigint column itself, qualified: a bare
     * `ledger` in ORDER BY names the text output column, and "99" sorts above "220" as text.
     */
    async latestLedger(): Promise<{ ledger: string; closed_at: Date | null }> {
      const row = await db
        .selectFrom('ledger_transactions as t')
        .select(['t.created_at as closed_at', text('t.ledger').as('ledger')])
        .where('t.network', '=', network)
        .orderBy('t.ledger', 'desc')
        .limit(1)
        .executeTakeFirst()
      return row ?? { ledger: '0', closed_at: null }
    },

    /** One consistent snapshot (a single statement) of the sums the invariant check compares. */
    async totals(): Promise<Totals> {
      const { rows } = await sql<Totals>`
        select
          (select coalesce(sum(balance), 0)::text from ledger_accounts where network = ${network}) as total_balances,
          (select coalesce(sum(amount), 0)::text from ledger_fundings where network = ${network}) as total_funded,
          (select coalesce(sum(amount), 0)::text from ledger_fundings where network = ${network} and network_split) as total_split,
          (select coalesce(sum(fee_charged), 0)::text from ledger_transactions where network = ${network}) as total_fees_stroops,
          (select count(*)::int from ledger_accounts where network = ${network} and balance < 0) as negative_balances,
          (select count(*)::int from ledger_accounts a where a.network = ${network} and a.balance <>
              coalesce((select sum(f.amount) from ledger_fundings f where f.network = a.network and f.address = a.address), 0)
            + coalesce((select sum(o.amount) from ledger_operations o where o.network = a.network and o."to" = a.address), 0)
            - coalesce((select sum(o.amount) from ledger_operations o where o.network = a.network and o."from" = a.address), 0)
            - coalesce((select sum(t.fee_charged) from ledger_transactions t
                where t.network = a.network and t.source_account = a.address), 0) / 10000000.0
          ) as mismatched_accounts`.execute(db)
      const row = rows[0]
      if (row === undefined) throw new Error('the totals query answered no row')
      return row
    },
  }
}

export type LedgerRepo = ReturnType<typeof ledgerRepo>

/**
 * The last ledger before the current world's numbering began: a reset or a restore sets the
 * start of `ledger_numbers` with its next number (world-repo.ts), so start − 1 (0 on a platform
 * never reset). Streams resume there after a reset or a restore (horizon/streaming.ts).
 */
export async function worldStartLedger(db: Kysely<DB>, network: LedgerNetwork): Promise<bigint> {
  const { rows } = await sql<{ start: string }>`
    select seqstart::text as start from pg_sequence where seqrelid = ${networkStorage(network).sequence}::text::regclass`.execute(db)
  return BigInt(rows[0]?.start ?? '1') - 1n
}

/** The highest ledger number drawn in this world, committed or not (sequences are not transactional): no served cursor is past it. */
export async function drawnLedger(db: Kysely<DB>, network: LedgerNetwork): Promise<bigint> {
  const { rows } = await sql<{ last: string }>`
    select (case when is_called then last_value else last_value - 1 end)::text as last
    from ${sql.table(networkStorage(network).sequence)}`.execute(db)
  return BigInt(rows[0]?.last ?? '0')
}
