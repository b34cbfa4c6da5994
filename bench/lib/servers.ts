/** Child servers: starting, readiness, cleanup on success, error and Ctrl-C; logging. */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { createServer } from 'node:net'
import { promisify } from 'node:util'

export const execFileAsync = promisify(execFile)

export function log(message: string): void {
  process.stderr.write(`[bench] ${message}\n`)
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

export function elapsedSeconds(since: number): string {
  return `${((performance.now() - since) / 1000).toFixed(1)} s`
}

// ---------------------------------------------------------------------------------------------
// Cleanup: children are killed and temporary state removed on success, on error and on Ctrl-C.

type CleanupTask = () => void | Promise<void>
const cleanupTasks: CleanupTask[] = []
const liveChildren = new Set<ChildProcess>()

/** Registers a task run (last registered, first run) by runCleanup; answers a function that unregisters it. */
export function onCleanup(task: CleanupTask): () => void {
  cleanupTasks.push(task)
  return () => {
    const at = cleanupTasks.indexOf(task)
    if (at >= 0) cleanupTasks.splice(at, 1)
  }
}

export async function runCleanup(): Promise<void> {
  for (let task = cleanupTasks.pop(); task !== undefined; task = cleanupTasks.pop()) {
    try {
      await task()
    } catch (error) {
      log(`cleanup failed: ${describeError(error)}`)
    }
  }
}

/** Ctrl-C or SIGTERM run the cleanup then exit; a second signal exits at once. Children never outlive this process. */
export function installSignalHandlers(): void {
  let stopping = false
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(130)
    stopping = true
    log(`${signal}: stopping servers and cleaning up`)
    runCleanup().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143))
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  process.on('exit', () => {
    for (const child of liveChildren) child.kill('SIGKILL')
  })
}

export function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

// ---------------------------------------------------------------------------------------------
// Child servers.

export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, host, () => {
      const address = server.address()
      if (address === null || typeof address === 'string') {
        server.close()
        reject(new Error('could not read the port of a listening socket'))
        return
      }
      server.close(() => resolve(address.port))
    })
  })
}

/** The parent's environment without anything that configures Plinth, so each server gets exactly what its spec says. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const dropped = /^(PLINTH_|DATABASE_URL$|PORT$|HOST$|LOG_LEVEL$)/
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !dropped.test(key)))
}

export interface ServerSpec {
  name: string
  command: string
  args: string[]
  /** Added to the cleaned environment, with PORT and HOST. */
  env: Record<string, string>
  cwd: string
  host?: string
  readyPath?: string
  readyTimeoutMs?: number
}

export interface RunningServer {
  name: string
  baseUrl: string
  pid: number
  /** From spawn to the first 200 answer of the readiness path. */
  startupMs: number
  /** The last lines the server wrote. */
  output(): string
  /** Resolves with the first match of the pattern in the server's output, or undefined after timeoutMs. */
  waitForOutput(pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray | undefined>
  /** SIGTERM, then SIGKILL if it has not exited after graceMs. */
  stop(graceMs?: number): Promise<void>
}

const OUTPUT_LIMIT = 32 * 1024

export async function startServer(spec: ServerSpec): Promise<RunningServer> {
  const host = spec.host ?? '127.0.0.1'
  const port = await freePort(host)
  const baseUrl = `http://${host}:${port}`
  let output = ''
  const record = (chunk: Buffer) => {
    output += chunk.toString('utf8')
    if (output.length > OUTPUT_LIMIT) output = output.slice(-OUTPUT_LIMIT)
  }

  const spawnedAt = performance.now()
  const child = spawn(spec.command, spec.args, {
    cwd: spec.cwd,
    env: { ...cleanEnv(), ...spec.env, PORT: String(port), HOST: host },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  liveChildren.add(child)
  child.stdout.on('data', record)
  child.stderr.on('data', record)
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      liveChildren.delete(child)
      resolve()
    })
  })
  const isRunning = () => child.exitCode === null && child.signalCode === null

  const stop = async (graceMs = 15_000) => {
    if (!isRunning()) return
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
    await exited
    clearTimeout(timer)
  }
  const unregister = onCleanup(() => stop(5_000))

  child.on('error', (error) => {
    output += `\nspawn error: ${describeError(error)}\n`
  })
  const pid = child.pid
  if (pid === undefined) {
    unregister()
    throw new Error(`${spec.name}: could not spawn ${spec.command}`)
  }

  try {
    await waitReady(`${baseUrl}${spec.readyPath ?? '/readyz'}`, isRunning, spec.readyTimeoutMs ?? 120_000)
  } catch (error) {
    await stop(2_000)
    unregister()
    throw new Error(`${spec.name}: ${describeError(error)}\n--- server output ---\n${output.trimEnd()}\n---`)
  }
  const startupMs = performance.now() - spawnedAt

  return {
    name: spec.name,
    baseUrl,
    pid,
    startupMs,
    output: () => output,
    async waitForOutput(pattern, timeoutMs) {
      const deadline = performance.now() + timeoutMs
      for (;;) {
        const match = pattern.exec(output)
        if (match !== null || performance.now() >= deadline || !isRunning()) return match ?? undefined
        await sleep(20)
      }
    },
    async stop(graceMs) {
      await stop(graceMs)
      unregister()
    },
  }
}

/** Polls the URL every 20 ms until it answers 200. Fails when the process dies or the time is up. */
export async function waitReady(url: string, isRunning: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs
  let last = 'no answer yet'
  while (performance.now() < deadline) {
    if (!isRunning()) throw new Error(`exited before ${url} answered 200 (${last})`)
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) })
      await response.arrayBuffer()
      if (response.status === 200) return
      last = `HTTP ${response.status}`
    } catch (error) {
      last = describeError(error)
    }
    await sleep(20)
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms (${last})`)
}
