#!/usr/bin/env node
// The browser code's rules that neither Biome nor the type checker states (npm run lint):
// - every file is type-checked: each .js starts with `// @ts-check` (tsconfig.browser.json), with
//   no exception (issue #42 emptied the list of files not yet typed, and it is gone);
// - no `any` in a JSDoc type or a hand-written .d.ts, and no @ts-expect-error / @ts-expect-error /
//   @ts-nocheck, except the entries of ALLOWED below, each with its reason;
// - an import of the UI layer or the API client names them from src/: as many `../` as the
//   importing file is deep under src/, then `web/ui/` or `web/api/`. The same relative URL then
//   reaches /web/ui/ from every URL a page's files are served at (/sandbox/ui/, /ui/, /console/js/):
//   a URL's `..` stops at its root (ARCHITECTURE.md, "The browser code").
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'

const ROOTS = ['src/web/ui', 'src/web/api', 'src/web/platform', 'src/web/sdk', 'src/web/docs', 'src/console/public/js']
const GENERATED = 'src/web/api/openapi.d.ts'

/** The escape hatches the browser code may use: file, the line's text, and why. */
const ALLOWED = [
  // (none yet: add { file, text, reason } here, the only place)
]

const files = ROOTS.flatMap(function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(join(dir, entry.name)) : /\.(js|d\.ts)$/.test(entry.name) ? [join(dir, entry.name)] : [],
  )
})

const problems = []
for (const file of files) {
  if (file === GENERATED) continue
  const lines = readFileSync(file, 'utf8').split('\n')
  const checked = lines[0] === '// @ts-check'
  if (file.endsWith('.js') && !checked) problems.push(`${file}:1: start it with // @ts-check`)
  const depth = relative('src', file).split('/').length - 1
  lines.forEach((line, index) => {
    const at = `${file}:${index + 1}`
    const allowed = ALLOWED.some((entry) => entry.file === file && line.includes(entry.text))
    if (!allowed && /@ts-(ignore|expect-error|nocheck)/.test(line))
      problems.push(`${at}: a @ts- directive (list it in scripts/check-browser.mjs with its reason)`)
    const types = file.endsWith('.d.ts')
      ? [line.replace(/\/\*.*?\*\/|\/\/.*$|^\s*\*.*$/g, '')]
      : [...line.matchAll(/@\w+\s*\{([^}]*)\}|@type \{([^}]*)\}/g)].map((m) => m[1] ?? m[2] ?? '')
    if (!allowed && types.some((text) => /\bany\b/.test(text)))
      problems.push(`${at}: the type any (list it in scripts/check-browser.mjs with its reason)`)
    for (const match of line.matchAll(/(?:from|import)\s*\(?\s*'((?:\.\.\/)+)web\/(ui|api)\//g)) {
      const ups = (match[1] ?? '').length / 3
      if (ups !== depth)
        problems.push(`${at}: import web/${match[2]}/ as ${'../'.repeat(depth)}web/${match[2]}/ (from src/), not with ${ups} ../`)
    }
  })
}
if (problems.length > 0) {
  console.error(problems.join('\n'))
  process.exit(1)
}
console.log(
  `browser code: ${files.length} files, all type-checked, no any, no @ts- directive, imports of the UI layer and the API client from src/`,
)
