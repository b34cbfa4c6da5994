/**
 * A contender for embedded data directories, run as its own process by data-dir.test.ts:
 * `node --import tsx test/chaos/dir-contender.ts` (or its compiled `.js`: scriptArgs). It answers one line per command on stdin:
 * - `key <dir>`: resolves the secret key as a first start does; answers `key <hex>`;
 * - `lock <dir>`: takes the directory's lock; answers `won` (holding it), or `lost <message>`
 *   on DataDirInUseError;
 * - `release`: releases the lock it holds; answers `released`.
 *
 * Every file-system call it makes waits a random 0–2 ms first, so that contenders given a
 * command together interleave their steps in many orders instead of one running through
 * before the next is scheduled.
 */
import fs from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import { createInterface } from 'node:readline'

const pause = new Int32Array(new SharedArrayBuffer(4))
const jittered = [
  'linkSync',
  'mkdirSync',
  'openSync',
  'readFileSync',
  'renameSync',
  'statSync',
  'unlinkSync',
  'writeFileSync',
  'writeSync',
] as const
for (const name of jittered) {
  const original = fs[name] as (...args: unknown[]) => unknown
  ;(fs as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
    Atomics.wait(pause, 0, 0, Math.random() * 2)
    return original(...args)
  }
}
// The modules below import these functions by name: make the named exports the jittered ones.
syncBuiltinESMExports()

const { DataDirInUseError, lockDataDir } = await import('../../src/db/data-dir.js')
const { resolveSecretKey } = await import('../../src/lib/secret-key.js')

const answer = (line: string) => process.stdout.write(`${line.replaceAll('\n', ' ')}\n`)
let held: (() => void) | undefined
answer('ready')
for await (const line of createInterface({ input: process.stdin })) {
  const [command, dir = ''] = line.split(' ')
  if (command === 'key') {
    answer(`key ${resolveSecretKey({ dataDir: dir, secretKey: undefined, databaseUrl: undefined }).toString('hex')}`)
  } else if (command === 'lock') {
    try {
      held = await lockDataDir(dir)
      answer('won')
    } catch (error) {
      if (!(error instanceof DataDirInUseError)) throw error
      answer(`lost ${error.message}`)
    }
  } else if (command === 'release') {
    held?.()
    held = undefined
    answer('released')
  }
}
