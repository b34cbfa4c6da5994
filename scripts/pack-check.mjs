#!/usr/bin/env node
// The installable package, checked as a user installs it: `npm pack`, `npm install <tarball>` in
// an empty project, then `plinth start` (the installed bin, as `npx plinth start` runs it) answers /healthz and the sandbox API, and
// `import { startPlinth } from 'plinth'` starts a platform. Run by .ci/run after the build.
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const started = Date.now()
const npm = (args, cwd) => execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
const dir = mkdtempSync(join(tmpdir(), 'plinth-pack-'))
let server
try {
  const tarball = JSON.parse(npm(['pack', '--json', '--pack-destination', dir], process.cwd()))[0]
  console.log(`packed ${tarball.filename}: ${tarball.size} bytes, ${tarball.entryCount} files`)
  if (tarball.files.some((file) => file.path.endsWith('.ts') && !file.path.endsWith('.d.ts')))
    throw new Error('the tarball ships TypeScript sources')
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'pack-check', private: true, type: 'module' }))
  npm(['install', '--prefer-offline', '--no-audit', '--no-fund', join(dir, tarball.filename)], dir)

  const port = await new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address()
      probe.close(() => resolve(port))
    })
  })
  // The installed bin itself (what `npx plinth` runs), so that stopping it stops the platform: npx
  // would leave it running, holding this script's output open.
  server = spawn(join(dir, 'node_modules', '.bin', 'plinth'), ['start', '--port', String(port), '--data-dir', 'memory'], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'inherit'],
  })
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
  console.log(`plinth start (the installed bin): /healthz and POST /sandbox/users answered on ${url}`)

  const use = [
    "import { startPlinth } from 'plinth'",
    'const p = await startPlinth()',
    "const app = await p.sandbox.apps.create('Packed Shop')",
    "if (!app.api_key) throw new Error('no key')",
    'await p.stop()',
    "console.log('startPlinth() from the package: ready in ' + p.readyMs + ' ms')",
  ]
  writeFileSync(join(dir, 'use.mjs'), `${use.join('\n')}\n`)
  execFileSync(process.execPath, ['use.mjs'], { cwd: dir, stdio: 'inherit' })
  console.log(`pack check passed in ${((Date.now() - started) / 1000).toFixed(1)} s`)
} finally {
  if (server !== undefined && server.exitCode === null) {
    const exited = new Promise((resolve) => server.once('exit', resolve))
    server.kill('SIGTERM')
    await exited
  }
  rmSync(dir, { recursive: true, force: true })
}
