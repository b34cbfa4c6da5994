import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { PGlite } from '@electric-sql/pglite'
import { Kysely, sql } from 'kysely'
import { migrateToLatest } from '../../src/db/migrate.js'
import { PGliteDialect } from '../../src/db/pglite-dialect.js'

/**
 * A migrated PGlite data directory, as a tar: each PGlite test platform starts from it instead of
 * running initdb (seconds of CPU each) and every migration. scripts/test.mjs makes it once per run
 * and names it in PLINTH_PGLITE_IMAGE; a test file run alone makes it on first use. Either way it
 * is cached in the temporary directory under a name keyed by the migrations and the PGlite version,
 * so a changed migration or engine never starts from a stale image.
 */
export const PGLITE_IMAGE_ENV = 'PLINTH_PGLITE_IMAGE'

const root = fileURLToPath(new URL('../../', import.meta.url))

/** What the image depends on: the migration code and the engine that wrote it. */
function imageKey(): string {
  const hash = createHash('sha256')
  const migrations = join(root, 'src/db/migrations')
  for (const file of readdirSync(migrations)
    .filter((name) => name.endsWith('.ts'))
    .sort()) {
    hash.update(file).update(readFileSync(join(migrations, file)))
  }
  hash.update(readFileSync(join(root, 'src/db/migrate.ts')))
  const pglite = JSON.parse(readFileSync(join(root, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')) as { version: string }
  hash.update(pglite.version)
  return hash.digest('hex').slice(0, 16)
}

/** The image's path, made first if it is not cached yet. */
export async function ensurePGliteImage(): Promise<string> {
  const path = join(tmpdir(), `plinth-pglite-image-${imageKey()}.tar`)
  if (existsSync(path)) return path
  const engine = new PGlite()
  const db = new Kysely<unknown>({ dialect: new PGliteDialect(engine) })
  try {
    await migrateToLatest(db, undefined)
    await sql`checkpoint`.execute(db)
    const image = await engine.dumpDataDir('none')
    // Written under a name of its own, then renamed: test processes making it at once never read half a file.
    const partial = `${path}.${process.pid}.${Date.now()}.partial`
    writeFileSync(partial, Buffer.from(await image.arrayBuffer()))
    renameSync(partial, path)
  } finally {
    await db.destroy()
  }
  return path
}

let loaded: Promise<Blob> | undefined

/** The image, read once per process. */
export function pgliteImage(): Promise<Blob> {
  loaded ??= (async () => {
    const path = process.env[PGLITE_IMAGE_ENV] ?? (await ensurePGliteImage())
    return new Blob([readFileSync(path)])
  })()
  return loaded
}

// `node --import tsx test/helpers/pglite-image.ts` makes the image and prints its path (scripts/test.mjs).
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  console.log(await ensurePGliteImage())
}
