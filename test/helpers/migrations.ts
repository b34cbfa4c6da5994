import assert from 'node:assert/strict'
import { readdir } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Kysely, type Migration, Migrator } from 'kysely'
import { migrating } from '../../src/db/migrate.js'

/**
 * Runs the `down` of `name` and of every migration after it, newest first, as the migrator does:
 * the database as a release before `name` left it (its data stays, in that release's schema).
 */
export async function migrateDownToBefore(db: Kysely<unknown>, schema: string | undefined, name: string): Promise<void> {
  // The migrations as this test runs: compiled (.js, beside their .ts in the test mirror) or as TypeScript (tsx).
  const folder = new URL('../../src/db/migrations/', import.meta.url)
  const extension = path.extname(fileURLToPath(import.meta.url))
  const files = (await readdir(folder)).filter((file) => file.endsWith(extension) && !file.endsWith(`.d${extension}`))
  const migrations: Record<string, Migration> = {}
  for (const file of files) migrations[path.basename(file, extension)] = (await import(new URL(file, folder).href)) as Migration
  const names = Object.keys(migrations).sort()
  const before = names[names.indexOf(name) - 1]
  assert.ok(before !== undefined && names.includes(name))
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    ...(schema === undefined ? {} : { migrationTableSchema: schema }),
  })
  // Retried as the platform's own migrations are: another test run's schema dropped under Kysely's
  // introspection failed this in CI (3F000, 'schema "…" does not exist'), with nothing changed.
  await migrating(() => migrator.migrateTo(before))
}
