import assert from 'node:assert/strict'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { build } from 'esbuild'
import { REPO_ROOT, runPlinthCli } from './server-process.js'

/**
 * The `plinth` command as the CLI suites run it: src/cli/plinth.ts bundled by esbuild once per test
 * process, then started by plain node. Through tsx every call paid for the loader hook again
 * (`plinth --help`: 0.45 s wall against 0.23 s compiled), and these suites make more than a
 * hundred calls. The folder is `.build/run-<pid>/`, which scripts/test-build.mjs removes once this
 * process is gone (as it does its mirrors) if the exit handler did not run. It sits two levels below
 * the repository, as `dist/<domain>/` does, so the packages the bundle leaves external and the paths
 * the sources build from `import.meta.url` (`../../src/web/`) resolve as they do from `dist/`.
 */
const OUT_DIR = join(REPO_ROOT, '.build', `run-${process.pid}`)
let bundle: Promise<string> | undefined

/** The node arguments that run `plinth`, once its bundle is built. */
export async function plinthCliArgs(): Promise<string[]> {
  bundle ??= (async () => {
    process.on('exit', () => rmSync(OUT_DIR, { recursive: true, force: true }))
    await build({
      entryPoints: [join(REPO_ROOT, 'src', 'cli', 'plinth.ts')],
      outdir: OUT_DIR,
      bundle: true,
      // `plinth start` and `plinth admin` import the server's modules when run: chunks other commands never load.
      splitting: true,
      packages: 'external',
      format: 'esm',
      platform: 'node',
      target: 'node20',
    })
    return join(OUT_DIR, 'plinth.js')
  })()
  return [await bundle]
}

/**
 * Runs `plinth <args>` as a user runs it, as runPlinthCli (server-process.ts) does but from the
 * bundle: `env` over this process's environment, without its backend (DATABASE_URL, schema,
 * secret key, data directory); answers when it exits.
 */
export async function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return runPlinthCli(args, { env, node: await plinthCliArgs() })
}

/** One line on standard error, no stack: what every refusal of the CLI prints. */
export function assertOneLine(stderr: string, pattern: RegExp): void {
  assert.equal(stderr.trim().split('\n').length, 1, `one line, got:\n${stderr}`)
  assert.doesNotMatch(stderr, /\n\s+at /)
  assert.match(stderr, pattern)
}
