import { type Kysely, sql } from 'kysely'

/**
 * A ledger's close time is taken when its number is drawn, and never precedes the ledger
 * before it (docs/ledger.md, "Close times").
 *
 * Until now the close time was the platform time the applying process read before its
 * transaction began, while the number is drawn at COMMIT (migration 0014): a transaction that
 * read the clock first could commit second, so close times went back between consecutive
 * ledgers (by up to 1.2 s under 3 processes). `ledger_close` now takes it under the
 * ledger-number lock, where every lower number is final: the platform time at that moment (the
 * database's `clock_timestamp()` plus the stored offset, to the millisecond, as `platformNow`
 * reads it) or the previous ledger's close time, whichever is later. The platform clock only
 * moves back by a sandbox reset; after one, ledgers close at the last close time until the clock
 * passes it again. The close time is the transaction's and its operations' `created_at`, and the
 * header XDR is built from it when read; the meta XDR holds no time.
 *
 * Ledgers closed before this migration are brought to the same rule: each takes the latest close
 * time up to it (a running maximum in ledger order), and its operations follow.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create or replace function ledger_close() returns trigger
    language plpgsql as $$
    declare
      number bigint;
      pool bigint;
      closed timestamptz;
      previous_closed timestamptz;
    begin
      perform pg_advisory_xact_lock(1347177550, 0);
      number := nextval('ledger_numbers');
      -- Under the lock every lower number has committed or rolled back: this row is final.
      select p.fee_pool, p.created_at into pool, previous_closed from ledger_transactions p order by p.ledger desc limit 1;
      pool := coalesce(pool, 0) + new.fee_charged;
      -- greatest() skips a null: the first ledger closes at the platform time.
      closed := greatest(
        date_trunc('milliseconds', clock_timestamp() + (select offset_ms from platform_clock where id = 1) * interval '1 millisecond'),
        previous_closed);
      insert into ledger_transactions (hash, ledger, network, source_account, source_account_sequence, fee_charged, max_fee,
          operation_count, memo, memo_type, envelope_xdr, result_xdr, created_at, fee_pool, fee_meta_xdr, result_meta_xdr)
        values (new.hash, number, new.network, new.source_account, new.source_account_sequence, new.fee_charged, new.max_fee,
          new.operation_count, new.memo, new.memo_type, new.envelope_xdr, new.result_xdr, closed, pool,
          ledger_stamp_meta(new.fee_meta, new.fee_meta_ledger_at, number),
          ledger_stamp_meta(new.result_meta, new.result_meta_ledger_at, number));
      insert into ledger_operations (transaction_hash, index, type, "from", "to", amount, created_at)
        select new.hash, (o.n - 1)::integer, 'payment', o."from", o."to", o.amount, closed
        from unnest(new.op_from, new.op_to, new.op_amount) with ordinality as o("from", "to", amount, n);
      update ledger_accounts set last_modified_ledger = number where address = any(new.accounts);
      delete from ledger_pending where hash = new.hash;
      perform pg_notify('plinth_ledger_' || left(md5(current_schema()), 16), number::text);
      return null;
    end $$`.execute(db)

  await sql`
    update ledger_transactions t set created_at = m.closed
    from (select hash, max(created_at) over (order by ledger) as closed from ledger_transactions) m
    where m.hash = t.hash and m.closed > t.created_at`.execute(db)
  await sql`
    update ledger_operations o set created_at = t.created_at
    from ledger_transactions t
    where t.hash = o.transaction_hash and o.created_at <> t.created_at`.execute(db)
}

/** Back to migration 0014's `ledger_close` (the close times brought forward stay). */
export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    create or replace function ledger_close() returns trigger
    language plpgsql as $$
    declare
      number bigint;
      pool bigint;
    begin
      perform pg_advisory_xact_lock(1347177550, 0);
      number := nextval('ledger_numbers');
      pool := coalesce((select p.fee_pool from ledger_transactions p order by p.ledger desc limit 1), 0) + new.fee_charged;
      insert into ledger_transactions (hash, ledger, network, source_account, source_account_sequence, fee_charged, max_fee,
          operation_count, memo, memo_type, envelope_xdr, result_xdr, created_at, fee_pool, fee_meta_xdr, result_meta_xdr)
        values (new.hash, number, new.network, new.source_account, new.source_account_sequence, new.fee_charged, new.max_fee,
          new.operation_count, new.memo, new.memo_type, new.envelope_xdr, new.result_xdr, new.created_at, pool,
          ledger_stamp_meta(new.fee_meta, new.fee_meta_ledger_at, number),
          ledger_stamp_meta(new.result_meta, new.result_meta_ledger_at, number));
      insert into ledger_operations (transaction_hash, index, type, "from", "to", amount, created_at)
        select new.hash, (o.n - 1)::integer, 'payment', o."from", o."to", o.amount, new.created_at
        from unnest(new.op_from, new.op_to, new.op_amount) with ordinality as o("from", "to", amount, n);
      update ledger_accounts set last_modified_ledger = number where address = any(new.accounts);
      delete from ledger_pending where hash = new.hash;
      perform pg_notify('plinth_ledger_' || left(md5(current_schema()), 16), number::text);
      return null;
    end $$`.execute(db)
}
