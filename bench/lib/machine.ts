/** The build, the machine and the versions a report names. */
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'

// ---------------------------------------------------------------------------------------------
// Build.

function newestMtimeMs(path: string): number {
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  let newest = stat.mtimeMs
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtimeMs(join(path, entry)))
  return newest
}

/** Compiles src/ to dist/ with the project's TypeScript when dist/server.js is missing or older than any source. */
export async function ensureBuilt(root: string): Promise<'built' | 'up to date'> {
  const output = join(root, 'dist', 'server.js')
  const inputs = ['src', 'tsconfig.json', 'tsconfig.build.json', 'package-lock.json'].map((p) => join(root, p)).filter(existsSync)
  if (existsSync(output) && statSync(output).mtimeMs >= Math.max(...inputs.map(newestMtimeMs))) return 'up to date'
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  const child = spawn(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: ['ignore', 2, 2] })
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', resolve)
  })
  if (code !== 0) throw new Error(`tsc -p tsconfig.build.json failed (exit ${code}); fix the build before benchmarking`)
  return 'built'
}

// ---------------------------------------------------------------------------------------------
// The machine.

export interface MachineInfo {
  cpu: string
  cores: number
  memoryGiB: number
  node: string
  os: string
}

export function machineInfo(): MachineInfo {
  let cpu = os.cpus()[0]?.model ?? 'unknown CPU'
  try {
    const match = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))
    if (match?.[1] !== undefined) cpu = match[1].trim()
  } catch {
    // Not Linux: os.cpus() it is.
  }
  return {
    cpu,
    cores: os.availableParallelism(),
    memoryGiB: os.totalmem() / 1024 ** 3,
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
  }
}

/**
 * The Node flags `npm start` runs the server with (package.json's start script, `node <flags>
 * dist/server.js`), so the benchmark measures the server as it is deployed. Throws when the
 * script has another shape: the benchmark must not quietly measure something else.
 */
export function startNodeFlags(root: string): string[] {
  const parsed = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts?: { start?: unknown } }
  const start = parsed.scripts?.start
  const match = typeof start === 'string' ? /\bnode((?:\s+--\S+)*)\s+dist\/server\.js\b/.exec(start) : null
  if (match === null) throw new Error(`package.json's start script does not run "node [flags] dist/server.js": ${String(start)}`)
  return (match[1] ?? '')
    .trim()
    .split(/\s+/)
    .filter((flag) => flag !== '')
}

export function packageVersion(root: string, name: string): string {
  try {
    const parsed = JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version?: unknown }
    return typeof parsed.version === 'string' ? parsed.version : 'unknown'
  } catch {
    return 'unknown'
  }
}
