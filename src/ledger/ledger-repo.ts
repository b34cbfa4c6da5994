import { type Kysely, sql } from 'kysely'
import type { DB, LedgerPendingTable, LedgerTransactionsTable } from '../db/schema.js'

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

/** A closed ledger: its transaction, the fees burned so far, the ledger before it, the Pi funded by its close. */
export interface LedgerRow extends TransactionRow {
  /** Stroops. */
  fee_pool: string
  prev_ledger: string | null
  prev_transaction_hash: string | null
  /** Pi, 7 places. */
  total_funded: string
}

export interface OperationRow {
  transaction_hash: string
  ledger: string
  index: number
  type: 'payment'
  from: string
  to: string
  /** Pi, 7 places. */
  amount: string
  created_at: Date
}

/** A transaction queued to close a ledger at commit: its row without the number, its meta blank, its operations. */
export type PendingTransaction = Omit<TransactionRow, 'ledger' | 'fee_meta_xdr' | 'result_meta_xdr'> &
  Pick<LedgerPendingTable, 'fee_meta' | 'fee_meta_ledger_at' | 'result_meta' | 'result_meta_ledger_at' | 'op_from' | 'op_to' | 'op_amount'>

/** A page of records in ledger order. */
export interface Page {
  order: 'asc' | 'desc'
  limit: number
  /** Ascending: the smallest ledger to include; descending: the largest. Undefined: from the start (or the end). */
  bound: bigint | undefined
}

/** A page of operations in (ledger, index) order. */
export interface OperationPage {
  order: 'asc' | 'desc'
  limit: number
  /** The (ledger, index) the page starts strictly after (ascending) or before (descending). */
  after: readonly [ledger: bigint, index: bigint] | undefined
}

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
  total_fees_stroops: string
  negative_balances: number
  mismatched_accounts: number
}

/** The advisory lock class of the platform's signing locks (an arbitrary constant of its own). */
const SIGNER_LOCK_CLASS = 0x504c5331
/*
 * LEDGER_NUMBER_LOCK, the advisory lock (class 0x504c4c4e, object 0) under which a ledger number is
 * drawn, lives in migration 0014's `ledger_close`: taken at COMMIT and held until the applying
 * transaction ends, so numbers are drawn in commit order (docs/design.md, "Ledger numbers in commit order").
 */

const text = (column: string) => sql<string>`${sql.ref(column)}::text`

