/** Startup rows: how long a server took to answer, and its memory then; the cold and warm start on disk. */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { elapsedSeconds, formatNumber, log, onCleanup, type RunningServer, readRssKb, startServer } from './lib.js'
import type { StartupRow } from './rows.js'
import { plinthSpec } from './targets.js'

export async function startupRow(label: string, server: RunningServer): Promise<StartupRow> {
  const banner = await server.waitForOutput(/ready in (\d+) ms/, 2_000)
  const rssKb = await readRssKb(server.pid)
  return {
    label,
    startupMs: server.startupMs,
    serverReadyMs: banner?.[1] === undefined ? undefined : Number(banner[1]),
    rssMb: rssKb === undefined ? undefined : rssKb / 1024,
  }
}

/** Cold: PGlite in a fresh directory (initdb, migrations, demo seed); warm: the same directory again. */
export async function measureDiskStartup(): Promise<StartupRow[]> {
  const phaseStart = performance.now()
  const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-'))
  const unregister = onCleanup(() => rmSync(dir, { recursive: true, force: true }))
  const rows: StartupRow[] = []
  try {
    for (const phase of ['cold', 'warm'] as const) {
      const server = await startServer(plinthSpec(`plinth-pglite-${phase}`, { PLINTH_DATA_DIR: dir }))
      try {
        const label = phase === 'cold' ? 'Plinth, PGlite on disk, cold (new directory)' : 'Plinth, PGlite on disk, warm (same directory)'
        rows.push(await startupRow(label, server))
        log(`  ${phase} start on disk: ${formatNumber(server.startupMs)} ms`)
      } finally {
        await server.stop()
      }
    }
  } finally {
    unregister()
    rmSync(dir, { recursive: true, force: true })
  }
  log(`  disk startup done in ${elapsedSeconds(phaseStart)}`)
  return rows
}
