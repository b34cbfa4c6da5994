import { type Kysely, sql } from 'kysely'

/**
 * Two ledgers, one per network (docs/ledger.md, "Two networks"; src/ledger/networks.ts): `network`
 * is in every ledger table and in its keys. An account is (network, address): one wallet key has
 * an account on each network. A transaction's hash already binds its network (the passphrase is
 * hashed in), so it stays the key of a transaction and of its operations.
 *
 * Each network draws its ledger numbers from its own sequence (`ledger_numbers` for Pi Testnet,
 * `ledger_numbers_mainnet` for Pi Network) under its own ledger-number lock, sums its own fee pool
 * and announces its tip on its own channel (`ledger_close`).
 *
 * Today's rows go to the network they were verified under:
 * - a transaction, and its operations, to the network of its passphrase (`ledger_transactions.network`,
 *   recorded since migration 0002). Ledger numbers are kept (each network's have gaps where the
 *   other's were); the transactions of one ledger are renumbered from 1 within each network, and
 *   each network's fee pool is summed again from its own fees;
 * - an account is copied to both networks with its sequence number (the same on both: see
 *   docs/ledger.md, "Sequence numbers"); its balance on a network is its fundings there plus the
 *   payments it received there, less those it sent and the fees it paid there;
 * - a funding (new money) goes to the network that spent it: each account's fundings cover first
 *   what its home network's history took out, then the other's, and the rest stays on its home
 *   network (an app's wallet: the app's network; the issuing account: Pi Network, where operators
 *   issue; any other: Pi Testnet). A funding is split in two rows when it must. What an account
 *   spent on a network beyond its fundings there (money that crossed networks while they were one)
 *   is covered by a new funding on that network marked `network_split`: the supply check shows it
 *   apart (docs/operators.md, "The ledger check"). Nothing is taken from any balance.
 * - the faucet's daily limit per address reads an index on its audit records' recipient.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const run = (query: ReturnType<typeof sql>) => query.execute(db)
  await run(sql`alter table ledger_transactions drop constraint ledger_transactions_source_account_fkey`)
  await run(sql`alter table ledger_operations drop constraint ledger_operations_from_fkey, drop constraint ledger_operations_to_fkey`)
  await run(sql`alter table ledger_fundings drop constraint ledger_fundings_address_fkey`)

  await run(sql`alter table ledger_operations add column network text`)
  await run(sql`update ledger_operations o set network = t.network from ledger_transactions t where t.hash = o.transaction_hash`)
  await run(sql`alter table ledger_operations alter column network set not null`)
  await run(sql`alter table ledger_fundings add column network text, add column network_split boolean not null default false`)

  // What each account's history took out of (or brought into) each network, fees included.
  await run(sql`
    create table ledger_split_flows as
    select a.address, n.network,
      coalesce((select sum(o.amount) from ledger_operations o where o."to" = a.address and o.network = n.network), 0)
      - coalesce((select sum(o.amount) from ledger_operations o where o."from" = a.address and o.network = n.network), 0)
      - coalesce((select sum(t.fee_charged) from ledger_transactions t where t.source_account = a.address and t.network = n.network), 0)
        / 10000000.0 as flow
    from ledger_accounts a cross join (values ('Pi Testnet'), ('Pi Network')) as n(network)`)
  await run(sql`
    do $$
    declare
      acct record;
      f record;
      other text;
      need_home numeric;
      need_other numeric;
      rest numeric;
      to_home numeric;
      to_other numeric;
    begin
      for acct in
        select s.address, coalesce(
          (select a.network from apps a where a.wallet_address = s.address limit 1),
          (select 'Pi Network' from platform_meta m where m.key = 'issuer' and (m.value::jsonb)->>'address' = s.address),
          'Pi Testnet') as home
        from (select distinct address from ledger_split_flows) s
      loop
        other := case when acct.home = 'Pi Testnet' then 'Pi Network' else 'Pi Testnet' end;
        select greatest(0, -flow) into need_home from ledger_split_flows where address = acct.address and network = acct.home;
        select greatest(0, -flow) into need_other from ledger_split_flows where address = acct.address and network = other;
        for f in select id, amount, created_at from ledger_fundings where address = acct.address order by id loop
          rest := f.amount;
          to_home := least(rest, need_home);
          need_home := need_home - to_home;
          rest := rest - to_home;
          to_other := least(rest, need_other);
          need_other := need_other - to_other;
          to_home := to_home + rest - to_other;
          if to_other = 0 then
            update ledger_fundings set network = acct.home where id = f.id;
          elsif to_home = 0 then
            update ledger_fundings set network = other where id = f.id;
          else
            update ledger_fundings set network = acct.home, amount = to_home where id = f.id;
            insert into ledger_fundings (address, amount, created_at, network) values (acct.address, to_other, f.created_at, other);
          end if;
        end loop;
        if need_home > 0 then
          insert into ledger_fundings (address, amount, created_at, network, network_split)
          values (acct.address, need_home, now() + (select offset_ms from platform_clock where id = 1) * interval '1 millisecond', acct.home, true);
        end if;
        if need_other > 0 then
          insert into ledger_fundings (address, amount, created_at, network, network_split)
          values (acct.address, need_other, now() + (select offset_ms from platform_clock where id = 1) * interval '1 millisecond', other, true);
        end if;
      end loop;
    end $$`)
  // A funding of an address no account holds (none is expected): Pi Testnet.
  await run(sql`update ledger_fundings set network = 'Pi Testnet' where network is null`)
  await run(sql`alter table ledger_fundings alter column network set not null`)

  await run(sql`alter table ledger_accounts drop constraint ledger_accounts_pkey`)
  await run(sql`alter table ledger_accounts add column network text not null default 'Pi Testnet'`)
  await run(sql`alter table ledger_accounts alter column network drop default`)
  await run(sql`
    insert into ledger_accounts (network, address, balance, sequence, last_modified_ledger, created_at)
    select 'Pi Network', address, 0, sequence, last_modified_ledger, created_at from ledger_accounts`)
  await run(sql`alter table ledger_accounts add primary key (network, address)`)
  await run(sql`
    update ledger_accounts a set
      balance = coalesce((select sum(f.amount) from ledger_fundings f where f.address = a.address and f.network = a.network), 0)
        + (select s.flow from ledger_split_flows s where s.address = a.address and s.network = a.network),
      last_modified_ledger = coalesce((select max(t.ledger) from ledger_transactions t where t.network = a.network and (t.source_account = a.address
        or t.hash in (select o.transaction_hash from ledger_operations o where o.network = a.network and (o."from" = a.address or o."to" = a.address)))), 0)`)
  await run(sql`drop table ledger_split_flows`)

  for (const table of ['ledger_accounts', 'ledger_operations', 'ledger_fundings']) {
    await run(
      sql`alter table ${sql.table(table)} add constraint ${sql.id(`${table}_network_check`)} check (network in ('Pi Testnet', 'Pi Network'))`,
    )
  }
  await run(sql`alter table ledger_transactions add foreign key (network, source_account) references ledger_accounts (network, address)`)
  await run(sql`alter table ledger_operations add foreign key (network, "from") references ledger_accounts (network, address)`)
  await run(sql`alter table ledger_operations add foreign key (network, "to") references ledger_accounts (network, address)`)
  await run(sql`alter table ledger_fundings add foreign key (network, address) references ledger_accounts (network, address)`)

  // Each network's ledgers hold their own transactions, from application order 1.
  await run(sql`drop index ledger_transactions_ledger_order`)
  await run(sql`
    update ledger_transactions t set application_order = r.n
    from (select hash, row_number() over (partition by network, ledger order by application_order)::integer as n from ledger_transactions) r
    where r.hash = t.hash and t.application_order <> r.n`)
  await run(sql`create unique index ledger_transactions_ledger_order on ledger_transactions (network, ledger, application_order)`)
  await run(sql`
    update ledger_transactions t set fee_pool = s.pool
    from (select hash, sum(fee_charged) over (partition by network order by ledger) as pool from ledger_transactions) s
    where s.hash = t.hash and t.fee_pool <> s.pool`)
  await run(sql`drop index ledger_transactions_source_account`)
  await run(sql`create index ledger_transactions_source_account on ledger_transactions (network, source_account, ledger)`)
  await run(sql`drop index ledger_operations_from`)
  await run(sql`drop index ledger_operations_to`)
  await run(sql`create index ledger_operations_from on ledger_operations (network, "from")`)
  await run(sql`create index ledger_operations_to on ledger_operations (network, "to")`)
  await run(sql`drop index ledger_fundings_address`)
  await run(sql`drop index ledger_fundings_created_at`)
  await run(sql`create index ledger_fundings_address on ledger_fundings (network, address)`)
  await run(sql`create index ledger_fundings_created_at on ledger_fundings (network, created_at, amount)`)

  // Mainnet's numbers go on from where the one sequence is: no number is ever drawn twice on either network.
  await run(sql`create sequence ledger_numbers_mainnet start 1`)
  await run(sql`
    select setval('ledger_numbers_mainnet', drawn, true) from (
      select greatest((select case when is_called then last_value else last_value - 1 end from ledger_numbers),
        (select coalesce(max(ledger), 0) from ledger_transactions)) as drawn) s
    where drawn > 0`)
  await run(closeFunction('network'))

  await run(sql`create index audit_log_faucet_to on audit_log ((details->>'to'), at) where action = 'faucet'`)
  await run(sql`create index audit_log_faucet_user on audit_log ((details->>'user_id'), at) where action = 'faucet'`)
}

/**
 * `ledger_close` (migration 0019's, written per network here): the first firing of a COMMIT for a
 * network closes that network's queued transactions as one ledger, under that network's lock,
 * with a number from its sequence; `perNetwork` 'one' is 0019's (for `down`).
 */
