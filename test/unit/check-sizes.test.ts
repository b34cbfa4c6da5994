import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
// @ts-expect-error: a plain .mjs script without typings
import { ALLOWED, checkSizes, countLines } from '../../scripts/check-sizes.mjs'

type Entry = { path: string; lines: number; reason: string }
const check = checkSizes as (root: string, allowed: Entry[]) => string[]
const lines = countLines as (text: string) => number
const allowList = ALLOWED as Entry[]

/** A tree of files, each `lines` lines long (newline-terminated), checked under `allowed`. */
function checkTree(files: Record<string, number | string>, allowed: Entry[]): string[] {
  const root = mkdtempSync(join(tmpdir(), 'plinth-sizes-'))
  try {
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(dirname(join(root, path)), { recursive: true })
      writeFileSync(join(root, path), typeof content === 'string' ? content : 'x\n'.repeat(content))
    }
    return check(root, allowed)
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

describe('the size rule (scripts/check-sizes.mjs, run by npm run lint)', () => {
  const allowed = [{ path: 'src/big.ts', lines: 700, reason: 'split later' }]

  it('passes a tree within the limits, with an allowed file at its allowance', () => {
    const problems = checkTree(
      {
        'src/a.ts': 500,
        'src/page.css': 500,
        'bench/b.ts': 500,
        'test/a.test.ts': 600,
        'src/big.ts': 700,
        'src/db/migrations/0001_init.ts': 900,
        'docs/long.md': 900,
        'src/data.json': 900,
        'src/node_modules/dep.js': 900,
      },
      allowed,
    )
    assert.deepEqual(problems, [])
  })

  it('fails a 501-line source file and a 601-line test file, naming each and its limit', () => {
    const problems = checkTree({ 'src/x/a.ts': 501, 'scripts/s.mjs': 501, 'test/t.test.ts': 601, 'src/big.ts': 700 }, allowed)
    assert.deepEqual(problems, [
      'src/x/a.ts: 501 lines, over the 500 a source file may have: split it along what it does (ARCHITECTURE.md)',
      'scripts/s.mjs: 501 lines, over the 500 a source file may have: split it along what it does (ARCHITECTURE.md)',
      'test/t.test.ts: 601 lines, over the 600 a test file may have: split it along what it does (ARCHITECTURE.md)',
    ])
  })

  it('counts a last line without its newline, and css and html as source', () => {
    assert.equal(lines(''), 0)
    assert.equal(lines('a'), 1)
    assert.equal(lines('a\n'), 1)
    assert.equal(lines('a\n\nb'), 3)
    const problems = checkTree({ 'src/a.ts': `${'x\n'.repeat(500)}x`, 'src/p.css': 501, 'src/p.html': 501, 'src/big.ts': 700 }, allowed)
    assert.equal(problems.length, 3, problems.join('\n'))
    assert.match(problems[0] ?? '', /^src\/a\.ts: 501 lines/)
  })

  it('holds an allowed file to its allowance, with the reason in the message', () => {
    assert.deepEqual(checkTree({ 'src/big.ts': 701 }, allowed), [
      'src/big.ts: 701 lines, grown beyond the 700 its allow-list entry holds it to (split later)',
    ])
  })

  it('fails an entry whose file is gone or back within the limit, so the list only shrinks', () => {
    assert.deepEqual(checkTree({ 'src/a.ts': 10 }, allowed), [
      'src/big.ts: on the allow-list, but no such file is checked: remove its entry',
    ])
    assert.deepEqual(checkTree({ 'src/big.ts': 500 }, allowed), [
      'src/big.ts: on the allow-list, but 500 lines is within the limit: remove its entry',
    ])
  })

  it('runs in npm run lint, before the other checks', () => {
    const pkg = JSON.parse(readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8'))
    assert.match(pkg.scripts.lint, /^node scripts\/check-sizes\.mjs && /)
  })

  it("the repository's allow-list gives each entry a reason", () => {
    assert.ok(allowList.length > 0)
    for (const entry of allowList) assert.ok(entry.reason.trim().length > 10, entry.path)
  })
})
