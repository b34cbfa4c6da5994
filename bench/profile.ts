/**
 * Where a profiled server's CPU went during a measured window: reads the `.cpuprofile` that
 * `node --cpu-prof` writes when the server exits, keeps the samples taken inside the window, and
 * sums them by package (node_modules), by Plinth source file, and by function (self and total).
 * The window is in process.hrtime nanoseconds of the orchestrator: V8's profile timestamps are the
 * same monotonic clock, in microseconds.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { markdownTable } from './lib.js'

export interface CpuProfileWindow {
  label: string
  startNs: bigint
  endNs: bigint
}

interface CallFrame {
  functionName: string
  url: string
  lineNumber: number
}

interface ProfileNode {
  id: number
  callFrame: CallFrame
  children?: number[]
}

interface CpuProfile {
  nodes: ProfileNode[]
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}

function isCpuProfile(value: unknown): value is CpuProfile {
  if (typeof value !== 'object' || value === null) return false
  const record = value as Record<string, unknown>
  return (
    Array.isArray(record.nodes) && Array.isArray(record.samples) && Array.isArray(record.timeDeltas) && typeof record.startTime === 'number'
  )
}

/** The profile `node --cpu-prof` wrote for the process `pid` in `dir` (CPU.<date>.<time>.<pid>.<tid>.<seq>.cpuprofile). */
export function findCpuProfile(dir: string, pid: number): string | undefined {
  const name = readdirSync(dir).find((file) => file.endsWith('.cpuprofile') && file.split('.')[3] === String(pid))
  return name === undefined ? undefined : join(dir, name)
}

/** Where a frame's code lives: a package, a Plinth source file, Node itself, or one of V8's pseudo-frames. */
function place(frame: CallFrame): string {
  const { url, functionName } = frame
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)'
  if (url.startsWith('node:')) return 'node internals'
  const modules = url.lastIndexOf('/node_modules/')
  if (modules >= 0) {
    const parts = url.slice(modules + '/node_modules/'.length).split('/')
    const name = parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1] ?? ''}` : (parts[0] ?? '?')
    return name
  }
  const dist = url.indexOf('/dist/')
  if (dist >= 0) return `plinth ${url.slice(dist + 1)}`
  return url.replace(/^file:\/\//, '')
}

function frameName(frame: CallFrame): string {
  const where = place(frame)
  const file = frame.url.slice(frame.url.lastIndexOf('/') + 1)
  return `${frame.functionName || '(anonymous)'} ${where.startsWith('(') ? '' : `${where.startsWith('plinth') ? file : where}:${frame.lineNumber + 1}`}`.trim()
}

/**
 * Who a sample's time is spent for: its own place when that is a package or Plinth, else (Node
 * internals, native code such as a socket's writev) the nearest package or Plinth frame above it,
 * as `<place> › <what it called>`; V8's pseudo-frames (GC, program) stay themselves.
 */
function ownerOf(id: number, byId: Map<number, ProfileNode>, parent: Map<number, number>): string {
  const self = byId.get(id)?.callFrame
  if (self === undefined) return '?'
  const own = place(self)
  if (own.startsWith('(') && own !== '(native)') return own
  if (own !== '(native)' && own !== 'node internals') return own
  for (let at = parent.get(id); at !== undefined; at = parent.get(at)) {
    const frame = byId.get(at)?.callFrame
    if (frame === undefined) break
    const where = place(frame)
    if (where !== '(native)' && where !== 'node internals' && !where.startsWith('(')) return `${where} › ${self.functionName || own}`
  }
  return `${own} › ${self.functionName || '(anonymous)'} (no JS caller: event loop, I/O callbacks)`
}

function top(map: Map<string, number>, count: number): Array<[string, number]> {
  return [...map].sort((a, b) => b[1] - a[1]).slice(0, count)
}

/** A Markdown summary of the samples inside the window: by place, top functions by self time, top Plinth functions by total time. */
export function cpuProfileReport(path: string, window: CpuProfileWindow, rows = 25): string {
  const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'))
  if (!isCpuProfile(parsed)) throw new Error(`${path} is not a V8 CPU profile`)
  const byId = new Map(parsed.nodes.map((node) => [node.id, node]))
  const parent = new Map<number, number>()
  for (const node of parsed.nodes) for (const child of node.children ?? []) parent.set(child, node.id)

  const startUs = Number(window.startNs / 1000n)
  const endUs = Number(window.endNs / 1000n)
  const byPlace = new Map<string, number>()
  const selfByFunction = new Map<string, number>()
  const byOwner = new Map<string, number>()
  const totalByPlinthFunction = new Map<string, number>()
  let sampled = 0
  let busy = 0
  let time = parsed.startTime
  for (let i = 0; i < parsed.samples.length; i++) {
    time += parsed.timeDeltas[i] ?? 0
    if (time < startUs || time > endUs) continue
    const node = byId.get(parsed.samples[i] ?? -1)
    if (node === undefined) continue
    sampled++
    const where = place(node.callFrame)
    byPlace.set(where, (byPlace.get(where) ?? 0) + 1)
    if (where === '(idle)') continue
    busy++
    const name = frameName(node.callFrame)
    selfByFunction.set(name, (selfByFunction.get(name) ?? 0) + 1)
    const owner = ownerOf(node.id, byId, parent)
    byOwner.set(owner, (byOwner.get(owner) ?? 0) + 1)
    const seen = new Set<string>()
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const frame = byId.get(id)?.callFrame
      if (frame === undefined || !place(frame).startsWith('plinth')) continue
      const plinthName = frameName(frame)
      if (seen.has(plinthName)) continue
      seen.add(plinthName)
      totalByPlinthFunction.set(plinthName, (totalByPlinthFunction.get(plinthName) ?? 0) + 1)
    }
  }
  const seconds = (endUs - startUs) / 1e6
  if (sampled === 0) {
    return `### ${window.label}: no samples inside the window (profile ${(parsed.startTime / 1e6).toFixed(1)}–${(parsed.endTime / 1e6).toFixed(1)} s, window ${(startUs / 1e6).toFixed(1)}–${(endUs / 1e6).toFixed(1)} s)`
  }
  const share = (count: number, of: number) => `${((count / of) * 100).toFixed(1)}%`
  const msPerSample = (seconds * 1000) / sampled
  return [
    `### Server CPU profile, ${window.label} (${path})`,
    '',
    `${sampled} samples over ${seconds.toFixed(1)} s (${msPerSample.toFixed(2)} ms each), ${share(busy, sampled)} of them busy (not idle).`,
    '',
    markdownTable(
      ['where (self time)', 'of busy samples'],
      top(byPlace, rows)
        .filter(([where]) => where !== '(idle)')
        .map(([where, count]) => [where, share(count, busy)]),
      ['left', 'right'],
    ),
    '',
    markdownTable(
      ['function (self time)', 'of busy samples'],
      top(selfByFunction, rows).map(([name, count]) => [name, share(count, busy)]),
      ['left', 'right'],
    ),
    '',
    markdownTable(
      ['on behalf of (Node internals and native code charged to the nearest package or Plinth frame above them)', 'of busy samples'],
      top(byOwner, rows).map(([owner, count]) => [owner, share(count, busy)]),
      ['left', 'right'],
    ),
    '',
    markdownTable(
      ['Plinth function (total time: itself and what it calls synchronously)', 'of busy samples'],
      top(totalByPlinthFunction, rows).map(([name, count]) => [name, share(count, busy)]),
      ['left', 'right'],
    ),
  ].join('\n')
}
