// The suites as plain JavaScript: a mirror of the repository under `.build/run-<pid>/` in which
// every TypeScript file of src/, test/, bench/ and examples/ is compiled (esbuild, one file at a
// time, as tsx would) beside a link to its source, and everything else is a symbolic link to the
// original. Test processes then start without a loader hook: tsx costs about 1.6 s of CPU in every
// process it starts, and a pass starts more than a hundred. Paths taken from `import.meta.url`
// (`../../docs/…`, the repository root) land in the mirror and reach the same files through its
// links. The mirror is removed when the run ends; a mirror whose run died is removed by the next.
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { transform } from 'esbuild'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const BUILD = join(ROOT, '.build')
/** The folders whose TypeScript is compiled; every other top-level entry is linked whole. */
const COMPILED = new Set(['src', 'test', 'bench', 'examples'])
const SKIPPED = new Set(['.build', '.git'])

/** What of tsconfig.json changes the emitted code: imports kept as written, class fields defined (ES2022). */
const { compilerOptions } = JSON.parse(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8'))
const tsconfigRaw = { compilerOptions: { verbatimModuleSyntax: compilerOptions.verbatimModuleSyntax, useDefineForClassFields: true } }

const isTypeScript = (name) => name.endsWith('.ts') && !name.endsWith('.d.ts')

/** Whether a folder holds TypeScript to compile anywhere below it (if not, it is linked whole). */
function holdsTypeScript(dir) {
  return readdirSync(dir, { withFileTypes: true }).some((entry) =>
    entry.isDirectory() ? entry.name !== 'node_modules' && holdsTypeScript(join(dir, entry.name)) : isTypeScript(entry.name),
  )
}

function link(source, target) {
  symlinkSync(relative(resolve(target, '..'), source), target)
}

/** Mirrors one folder: its TypeScript compiled, the rest linked. Returns the compilations started. */
function mirror(source, target, jobs) {
  mkdirSync(target, { recursive: true })
  for (const entry of readdirSync(source, { withFileTypes: true })) {
    const from = join(source, entry.name)
    const to = join(target, entry.name)
    if (entry.isDirectory() && entry.name !== 'node_modules' && holdsTypeScript(from)) {
      mirror(from, to, jobs)
      continue
    }
    link(from, to)
    if (entry.isFile() && isTypeScript(entry.name)) {
      const js = to.replace(/\.ts$/, '.js')
      jobs.push(
        transform(readFileSync(from, 'utf8'), {
          loader: 'ts',
          format: 'esm',
          platform: 'node',
          target: 'node20',
          tsconfigRaw,
          sourcemap: 'inline',
          sourcefile: from,
        }).then((out) => writeFileSync(js, out.code)),
      )
    }
  }
}

const isAlive = (pid) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return error.code === 'EPERM'
  }
}

/** Builds this run's mirror and returns its folder. It is removed when this process exits. */
export async function buildTests() {
  mkdirSync(BUILD, { recursive: true })
  for (const name of readdirSync(BUILD)) {
    const pid = Number(name.slice('run-'.length))
    if (name.startsWith('run-') && !isAlive(pid)) rmSync(join(BUILD, name), { recursive: true, force: true })
  }
  const dir = join(BUILD, `run-${process.pid}`)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir)
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
  const jobs = []
  for (const entry of readdirSync(ROOT, { withFileTypes: true })) {
    if (SKIPPED.has(entry.name)) continue
    if (entry.isDirectory() && COMPILED.has(entry.name)) mirror(join(ROOT, entry.name), join(dir, entry.name), jobs)
    else link(join(ROOT, entry.name), join(dir, entry.name))
  }
  await Promise.all(jobs)
  return dir
}

/**
 * Groups test files into shards: one entry module per shard in the mirror (`<dir>/shards/`) that
 * imports its files one after another inside a suite named after the shard, so that one process
 * runs them all and pays for starting Node and loading Plinth's modules once, not once per file.
 * Files are dealt round-robin in the order given, about `perShard` to a shard: the expensive
 * folders (chaos, property) spread across shards without a table of costs to keep. The entry sets
 * PLINTH_TEST_DB to `backend` before it loads a file. A file that cannot be loaded fails as a test
 * of its own name; the other files of its shard still run. Returns the entries, relative to `dir`.
 */
export function writeShards(dir, files, perShard, backend) {
  const count = Math.max(1, Math.ceil(files.length / perShard))
  const shards = Array.from({ length: count }, (_, index) => files.filter((_, i) => i % count === index))
  mkdirSync(join(dir, 'shards'), { recursive: true })
  return shards.map((shard, index) => {
    const entry = `shards/${backend}-${String(index + 1).padStart(2, '0')}.test.js`
    const lines = [
      "import { describe, test } from 'node:test'",
      '',
      `process.env.PLINTH_TEST_DB = ${JSON.stringify(backend)}`,
      `describe(${JSON.stringify(`${backend}: shard ${index + 1} of ${count}`)}, async () => {`,
    ]
    for (const file of shard) {
      const specifier = JSON.stringify(`../${file.replace(/\.ts$/, '.js')}`)
      lines.push(
        `  try {\n    await import(${specifier})\n  } catch (error) {\n    test(${JSON.stringify(file)}, () => {\n      throw error\n    })\n  }`,
      )
    }
    lines.push('})')
    writeFileSync(join(dir, entry), `${lines.join('\n')}\n`)
    return entry
  })
}
