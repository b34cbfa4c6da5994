import { type Kysely, sql } from 'kysely'

/**
 * Notify in one statement, without counting, and without per-row foreign-key checks
 * (docs/notifications.md has the why and the figures).
 *
 * - `recent_deliveries` carries the quota's state: on one row of each delivery to a user (their
 *   first notification in the request), the times of the app's 48 most recent notifications to
 *   that user, ascending. Existing data gets it on its newest row per app and user.
 * - `notify_deliver(...)` is the whole of notify: lock the recipients' memberships, then, in a
 *   second query (a fresh snapshot, which sees every delivery committed before the locks were
 *   its own), read each one's state from their newest rows, check the quota and insert the batch,
 *   or nothing when a recipient would go over. A function, so that this is one round trip.
 * - The foreign keys to apps and users go: notify, the only writer, inserts rows only for
 *   memberships it holds locked (app_users has those keys), and nothing deletes apps, users or
 *   memberships; the two checks per row were a fifth of PostgreSQL's work per batch.
 * - So does the index by user alone, which only the sandbox's view of a user's every app used:
 *   that view now merges the per-app index over the user's memberships, found by a new index on
 *   app_users (user_id).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table notifications add column recent_deliveries timestamptz[]`.execute(db)
  await sql`
    update notifications n set recent_deliveries = array(
      select c from (
        select o.created_at as c from notifications o
        where o.app_id = newest.app_id and o.user_id = newest.user_id
        order by o.created_at desc limit 48
      ) last48 order by c)
    from (
      select distinct on (app_id, user_id) id, app_id, user_id
      from notifications order by app_id, user_id, created_at desc, id desc
    ) newest
    where n.id = newest.id`.execute(db)
  await sql`alter table notifications drop constraint notifications_app_id_fkey`.execute(db)
  await sql`alter table notifications drop constraint notifications_user_id_fkey`.execute(db)
  await sql`create index app_users_user on app_users (user_id)`.execute(db)
  await sql`drop index notifications_user_created`.execute(db)

  await sql`
    create function notify_deliver(
      p_app text, p_scope text, p_now timestamptz, p_since timestamptz, p_quota integer,
      p_recipients text[], p_counts integer[],
      p_ids text[], p_uids text[], p_titles text[], p_bodies text[], p_subroutes text[], p_firsts boolean[]
    ) returns table (recipient text, over_quota boolean)
    language plpgsql volatile as $fn$
    declare
      member_uids text[];
      member_ids text[];
    begin
      -- The reachable recipients, locked one by one in the order given (the same in every process).
      select array_agg(m.uid), array_agg(m.user_id) into member_uids, member_ids
      from unnest(p_recipients) as w (uid)
      cross join lateral (
        select au.uid, au.user_id from app_users au
        where au.uid = w.uid and au.app_id = p_app and au.notifications_enabled and p_scope = any (au.scopes)
        for no key update
      ) m;
      if member_uids is null then
        return;
      end if;

      -- A new statement, so a new snapshot: it sees every delivery committed before the locks were ours.
      return query
      with wanted as (
        select m.uid, m.user_id, r.n
        from unnest(member_uids, member_ids) as m (uid, user_id)
        join unnest(p_recipients, p_counts) as r (uid, n) on r.uid = m.uid
      ),
      prior as (
        select w.uid, w.user_id, w.n, newest.at,
          case when newest.at is null then '{}'::timestamptz[] else coalesce(newest.recent, array(
            select c from (
              select o.created_at as c from notifications o
              where o.app_id = p_app and o.user_id = w.user_id
              order by o.created_at desc limit p_quota
            ) last_rows order by c)) end as recent
        from wanted w
        left join lateral (
          select max(t.created_at) as at, max(t.recent_deliveries) as recent from (
            select n.created_at, n.recent_deliveries from notifications n
            where n.app_id = p_app and n.user_id = w.user_id
            order by n.created_at desc fetch first 1 row with ties
          ) t
        ) newest on true
      ),
      tallied as (
        select p.uid, p.user_id, p.n, p.recent, greatest(p_now, p.at) as at,
          cardinality(p.recent) - width_bucket(p_since, p.recent) + p.n > p_quota as over
        from prior p
      ),
      inserted as (
        insert into notifications (id, app_id, user_id, user_uid, title, body, subroute, created_at, recent_deliveries)
        select b.id, p_app, t.user_id, b.uid, b.title, b.body, b.subroute, t.at,
          case when b.first then t.recent[greatest(1, cardinality(t.recent) + t.n - p_quota + 1):] || array_fill(t.at, array[t.n]) end
        from unnest(p_ids, p_uids, p_titles, p_bodies, p_subroutes, p_firsts) as b (id, uid, title, body, subroute, first)
        join tallied t on t.uid = b.uid
        where not exists (select from tallied where tallied.over)
      )
      select t.uid, t.over from tallied t;
    end
    $fn$`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop function notify_deliver`.execute(db)
  await sql`create index notifications_user_created on notifications (user_id, created_at desc, id desc)`.execute(db)
  await sql`drop index app_users_user`.execute(db)
  await sql`alter table notifications add constraint notifications_user_id_fkey foreign key (user_id) references users (id)`.execute(db)
  await sql`alter table notifications add constraint notifications_app_id_fkey foreign key (app_id) references apps (id)`.execute(db)
  await sql`alter table notifications drop column recent_deliveries`.execute(db)
}
