/** Waiting for a quiet machine before each measurement, within the run's allowance. */
import { elapsedSeconds, log, otherProcessesBusyPercent } from './lib.js'
import { BUSY_MACHINE_PERCENT, type Settings } from './settings.js'

/** What is left of the run's allowance for waiting on other work (Settings.quietWait). */
export const quietAllowance = { remainingMs: 0 }

/**
 * The CPU other processes use (over half a second) just before a measurement. On a shared machine,
 * when they are busy, waits for them (up to Settings.quietWait) before measuring anyway; the row is
 * flagged when they were still busy.
 */
export async function quietMachine(settings: Settings, pids: readonly number[]): Promise<number | undefined> {
  const startedAt = performance.now()
  const limitMs = Math.min(settings.quietWait.perMeasurementSeconds * 1000, quietAllowance.remainingMs)
  const sampleMs = settings.quick ? 250 : 500
  let background = await otherProcessesBusyPercent(sampleMs, pids)
  const busy = () => background !== undefined && background > BUSY_MACHINE_PERCENT
  if (busy() && limitMs > 0) {
    log(`  other processes use ${background?.toFixed(0) ?? '?'}% of a core: waiting up to ${(limitMs / 1000).toFixed(0)} s for them`)
    while (busy() && performance.now() - startedAt < limitMs) background = await otherProcessesBusyPercent(sampleMs, pids)
    quietAllowance.remainingMs = Math.max(0, quietAllowance.remainingMs - (performance.now() - startedAt))
    log(`  waited ${elapsedSeconds(startedAt)}; ${busy() ? 'still busy' : 'quiet now'} (${background?.toFixed(0) ?? '?'}%)`)
  }
  if (busy()) {
    log(
      `  !!! the machine is busy before the run: ${background?.toFixed(0) ?? '?'}% of a core used by other processes; expect noisy numbers`,
    )
  }
  return background
}
