#!/usr/bin/env node
// The suite under CPU load: one busy-looping process per core beside `npm test` (scripts/test.mjs,
// with the same arguments: files, folders, --backend=). A test that passes on an idle machine and
// fails here depends on timing it does not wait for. The busy processes are always stopped: at the
// end, on failure, on Ctrl-C or SIGTERM. Prints the wall time and the highest load average seen.
import { spawn } from 'node:child_process'
import { availableParallelism, loadavg } from 'node:os'

const hogCount = Number(process.env.PLINTH_TEST_HOGS ?? availableParallelism())
const hogs = Array.from({ length: hogCount }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }))
const stopHogs = () => {
  for (const hog of hogs) if (hog.exitCode === null && hog.signalCode === null) hog.kill('SIGKILL')
}
// Also on an exit this script did not plan (an uncaught error): the hogs never outlive it.
process.on('exit', stopHogs)

const startedAt = performance.now()
let peakLoad = loadavg()[0] ?? 0
const sampler = setInterval(() => {
  peakLoad = Math.max(peakLoad, loadavg()[0] ?? 0)
}, 5_000)
console.log(`test:loaded: ${hogCount} busy processes (pids ${hogs.map((hog) => hog.pid).join(', ')}) beside the suite`)

// In a process group of its own, so that a signal reaches the test runner scripts/test.mjs started too.
const suite = spawn(process.execPath, ['scripts/test.mjs', ...process.argv.slice(2)], { stdio: 'inherit', detached: true })
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    stopHogs()
    try {
      if (suite.pid !== undefined) process.kill(-suite.pid, signal)
    } catch {
      // already gone
    }
  })
}
suite.on('exit', (code, signal) => {
  clearInterval(sampler)
  stopHogs()
  peakLoad = Math.max(peakLoad, loadavg()[0] ?? 0)
  const seconds = Math.round((performance.now() - startedAt) / 1000)
  console.log(`test:loaded: wall time ${seconds} s, highest 1-minute load average seen ${peakLoad.toFixed(1)}`)
  process.exit(code ?? (signal === null ? 1 : 128))
})
