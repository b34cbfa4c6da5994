#!/usr/bin/env node
/**
 * The `plinth` command's launcher (package.json `bin`; docs/production.md, §1). In a clone (the
 * sources and tsx are there) it runs src/cli/plinth.ts through tsx, so `npx plinth` works before
 * any build and never runs a stale build; in the installed package (no sources) it runs the built
 * dist/cli/plinth.js. Before this launcher the bin was dist/cli/plinth.js itself, and `npx plinth`
 * in a fresh clone answered "plinth: not found" until `npm run build`.
 */
import { existsSync } from 'node:fs'

const source = new URL('../src/cli/plinth.ts', import.meta.url)
const built = new URL('../dist/cli/plinth.js', import.meta.url)

/** tsx's in-process loader, when this is a clone with its development dependencies. */
async function tsx() {
  try {
    return await import('tsx/esm/api')
  } catch {
    return undefined
  }
}

const loader = existsSync(source) ? await tsx() : undefined
if (loader !== undefined) {
  loader.register()
  await import(source.href)
} else if (existsSync(built)) {
  await import(built.href)
} else if (existsSync(source)) {
  // A clone before `npm ci`: tsx, a development dependency, is not installed yet.
  process.stderr.write(
    'plinth: this clone has no node_modules yet: run "npm ci" first (then "npx plinth" runs the sources; no build is needed)\n',
  )
  process.exit(2)
} else {
  process.stderr.write(
    'plinth: dist/cli/plinth.js is missing from this package: reinstall it ("npm install plinth"), or run "npm run build" in its clone\n',
  )
  process.exit(2)
}