export function ledgerRepo(db: Kysely<DB>) {
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
  const selectOperations = () =>
    db
      .selectFrom('ledger_operations as o')
      .innerJoin('ledger_transactions as t', 't.hash', 'o.transaction_hash')
      .select([
        'o.transaction_hash',
        text('t.ledger').as('ledger'),
        'o.index',
        'o.type',
        'o.from',
        'o.to',
        text('o.amount').as('amount'),
        'o.created_at',
      ])
  const transactionColumns = [
    't.hash',
    text('t.ledger').as('ledger'),
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
  const previous = (column: 'ledger' | 'hash') =>
    sql<
      string | null
    >`(select p.${sql.ref(column)}::text from ledger_transactions p where p.ledger < t.ledger order by p.ledger desc limit 1)`
  const ledgerColumns = [
    ...transactionColumns,
    text('t.fee_pool').as('fee_pool'),
    previous('ledger').as('prev_ledger'),
    previous('hash').as('prev_transaction_hash'),
    sql<string>`(select coalesce(sum(f.amount), 0)::text from ledger_fundings f where f.created_at <= t.created_at)`.as('total_funded'),
  ] as const

  return {
    /** Creates an account unless one exists at that address; answers whether it did. */
    async insertAccount(address: string, balance: string, at: Date): Promise<boolean> {
      const row = await db
        .insertInto('ledger_accounts')
        .values({ address, balance, created_at: at })
        .onConflict((oc) => oc.column('address').doNothing())
        .returning('address')
        .executeTakeFirst()
      return row !== undefined
    },

    /** Adds to an account's balance, creating the account if missing; answers the new balance. */
    async credit(address: string, amount: string, at: Date): Promise<string> {
      const row = await db
        .insertInto('ledger_accounts')
        .values({ address, balance: amount, created_at: at })
        .onConflict((oc) => oc.column('address').doUpdateSet({ balance: sql`ledger_accounts.balance + excluded.balance` }))
        .returning(text('balance').as('balance'))
        .executeTakeFirstOrThrow()
      return row.balance
    },

    async insertFunding(address: string, amount: string, at: Date): Promise<void> {
      await db.insertInto('ledger_fundings').values({ address, amount, created_at: at }).execute()
    },

    /**
     * Serialises the platform's own signing for one account until the end of the database
     * transaction: a transaction-scoped advisory lock (class SIGNER_LOCK_CLASS, object a hash of
     * the address; two accounts sharing a hash only wait for each other). Taken before any row lock.
     */
    async lockSigner(address: string): Promise<void> {
      await sql`select pg_advisory_xact_lock(${SIGNER_LOCK_CLASS}::int, hashtext(${address}))`.execute(db)
    },

    /**
     * Locks the accounts that exist among `addresses` (sorted: every transaction locks in
     * the same order, so two of them never wait on each other in a cycle).
     */
    async lockAccounts(
      addresses: readonly string[],
    ): Promise<Array<{ address: string; balance: string; sequence: string; last_modified_ledger: string }>> {
      if (addresses.length === 0) return []
      const { rows } = await sql<{ address: string; balance: string; sequence: string; last_modified_ledger: string }>`
        select address, balance::text as balance, sequence::text as sequence, last_modified_ledger::text as last_modified_ledger
        from ledger_accounts where address = any(${[...addresses].sort()}::text[])
        order by address for update`.execute(db)
      return rows
    },

    /**
     * Applies a transaction's effects on its (locked) accounts and queues it to close a ledger, in
     * one statement: every balance moves by its delta (Pi, may be negative) unless that would take
     * it below zero, and the source's sequence moves from `source.expected` to `source.next`, only if
     * it is still at `expected`. The source must be among `deltas` (with 0 when its balance does not
     * move). Answers the addresses updated; when one is missing (its condition failed), nothing is
     * queued and the caller rolls back.
     *
     * The queued transaction gets its ledger number when the applying transaction commits
     * (migration 0014, `ledger_close`): under LEDGER_NUMBER_LOCK, held from there to the end of the
     * commit, so numbers, and the paging tokens made of them, increase in commit order and a
     * follower never sees N+1 before N. A rollback draws no number. The ledger's close time, the
     * stored `created_at`, is taken there too (migration 0015): the platform time then, never before
     * the previous ledger's; `pending.created_at` (the time it was checked at) is not kept.
     */
    async queueTransaction(
      source: { address: string; expected: string; next: string },
      deltas: ReadonlyArray<readonly [address: string, delta: string]>,
      pending: PendingTransaction,
    ): Promise<Set<string>> {
      const { rows } = await sql<{ address: string }>`
        with moved as (
          update ledger_accounts as a set
            balance = a.balance + d.delta,
            sequence = case when a.address = ${source.address} then ${source.next}::bigint else a.sequence end
          from unnest(${deltas.map(([address]) => address)}::text[], ${deltas.map(([, delta]) => delta)}::numeric[]) as d(address, delta)
          where a.address = d.address
            and a.balance + d.delta >= 0
            and (a.address <> ${source.address} or a.sequence = ${source.expected}::bigint)
          returning a.address
        ), queued as (
          insert into ledger_pending (hash, network, source_account, source_account_sequence, fee_charged, max_fee,
              operation_count, memo, memo_type, envelope_xdr, result_xdr, created_at,
              fee_meta, fee_meta_ledger_at, result_meta, result_meta_ledger_at, op_from, op_to, op_amount, accounts)
          select ${pending.hash}, ${pending.network}, ${pending.source_account}, ${pending.source_account_sequence}::bigint,
              ${pending.fee_charged}::bigint, ${pending.max_fee}::bigint, ${pending.operation_count}::integer, ${pending.memo},
              ${pending.memo_type}, ${pending.envelope_xdr}, ${pending.result_xdr}, ${pending.created_at}::timestamptz,
              ${pending.fee_meta}::bytea, ${pending.fee_meta_ledger_at}::integer[], ${pending.result_meta}::bytea,
              ${pending.result_meta_ledger_at}::integer[], ${pending.op_from}::text[], ${pending.op_to}::text[],
              ${pending.op_amount}::numeric[], ${deltas.map(([address]) => address)}::text[]
          where (select count(*) from moved) = ${deltas.length}
        )
        select address from moved`.execute(db)
      return new Set(rows.map((row) => row.address))
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
      return db.selectFrom('ledger_transactions as t').select(transactionColumns).where('t.hash', '=', hash).executeTakeFirst()
    },

    async findLedger(ledger: string): Promise<LedgerRow | undefined> {
      return db.selectFrom('ledger_transactions as t').select(ledgerColumns).where('t.ledger', '=', ledger).executeTakeFirst()
    },

    async listLedgers(page: Page): Promise<LedgerRow[]> {
      let query = db.selectFrom('ledger_transactions as t').select(ledgerColumns)
      if (page.bound !== undefined) query = query.where('t.ledger', page.order === 'asc' ? '>=' : '<=', page.bound.toString())
      return query.orderBy('t.ledger', page.order).limit(page.limit).execute()
    },

    async findOperations(hash: string): Promise<OperationRow[]> {
      return selectOperations().where('o.transaction_hash', '=', hash).orderBy('o.index').execute()
    },

    /** Transactions in ledger order; with `account`, those it sent, or that paid it or were paid from it; with `ledger`, that ledger's. */
    async listTransactions(page: Page, filter: { account?: string; ledger?: string } = {}): Promise<TransactionRow[]> {
      const { account } = filter
      let query = db.selectFrom('ledger_transactions as t').select(transactionColumns)
      if (filter.ledger !== undefined) query = query.where('t.ledger', '=', filter.ledger)
      if (account !== undefined) {
        query = query.where('t.hash', 'in', (eb) =>
          eb
            .selectFrom('ledger_transactions')
            .select('hash')
            .where('source_account', '=', account)
            .union(eb.selectFrom('ledger_operations').select('transaction_hash as hash').where('from', '=', account))
            .union(eb.selectFrom('ledger_operations').select('transaction_hash as hash').where('to', '=', account)),
        )
      }
      if (page.bound !== undefined) query = query.where('t.ledger', page.order === 'asc' ? '>=' : '<=', page.bound.toString())
      return query.orderBy('t.ledger', page.order).limit(page.limit).execute()
    },

    /**
     * Operations in (ledger, index) order, strictly after (ascending) or before (descending)
     * `page.after` when given; filtered by account (sender or receiver), ledger or transaction.
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
      if (page.after !== undefined) {
        const [ledger, index] = page.after
        const op = page.order === 'asc' ? sql.raw('>') : sql.raw('<')
        query = query.where(sql<boolean>`(t.ledger, o.index::bigint) ${op} (${ledger.toString()}::bigint, ${index.toString()}::bigint)`)
      }
      return query.orderBy('t.ledger', page.order).orderBy('o.index', page.order).limit(page.limit).execute()
    },

    /**
     * The ledger with the greatest number. Ordered by the bigint column itself, qualified: a bare
     * `ledger` in ORDER BY names the text output column, and "99" sorts above "220" as text.
     */
    async latestLedger(): Promise<{ ledger: string; closed_at: Date | null }> {
      const row = await db
        .selectFrom('ledger_transactions as t')
        .select(['t.created_at as closed_at', text('t.ledger').as('ledger')])
        .orderBy('t.ledger', 'desc')
        .limit(1)
        .executeTakeFirst()
      return row ?? { ledger: '0', closed_at: null }
    },

    /** One consistent snapshot (a single statement) of the sums the invariant check compares. */
    async totals(): Promise<Totals> {
      const { rows } = await sql<Totals>`
        select
          (select coalesce(sum(balance), 0)::text from ledger_accounts) as total_balances,
          (select coalesce(sum(amount), 0)::text from ledger_fundings) as total_funded,
          (select coalesce(sum(fee_charged), 0)::text from ledger_transactions) as total_fees_stroops,
          (select count(*)::int from ledger_accounts where balance < 0) as negative_balances,
          (select count(*)::int from ledger_accounts a where a.balance <>
              coalesce((select sum(f.amount) from ledger_fundings f where f.address = a.address), 0)
            + coalesce((select sum(o.amount) from ledger_operations o where o."to" = a.address), 0)
            - coalesce((select sum(o.amount) from ledger_operations o where o."from" = a.address), 0)
            - coalesce((select sum(t.fee_charged) from ledger_transactions t where t.source_account = a.address), 0) / 10000000.0
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
export async function worldStartLedger(db: Kysely<DB>): Promise<bigint> {
  const { rows } = await sql<{ start: string }>`
    select seqstart::text as start from pg_sequence where seqrelid = 'ledger_numbers'::regclass`.execute(db)
  return BigInt(rows[0]?.start ?? '1') - 1n
}

/** The highest ledger number drawn in this world, committed or not (sequences are not transactional): no served cursor is past it. */
export async function drawnLedger(db: Kysely<DB>): Promise<bigint> {
  const { rows } = await sql<{ last: string }>`
    select (case when is_called then last_value else last_value - 1 end)::text as last from ledger_numbers`.execute(db)
  return BigInt(rows[0]?.last ?? '0')
}
