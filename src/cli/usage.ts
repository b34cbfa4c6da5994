import { readFileSync } from 'node:fs'

/*
 * What the `plinth` commands share: the exit codes (src/cli/plinth.ts's header says what each
 * means), the usage error (exit 2) and the reading of option values.
 */

export const EXIT = { ok: 0, refused: 1, usage: 2, unreachable: 3 } as const

export class UsageError extends Error {}

const DURATION = /^(\d+(?:\.\d+)?)(s|m|h|d)$/
const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 }

export function parseDuration(text: string): number {
  const match = DURATION.exec(text)
  if (match === null) throw new UsageError(`"${text}" is not a duration: write 90s, 30m, 1h or 2d`)
  return Math.round(Number(match[1]) * (UNIT_SECONDS[match[2] as string] ?? 1))
}

/** A file's text; a file that cannot be read is a usage error. */
export function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8')
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
  }
}

export const integerOption = (values: Record<string, unknown>, name: string): number | undefined => {
  const text = values[name]
  if (typeof text !== 'string') return undefined
  if (!/^\d+$/.test(text)) throw new UsageError(`--${name} takes a whole number, got "${text}"`)
  return Number(text)
}