function closeFunction(perNetwork: 'network' | 'one') {
  const split = perNetwork === 'network'
  const mine = split ? sql`q.xact = me and q.network = net` : sql`q.xact = me`
  return sql`
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
      net text := new.network;
    begin
      -- The first firing of this COMMIT (for this network) closed the whole queue, this row with it.
      if not exists (select 1 from ledger_pending p where p.hash = new.hash) then
        return null;
      end if;
      ${
        split
          ? sql.raw(`if net = 'Pi Network' then
        perform pg_advisory_xact_lock(1347177550, 26);
        number := nextval('ledger_numbers_mainnet');
      else
        perform pg_advisory_xact_lock(1347177550, 0);
        number := nextval('ledger_numbers');
      end if;`)
          : sql.raw(`perform pg_advisory_xact_lock(1347177550, 0);
      number := nextval('ledger_numbers');`)
      }
      -- Under the lock every lower number has committed or rolled back: this row is final.
      select p.fee_pool, p.created_at into pool, previous_closed
        from ledger_transactions p ${split ? sql.raw('where p.network = net') : sql.raw('')}
        order by p.ledger desc, p.application_order desc limit 1;
      select coalesce(sum(q.fee_charged), 0) into fees from ledger_pending q where ${mine};
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
        from ledger_pending q where ${mine} order by q.application_order;
      insert into ledger_operations (transaction_hash, index, type, "from", "to", amount, created_at${split ? sql.raw(', network') : sql.raw('')})
        select q.hash, (o.n - 1)::integer, 'payment', o."from", o."to", o.amount, closed${split ? sql.raw(', q.network') : sql.raw('')}
        from ledger_pending q, unnest(q.op_from, q.op_to, q.op_amount) with ordinality as o("from", "to", amount, n)
        where ${mine};
      -- An array, so the accounts are found by their primary key (a semi-join could scan them all).
      select array_agg(distinct a.address) into touched from ledger_pending q, unnest(q.accounts) as a(address) where ${mine};
      update ledger_accounts set last_modified_ledger = number where ${split ? sql.raw('network = net and ') : sql.raw('')}address = any(touched);
      delete from ledger_pending q where ${mine};
      perform pg_notify(${
        split
          ? sql.raw(`case when net = 'Pi Network' then 'plinth_ledger_mainnet_' else 'plinth_ledger_' end`)
          : sql.raw(`'plinth_ledger_'`)
      } || left(md5(current_schema()), 16), number::text);
      return null;
    end $$`
}

