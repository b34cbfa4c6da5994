import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { type RunningPlinth, startPlinth } from '../../src/index.js'
import { assertOneLine, runCli } from '../helpers/cli-process.js'
import { TEST_DB } from '../helpers/platform.js'

/**
 * `plinth snapshot` (src/cli/plinth.ts) and its files, spawned as a user runs it against a running
 * platform with its demo app. Unlike the other CLI suites (scripts/test.mjs, CLI_SUITES), this one
 * runs on both backends: no API suite exports and imports a snapshot file, and an import writes
 * its rows through SQL, where the database itself refuses a value a column cannot take.
 */
describe(`plinth snapshot files (${TEST_DB})`, () => {
  let plinth: RunningPlinth
  const adminToken = 'cli-snapshot-files-admin-token-0123'
  const dir = mkdtempSync(join(tmpdir(), 'plinth-cli-snapshot-files-'))
  before(async () => {
    plinth = await startPlinth({
      adminToken,
      seed: 'demo',
      ...(TEST_DB === 'postgres' ? { databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' } : {}),
    })
  })
  after(async () => {
    rmSync(dir, { recursive: true, force: true })
    await plinth.stop()
  })

  const cli = (...args: string[]) => runCli(['--url', plinth.url, '--admin-token', adminToken, ...args])

  it('snapshot save refuses a taken name unless --force; delete; export to a file and import it back', async () => {
    assert.equal((await cli('snapshot', 'save', 'files')).code, 0)
    const taken = await cli('snapshot', 'save', 'files')
    assert.equal(taken.code, 1)
    assertOneLine(taken.stderr, /snapshot_exists, 409/)
    // The command's own flag, not the API's body field.
    assert.match(taken.stderr, /A snapshot named files exists; pass --force to replace it\./)
    assert.doesNotMatch(taken.stderr, /"replace"|replace=true/)
    await plinth.sandbox.users.create('snap_after_save')
    const forced = await cli('snapshot', 'save', 'files', '--force')
    assert.equal(forced.code, 0, forced.stderr)

    const file = join(dir, 'files.json')
    const exported = await cli('snapshot', 'export', 'files', '--file', file)
    assert.equal(exported.code, 0, exported.stderr)
    const content = JSON.parse(readFileSync(file, 'utf8')) as {
      plinth_snapshot: number
      schema_version: string
      tables: Record<string, unknown[]>
    }
    assert.equal(content.plinth_snapshot, 1)
    assert.ok((content.tables.users?.length ?? 0) > 0)

    const deleted = await cli('snapshot', 'delete', 'files')
    assert.equal(deleted.code, 0, deleted.stderr)
    const again = await cli('snapshot', 'delete', 'files')
    assert.equal(again.code, 1)
    assertOneLine(again.stderr, /snapshot_not_found/)

    const imported = await cli('snapshot', 'import', '--file', file, '--name', 'from-file')
    assert.equal(imported.code, 0, imported.stderr)
    await plinth.sandbox.users.create('snap_after_import')
    assert.equal((await cli('snapshot', 'restore', 'from-file')).code, 0)
    assert.equal((await plinth.sandbox.users.find('snap_after_save')).users.length, 1, 'the forced save is what was exported')
    assert.deepEqual((await plinth.sandbox.users.find('snap_after_import')).users, [])
    const reimport = await cli('snapshot', 'import', '--file', file, '--name', 'from-file')
    assert.equal(reimport.code, 1)
    assertOneLine(reimport.stderr, /snapshot_exists/)
    assert.match(reimport.stderr, /A snapshot named from-file exists; pass --force to replace it\./)
    assert.doesNotMatch(reimport.stderr, /"replace"|replace=true/)
    assert.equal((await cli('snapshot', 'import', '--file', file, '--name', 'from-file', '--force')).code, 0)
    // Without --name: the name the file was exported under.
    assert.equal((await cli('snapshot', 'import', '--file', file)).code, 0)
    assert.ok((await plinth.sandbox.snapshots.list()).snapshots.some((s) => s.name === 'files'))

    let brokenFiles = 0
    const broken = (change: (c: typeof content) => unknown): string => {
      const copy = JSON.parse(JSON.stringify(content)) as typeof content
      const path = join(dir, `broken-${++brokenFiles}.json`)
      writeFileSync(path, JSON.stringify(change(copy) ?? copy))
      return path
    }
    const badFiles: Array<[string, RegExp]> = [
      [
        broken((c) => {
          c.tables.no_such_table = [{}]
        }),
        /no table no_such_table\. \(invalid_snapshot, 400\)/,
      ],
      [
        broken((c) => {
          c.schema_version = '0001_old'
        }),
        /exported from schema 0001_old, .*\(invalid_snapshot, 400\)/,
      ],
      [
        broken((c) => {
          ;(c.tables.users?.[0] as Record<string, unknown>).created_at = 'the day before'
        }),
        /tables\.users: .*\(invalid_snapshot, 400\)/,
      ],
      [
        broken((c) => {
          c.plinth_snapshot = 9
        }),
        /invalid_snapshot/,
      ],
      [broken(() => ({ hello: 'world' })), /\(invalid_arguments, 400\)/],
    ]
    const imports = await Promise.all(badFiles.map(([path]) => cli('snapshot', 'import', '--file', path, '--name', 'broken')))
    for (const [i, bad] of imports.entries()) {
      assert.equal(bad.code, 1, `bad file ${i}: ${bad.stdout}${bad.stderr}`)
      assertOneLine(bad.stderr, badFiles[i]?.[1] ?? /./)
    }
    assert.ok(!(await plinth.sandbox.snapshots.list()).snapshots.some((s) => s.name === 'broken'), 'no refused file was saved')
    // The API: the export is an attachment; an import over 32 MiB is 413.
    const download = await fetch(`${plinth.url}/sandbox/snapshots/files/export`, { headers: { 'x-admin-token': adminToken } })
    assert.equal(download.headers.get('content-disposition'), 'attachment; filename="files.plinth-snapshot.json"')
    assert.equal((await download.text()).length > 0, true)
    const huge = await fetch(`${plinth.url}/sandbox/snapshots/import?name=huge`, {
      method: 'POST',
      headers: { 'x-admin-token': adminToken, 'content-type': 'application/json' },
      body: `{"pad":"${'x'.repeat(33 * 1024 * 1024)}"}`,
    })
    assert.equal(huge.status, 413)
    const refusal = (await huge.json()) as { error: string; error_message: string }
    assert.equal(refusal.error, 'payload_too_large')
    assert.match(refusal.error_message, /32 MiB/)
    const noFile = await cli('snapshot', 'export', 'files')
    assert.equal(noFile.code, 2)
    assertOneLine(noFile.stderr, /missing --file/)
  })
})
