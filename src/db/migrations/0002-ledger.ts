import { type Kysely, sql } from 'kysely'

/**
 * The embedded ledger. Amounts are Pi in numeric(20,7); fees are stroops, as Horizon shows
 * them. Only applied transactions are stored: a refused one leaves no row.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table ledger_accounts (
      address text primary key check (address ~ '^G[A-Z2-7]{55}$'),
      balance numeric(20, 7) not null check (balance >= 0),
      sequence bigint not null default 0 check (sequence >= 0),
      last_modified_ledger bigint not null default 0,
      created_at timestamptz not null
    )`.execute(db)

  // Every applied transaction closes a ledger of its own; numbers come from this sequence.
  await sql`create sequence ledger_numbers start 1`.execute(db)

  await sql`
    create table ledger_transactions (
      hash text primary key check (hash ~ '^[0-9a-f]{64}$'),
      ledger bigint not null unique,
      network text not null check (network in ('Pi Testnet', 'Pi Network')),
      source_account text not null references ledger_accounts (address),
      source_account_sequence bigint not null,
      fee_charged bigint not null check (fee_charged >= 0),
      max_fee bigint not null,
      operation_count integer not null check (operation_count > 0),
      memo text,
      memo_type text not null check (memo_type in ('none', 'text', 'id', 'hash', 'return')),
      envelope_xdr text not null,
      result_xdr text not null,
      created_at timestamptz not null
    )`.execute(db)
  await sql`create index ledger_transactions_source_account on ledger_transactions (source_account, ledger)`.execute(db)
  await sql`create index ledger_transactions_memo on ledger_transactions (memo)`.execute(db)

  await sql`
    create table ledger_operations (
      transaction_hash text not null references ledger_transactions (hash),
      index integer not null check (index >= 0),
      type text not null check (type = 'payment'),
      "from" text not null references ledger_accounts (address),
      "to" text not null references ledger_accounts (address),
      amount numeric(20, 7) not null check (amount > 0),
      created_at timestamptz not null,
      primary key (transaction_hash, index)
    )`.execute(db)
  await sql`create index ledger_operations_from on ledger_operations ("from")`.execute(db)
  await sql`create index ledger_operations_to on ledger_operations ("to")`.execute(db)

  // Every grant of test Pi, so a check can prove: sum of balances = funded - fees burned.
  await sql`
    create table ledger_fundings (
      id bigint generated always as identity primary key,
      address text not null references ledger_accounts (address),
      amount numeric(20, 7) not null check (amount > 0),
      created_at timestamptz not null
    )`.execute(db)
  await sql`create index ledger_fundings_address on ledger_fundings (address)`.execute(db)

  // Wallets made before the ledger existed get the starting balances new ones get (as of this
  // migration: users 1,000, apps 10,000), at platform time.
  for (const [table, amount] of [
    ['users', '1000'],
    ['apps', '10000'],
  ] as const) {
    await sql`
      with opened as (
        insert into ledger_accounts (address, balance, created_at)
        select wallet_address, ${amount}::numeric, now() + (select offset_ms from platform_clock) * interval '1 millisecond'
        from ${sql.table(table)}
        on conflict (address) do nothing
        returning address, balance, created_at
      )
      insert into ledger_fundings (address, amount, created_at) select address, balance, created_at from opened`.execute(db)
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['ledger_fundings', 'ledger_operations', 'ledger_transactions', 'ledger_accounts']) {
    await sql`drop table ${sql.table(table)}`.execute(db)
  }
  await sql`drop sequence ledger_numbers`.execute(db)
}