/**
 * Back to one ledger: each address's accounts become one (balances summed, the higher sequence),
 * fundings and operations lose their network, the transactions of a ledger number are ordered
 * again as one ledger (Pi Testnet's first), and the fee pool is summed over both.
 */
export async function down(db: Kysely<unknown>): Promise<void> {
  const run = (query: ReturnType<typeof sql>) => query.execute(db)
  await run(sql`drop index audit_log_faucet_user`)
  await run(sql`drop index audit_log_faucet_to`)
  await run(closeFunction('one'))
  // The one sequence goes on past both networks' numbers.
  await run(sql`
    select setval('ledger_numbers', drawn, true) from (
      select greatest((select case when is_called then last_value else last_value - 1 end from ledger_numbers),
        (select case when is_called then last_value else last_value - 1 end from ledger_numbers_mainnet)) as drawn) s
    where drawn > 0`)
  await run(sql`drop sequence ledger_numbers_mainnet`)
  await run(sql`alter table ledger_transactions drop constraint ledger_transactions_network_source_account_fkey`)
  await run(
    sql`alter table ledger_operations drop constraint ledger_operations_network_from_fkey, drop constraint ledger_operations_network_to_fkey`,
  )
  await run(sql`alter table ledger_fundings drop constraint ledger_fundings_network_address_fkey`)
  await run(sql`
    update ledger_accounts a set balance = m.balance, sequence = m.sequence, last_modified_ledger = m.last_modified_ledger
    from (select address, sum(balance) as balance, max(sequence) as sequence, max(last_modified_ledger) as last_modified_ledger
      from ledger_accounts group by address) m
    where m.address = a.address and a.network = 'Pi Testnet'`)
  await run(sql`
    insert into ledger_accounts (network, address, balance, sequence, last_modified_ledger, created_at)
    select 'Pi Testnet', address, balance, sequence, last_modified_ledger, created_at from ledger_accounts m
    where m.network = 'Pi Network' and not exists (select 1 from ledger_accounts t where t.network = 'Pi Testnet' and t.address = m.address)`)
  await run(sql`delete from ledger_accounts where network = 'Pi Network'`)
  await run(sql`alter table ledger_accounts drop constraint ledger_accounts_pkey`)
  await run(sql`alter table ledger_accounts drop column network`)
  await run(sql`alter table ledger_accounts add primary key (address)`)
  // Dropping a column drops the indexes on it (the operations' and fundings' are made again below).
  await run(sql`alter table ledger_fundings drop column network, drop column network_split`)
  await run(sql`alter table ledger_operations drop column network`)
  await run(sql`drop index ledger_transactions_ledger_order`)
  await run(sql`
    update ledger_transactions t set application_order = r.n
    from (select hash, row_number() over (partition by ledger order by network desc, application_order)::integer as n from ledger_transactions) r
    where r.hash = t.hash`)
  await run(sql`create unique index ledger_transactions_ledger_order on ledger_transactions (ledger, application_order)`)
  await run(sql`
    update ledger_transactions t set fee_pool = s.pool
    from (select hash, sum(fee_charged) over (order by ledger) as pool from ledger_transactions) s where s.hash = t.hash`)
  await run(sql`drop index ledger_transactions_source_account`)
  await run(sql`create index ledger_transactions_source_account on ledger_transactions (source_account, ledger)`)
  for (const [name, column] of [
    ['ledger_operations_from', 'from'],
    ['ledger_operations_to', 'to'],
  ] as const) {
    await run(sql`drop index if exists ${sql.id(name)}`)
    await run(sql`create index ${sql.id(name)} on ledger_operations (${sql.id(column)})`)
  }
  await run(sql`drop index if exists ledger_fundings_address`)
  await run(sql`drop index if exists ledger_fundings_created_at`)
  await run(sql`create index ledger_fundings_address on ledger_fundings (address)`)
  await run(sql`create index ledger_fundings_created_at on ledger_fundings (created_at, amount)`)
  await run(sql`alter table ledger_transactions add foreign key (source_account) references ledger_accounts (address)`)
  await run(sql`alter table ledger_operations add foreign key ("from") references ledger_accounts (address)`)
  await run(sql`alter table ledger_operations add foreign key ("to") references ledger_accounts (address)`)
  await run(sql`alter table ledger_fundings add foreign key (address) references ledger_accounts (address)`)
}
