import { type Kysely, sql } from 'kysely'

/**
 * The platform clock's epoch: how many times the sandbox reset the clock to real time. The
 * offset only grows within an epoch, so a process keeps the larger of two readings of one epoch
 * (a read that began before its own move must not undo it) and takes any reading of a newer one.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table platform_clock add column epoch integer not null default 0`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table platform_clock drop column epoch`.execute(db)
}
