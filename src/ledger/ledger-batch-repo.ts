import { type Kysely, type RawBuilder, sql } from 'kysely'
import type { DB } from '../db/schema.js'
import type { MemoType } from './ledger-rules.js'
import type { LedgerNetwork } from './networks.js'

/*
 * The ledger closer's statements (src/ledger/ledger-closer.ts): one each for the whole batch,
 * whatever its size. Each is one SQL text with array parameters, so it is planned once per
 * connection (src/db/database.ts names parameterised statements) and built without a query builder.
 */

/** An account as the closer locks it: balance and sequence as exact integers (stroops). */
export interface LockedAccount {
  balance: string
  sequence: string
  last_modified_ledger: string
}

/** One transaction of a batch, queued to close the ledger at COMMIT (migration 0019, `ledger_close`). */
export interface QueuedTransaction {
  hash: string
  /** Its place in the ledger, from 1. */
  order: number
  network: LedgerNetwork
  source: string
  sequence: string
  feeCharged: string
  maxFee: string
  operationCount: number
  memo: string | null
  memoType: MemoType
  envelopeXdr: string
  resultXdr: string
  feeMeta: Buffer
  feeMetaLedgerAt: number[]
  resultMeta: Buffer
  resultMetaLedgerAt: number[]
  opFrom: string[]
  opTo: string[]
  /** Pi, 7 places. */
  opAmount: string[]
  /** The accounts it changed: they take the ledger's number as their last modified ledger. */
  accounts: string[]
}

/** A PostgreSQL array literal of values that need no quoting (account ids, decimals, integers). */
const arrayLiteral = (values: ReadonlyArray<string | number>): string => `{${values.join(',')}}`

/** The statements of one network's closer (migration 0029: its accounts are (network, address)). */
export function ledgerBatchRepo(db: Kysely<DB>, network: LedgerNetwork) {
  return {
    /**
     * Locks the accounts that exist among `addresses`, in one statement and in address order:
     * every batch, on every process, locks in the same order, so two never wait on each other in a cycle.
     * An address's accounts on both networks are locked (in (address, network) order, the same on
     * both networks' closers): an account's sequence number is one across networks (docs/ledger.md,
     * "Sequence numbers"), so a transaction on one network moves it on the other too. The map holds
     * this network's accounts.
     */
    async lockAccounts(addresses: readonly string[]): Promise<Map<string, LockedAccount>> {
      if (addresses.length === 0) return new Map()
      const { rows } = await sql<LockedAccount & { address: string; network: string }>`
        select address, network, balance::text as balance, sequence::text as sequence, last_modified_ledger::text as last_modified_ledger
        from ledger_accounts where address = any(${[...addresses].sort()}::text[])
        order by address, network for update`.execute(db)
      return new Map(rows.filter((row) => row.network === network).map(({ address, network: _, ...row }) => [address, row]))
    },

    /** New money into a locked account: its balance set to `balance` (the locked one plus `amount`) and the funding recorded, in one statement. */
    async fund(address: string, amount: string, balance: string, at: Date): Promise<void> {
      await sql`
        with funded as (
          update ledger_accounts set balance = ${balance}::numeric where network = ${network} and address = ${address} returning address)
        insert into ledger_fundings (network, address, amount, created_at)
        select ${network}, address, ${amount}::numeric, ${at}::timestamptz from funded`.execute(db)
    },

    /**
     * Writes the batch in one statement: the accounts' balances (Pi, 7 places) and sequences as the
     * batch left them, the batch's transactions queued to close the ledger at COMMIT, and `extra`,
     * data-modifying common table expressions of the batch hook (its links), each `[name, body]`.
     * The accounts are locked; a balance below zero is still refused by the statement, and a count
     * short of the accounts given throws (the batch rolls back): the database's own guard.
     */
    async write(
      accounts: ReadonlyArray<{ address: string; balance: string; sequence: string }>,
      transactions: readonly QueuedTransaction[],
      at: Date,
      extra: ReadonlyArray<readonly [name: string, body: RawBuilder<unknown>]>,
    ): Promise<void> {
      const column = <T>(pick: (tx: QueuedTransaction) => T): T[] => transactions.map(pick)
      const more = extra.map(([name, body]) => sql`, ${sql.id(name)} as (${body})`)
      const { rows } = await sql<{ written: number }>`
        with moved as (
          update ledger_accounts as a set balance = case when a.network = ${network} then v.balance else a.balance end,
            sequence = v.sequence
          from unnest(${accounts.map((a) => a.address)}::text[], ${accounts.map((a) => a.balance)}::numeric[],
            ${accounts.map((a) => a.sequence)}::bigint[]) as v(address, balance, sequence)
          where a.address = v.address and (a.network <> ${network} or v.balance >= 0)
          returning a.address, a.network
        ), written as (
          select address from moved where network = ${network}
        ), queued as (
          insert into ledger_pending (hash, application_order, network, source_account, source_account_sequence, fee_charged,
              max_fee, operation_count, memo, memo_type, envelope_xdr, result_xdr, created_at, fee_meta, fee_meta_ledger_at,
              result_meta, result_meta_ledger_at, op_from, op_to, op_amount, accounts)
          select q.hash, q.application_order, q.network, q.source, q.sequence, q.fee_charged, q.max_fee, q.operation_count,
              q.memo, q.memo_type, q.envelope_xdr, q.result_xdr, ${at}::timestamptz, decode(q.fee_meta, 'hex'),
              q.fee_meta_ledger_at::integer[], decode(q.result_meta, 'hex'), q.result_meta_ledger_at::integer[],
              q.op_from::text[], q.op_to::text[], q.op_amount::numeric[], q.accounts::text[]
          from unnest(${column((tx) => tx.hash)}::text[], ${column((tx) => tx.order)}::integer[], ${column((tx) => tx.network)}::text[],
              ${column((tx) => tx.source)}::text[], ${column((tx) => tx.sequence)}::bigint[], ${column((tx) => tx.feeCharged)}::bigint[],
              ${column((tx) => tx.maxFee)}::bigint[], ${column((tx) => tx.operationCount)}::integer[], ${column((tx) => tx.memo)}::text[],
              ${column((tx) => tx.memoType)}::text[], ${column((tx) => tx.envelopeXdr)}::text[], ${column((tx) => tx.resultXdr)}::text[],
              ${column((tx) => tx.feeMeta.toString('hex'))}::text[], ${column((tx) => arrayLiteral(tx.feeMetaLedgerAt))}::text[],
              ${column((tx) => tx.resultMeta.toString('hex'))}::text[], ${column((tx) => arrayLiteral(tx.resultMetaLedgerAt))}::text[],
              ${column((tx) => arrayLiteral(tx.opFrom))}::text[], ${column((tx) => arrayLiteral(tx.opTo))}::text[],
              ${column((tx) => arrayLiteral(tx.opAmount))}::text[], ${column((tx) => arrayLiteral(tx.accounts))}::text[])
            as q(hash, application_order, network, source, sequence, fee_charged, max_fee, operation_count, memo, memo_type,
              envelope_xdr, result_xdr, fee_meta, fee_meta_ledger_at, result_meta, result_meta_ledger_at, op_from, op_to,
              op_amount, accounts)
        )${sql.join(more, sql``)}
        select count(*)::integer as written from written`.execute(db)
      const written = rows[0]?.written ?? 0
      if (written !== accounts.length) throw new Error(`the batch wrote ${written} of its ${accounts.length} accounts`)
    },
  }
}
