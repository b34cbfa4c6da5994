#!/usr/bin/env node
// The size rule, run by `npm run lint`: a file reads on its own, so past a size it is split along
// what it does (ARCHITECTURE.md, "Where new code goes"), never by a line count alone.
//
// - Source files (under src/, bench/, scripts/, examples/): at most 500 lines; the migrations
//   (src/db/migrations/) are exempt, since an applied migration is never edited.
// - Test files (everything under test/: suites, helpers, fixtures): at most 600 lines.
// - What counts is code and style: .ts .mts .cts .js .mjs .cjs .css .html. Prose, data and
//   images (Markdown, JSON, SVG) do not. A line is a line as an editor numbers it, blank or not.
//
// ALLOWED is the one allow-list: each entry a file, the size it may not grow beyond, and why it is
// over. An entry whose file is gone or back within the limit fails too, so the list only shrinks:
// remove the entry with the split.
//
// Why not Biome's style/noExcessiveLinesPerFile (it counts .ts, .js, .css and .html alike): an
// allow-listed file there is switched off (it could grow without bound), an entry that is no
// longer needed goes unnoticed, and biome.json takes no comments, so no entry could carry its
// reason.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const SOURCE_ROOTS = ['src', 'bench', 'scripts', 'examples']
const TEST_ROOTS = ['test']
// src/web/api/openapi.d.ts is generated from the OpenAPI document (npm run api-types), never edited.
const EXEMPT = ['src/db/migrations/', 'src/web/api/openapi.d.ts']
const COUNTED = /\.(ts|mts|cts|js|mjs|cjs|css|html)$/
const SKIPPED_DIRS = new Set(['node_modules'])
export const LIMITS = { source: 500, test: 600 }

const BROWSER = 'split by the browser reorganisation (#42)'
/** @type {{ path: string, lines: number, reason: string }[]} */
export const ALLOWED = [
  { path: 'src/web/platform/platform.css', lines: 902, reason: `${BROWSER}: the two pages' styles become the shared UI layer's` },
  { path: 'src/console/public/console.css', lines: 702, reason: `${BROWSER}: the two pages' styles become the shared UI layer's` },
]

/** Lines as an editor numbers them: a last line without its newline still counts. */
export function countLines(text) {
  if (text === '') return 0
  let lines = 0
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) lines++
  return text.endsWith('\n') ? lines : lines + 1
}

function filesUnder(root, dir) {
  let entries
  try {
    entries = readdirSync(join(root, dir), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))
  } catch (error) {
    if (error.code === 'ENOENT') return []
    throw error
  }
  return entries.flatMap((entry) => {
    const path = `${dir}/${entry.name}`
    if (entry.isDirectory()) return entry.name.startsWith('.') || SKIPPED_DIRS.has(entry.name) ? [] : filesUnder(root, path)
    return entry.isFile() && COUNTED.test(entry.name) ? [path] : []
  })
}

/**
 * The problems of the tree at `root` under the rule, one sentence each (none: it passes).
 * @param {string} root
 * @param {{ path: string, lines: number, reason: string }[]} allowed
 * @returns {string[]}
 */
export function checkSizes(root, allowed = ALLOWED) {
  const kinds = [
    ...SOURCE_ROOTS.flatMap((dir) => filesUnder(root, dir).map((path) => ({ path, kind: 'source' }))),
    ...TEST_ROOTS.flatMap((dir) => filesUnder(root, dir).map((path) => ({ path, kind: 'test' }))),
  ].filter(({ path }) => !EXEMPT.some((prefix) => path.startsWith(prefix)))
  const sizes = new Map(kinds.map(({ path, kind }) => [path, { kind, lines: countLines(readFileSync(join(root, path), 'utf8')) }]))
  const byPath = new Map(allowed.map((entry) => [entry.path, entry]))
  const problems = []
  for (const [path, { kind, lines }] of sizes) {
    const limit = LIMITS[kind]
    if (lines <= limit) continue
    const entry = byPath.get(path)
    if (!entry) {
      problems.push(`${path}: ${lines} lines, over the ${limit} a ${kind} file may have: split it along what it does (ARCHITECTURE.md)`)
    } else if (lines > entry.lines) {
      problems.push(`${path}: ${lines} lines, grown beyond the ${entry.lines} its allow-list entry holds it to (${entry.reason})`)
    }
  }
  for (const entry of allowed) {
    const size = sizes.get(entry.path)
    if (!size) problems.push(`${entry.path}: on the allow-list, but no such file is checked: remove its entry`)
    else if (size.lines <= LIMITS[size.kind]) {
      problems.push(`${entry.path}: on the allow-list, but ${size.lines} lines is within the limit: remove its entry`)
    }
  }
  return problems
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const problems = checkSizes(process.cwd())
  for (const problem of problems) console.error(problem)
  if (problems.length > 0) {
    console.error(`check-sizes: ${problems.length} problem(s); the rule and its allow-list are in scripts/check-sizes.mjs`)
    process.exit(1)
  }
}
