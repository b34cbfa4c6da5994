import { type Kysely, sql } from 'kysely'

/**
 * A ledger holds every transaction its closer applied in one database transaction (docs/ledger.md,
 * "Ledgers close in batches"; src/ledger/ledger-closer.ts).
 *
 * - `ledger_transactions.application_order`: the transaction's place in its ledger, from 1 (Horizon's
 *   application order, the middle field of its paging token). Ledgers closed before this migration
 *   hold one transaction each, order 1. `ledger` is no longer unique; (ledger, application_order) is.
 * - `ledger_pending.application_order`: the place the closer gave the queued transaction.
 * - `ledger_close` closes the whole queue at COMMIT: the deferred trigger fires once per queued row;
 *   the first firing draws one number under the ledger-number lock and writes every queued
 *   transaction, its operations, the accounts' last modified ledger and the meta XDR with that
 *   number, then empties the queue, so the later firings find their row gone and return. Every
 *   transaction of a ledger carries the ledger's close time and fee pool (the fees burned up to and
 *   including the ledger).
 * - Stellar's meta XDR has the state of an account before each change; when an earlier transaction
 *   of the same ledger changed the account, that state's `lastModifiedLedgerSeq` is the ledger being
 *   closed, and it is stamped at COMMIT like the others (`ledger_stamp_meta`, offsets in `*_ledger_at`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table ledger_transactions add column application_order integer not null default 1`.execute(db)
  await sql`alter table ledger_transactions alter column application_order drop default`.execute(db)
  await sql`alter table ledger_transactions drop constraint ledger_transactions_ledger_key`.execute(db)
  await sql`create unique index ledger_transactions_ledger_order on ledger_transactions (ledger, application_order)`.execute(db)
  await sql`alter table ledger_pending add column application_order integer not null default 1`.execute(db)
  // The applying transaction's id: the trigger reads its own rows by index, never scanning the
  // queue's dead rows (it is emptied at every COMMIT, so its heap is mostly dead tuples).
  await sql`alter table ledger_pending add column xact xid8 not null default pg_current_xact_id()`.execute(db)
  await sql`create index ledger_pending_xact on ledger_pending (xact)`.execute(db)

  await sql`
    create or replace function ledger_close() returns trigger
    language plpgsql as $$
    declare
      number bigint;
      pool bigint;
      closed timestamptz;
      previous_closed timestamptz;
      me xid8 := pg_current_xact_id();
      fees bigint;
      touched text[];
    begin
      -- The first firing of this COMMIT closed the whole queue, this row with it.
      if not exists (select 1 from ledger_pending p where p.hash = new.hash) then
        return null;
      end if;
      perform pg_advisory_xact_lock(1347177550, 0);
      number := nextval('ledger_numbers');
      -- Under the lock every lower number has committed or rolled back: this row is final.
      select p.fee_pool, p.created_at into pool, previous_closed
        from ledger_transactions p order by p.ledger desc, p.application_order desc limit 1;
      select coalesce(sum(q.fee_charged), 0) into fees from ledger_pending q where q.xact = me;
      pool := coalesce(pool, 0) + fees;
      -- greatest() skips a null: the first ledger closes at the platform time.
      closed := greatest(
        date_trunc('milliseconds', clock_timestamp() + (select offset_ms from platform_clock where id = 1) * interval '1 millisecond'),
        previous_closed);
      insert into ledger_transactions (hash, ledger, application_order, network, source_account, source_account_sequence,
          fee_charged, max_fee, operation_count, memo, memo_type, envelope_xdr, result_xdr, created_at, fee_pool,
          fee_meta_xdr, result_meta_xdr)
        select q.hash, number, q.application_order, q.network, q.source_account, q.source_account_sequence,
          q.fee_charged, q.max_fee, q.operation_count, q.memo, q.memo_type, q.envelope_xdr, q.result_xdr, closed, pool,
          ledger_stamp_meta(q.fee_meta, q.fee_meta_ledger_at, number),
          ledger_stamp_meta(q.result_meta, q.result_meta_ledger_at, number)
        from ledger_pending q where q.xact = me order by q.application_order;
      insert into ledger_operations (transaction_hash, index, type, "from", "to", amount, created_at)
        select q.hash, (o.n - 1)::integer, 'payment', o."from", o."to", o.amount, closed
        from ledger_pending q, unnest(q.op_from, q.op_to, q.op_amount) with ordinality as o("from", "to", amount, n)
        where q.xact = me;
      -- An array, so the accounts are found by their primary key (a semi-join could scan them all).
      select array_agg(distinct a.address) into touched from ledger_pending q, unnest(q.accounts) as a(address) where q.xact = me;
      update ledger_accounts set last_modified_ledger = number where address = any(touched);
      delete from ledger_pending q where q.xact = me;
      perform pg_notify('plinth_ledger_' || left(md5(current_schema()), 16), number::text);
      return null;
    end $$`.execute(db)
}

/** Back to one transaction a ledger: only while every ledger holds one (a later ledger would break the unique number). */
export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index ledger_transactions_ledger_order`.execute(db)
  await sql`alter table ledger_transactions add constraint ledger_transactions_ledger_key unique (ledger)`.execute(db)
  await sql`alter table ledger_transactions drop column application_order`.execute(db)
  await sql`alter table ledger_pending drop column application_order, drop column xact`.execute(db)
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
      select p.fee_pool, p.created_at into pool, previous_closed from ledger_transactions p order by p.ledger desc limit 1;
      pool := coalesce(pool, 0) + new.fee_charged;
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
}
