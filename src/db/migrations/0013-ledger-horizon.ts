import { type Kysely, sql } from 'kysely'

/**
 * What the Horizon API shows of a transaction and a ledger beyond what 0002 stored: the
 * fees burned up to each ledger (Horizon's fee_pool), and the transaction's meta XDR (the
 * balance and sequence changes), written when it is applied. Earlier rows get the fee pool
 * from their order and empty meta. Fundings by time: a ledger's total_coins sums the fundings
 * up to its close.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table ledger_transactions
      add column fee_pool bigint,
      add column fee_meta_xdr text not null default '',
      add column result_meta_xdr text not null default ''`.execute(db)
  await sql`
    update ledger_transactions t set fee_pool = s.pool
    from (select hash, sum(fee_charged) over (order by ledger) as pool from ledger_transactions) s
    where s.hash = t.hash`.execute(db)
  await sql`alter table ledger_transactions alter column fee_pool set not null`.execute(db)
  await sql`create index ledger_fundings_created_at on ledger_fundings (created_at, amount)`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index ledger_fundings_created_at`.execute(db)
  await sql`alter table ledger_transactions drop column fee_pool, drop column fee_meta_xdr, drop column result_meta_xdr`.execute(db)
}
