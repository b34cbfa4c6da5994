import { type Kysely, sql } from 'kysely'

/**
 * Ledger numbers drawn at COMMIT (docs/design.md, "Ledger numbers in commit order").
 *
 * A transaction that applies a ledger transaction moves its balances and sequence under its row
 * locks, then queues the transaction in `ledger_pending`. A deferred constraint trigger runs at its
 * COMMIT, inside it: it takes the ledger-number lock, draws the number, writes the transaction, its
 * operations and the fee pool, stamps the number into the accounts and the meta XDR, announces it,
 * and empties the queue. The lock is held from there to the end of the commit only: no round trip
 * to the application server happens under it, so a busy server no longer stretches the one
 * serialised section of the ledger. `ledger_pending` is empty outside an applying transaction.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table ledger_pending (
      hash text primary key,
      network text not null,
      source_account text not null,
      source_account_sequence bigint not null,
      fee_charged bigint not null,
      max_fee bigint not null,
      operation_count integer not null,
      memo text,
      memo_type text not null,
      envelope_xdr text not null,
      result_xdr text not null,
      created_at timestamptz not null,
      fee_meta bytea not null,
      fee_meta_ledger_at integer[] not null,
      result_meta bytea not null,
      result_meta_ledger_at integer[] not null,
      op_from text[] not null,
      op_to text[] not null,
      op_amount numeric(20, 7)[] not null,
      accounts text[] not null
    )`.execute(db)

  // The meta XDR with the ledger's number written at each offset (a uint32, big-endian), as
  // base64 on one line; '' when the number does not fit a uint32 (src/ledger/meta-xdr.ts).
  await sql`
    create function ledger_stamp_meta(meta bytea, ledger_at integer[], ledger bigint) returns text
    language plpgsql immutable as $$
    declare
      at integer;
      number bytea := substring(int8send(ledger) from 5 for 4);
    begin
      if ledger > 4294967295 then
        return '';
      end if;
      foreach at in array ledger_at loop
        meta := overlay(meta placing number from at + 1 for 4);
      end loop;
      return translate(encode(meta, 'base64'), E'\\n', '');
    end $$`.execute(db)

  // 0x504c4c4e: the ledger-number lock's class, as before this migration (ledger-repo.ts).
  await sql`
    create function ledger_close() returns trigger
    language plpgsql as $$
    declare
      number bigint;
      pool bigint;
    begin
      perform pg_advisory_xact_lock(1347177550, 0);
      number := nextval('ledger_numbers');
      -- Under the lock every lower number has committed or rolled back: this row is final.
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

  await sql`
    create constraint trigger ledger_close after insert on ledger_pending
    deferrable initially deferred for each row execute function ledger_close()`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table ledger_pending`.execute(db)
  await sql`drop function ledger_close()`.execute(db)
  await sql`drop function ledger_stamp_meta(bytea, integer[], bigint)`.execute(db)
}
