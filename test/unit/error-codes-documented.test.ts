/**
 * docs/errors.md lists every error code the platform answers, with its status: a code added to
 * src/core/errors.ts without its row (or a row whose status is not the code's) fails here.
 */
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { it } from 'node:test'
import { ERROR_STATUS } from '../../src/core/errors.js'

it('docs/errors.md has a row for every error code, with its status', async () => {
  const text = await readFile(new URL('../../docs/errors.md', import.meta.url), 'utf8')
  const rows = new Map([...text.matchAll(/^\| `([a-z_]+)` \| (\d{3})[ ,|]/gm)].map((m) => [m[1], Number(m[2])]))
  const wrong = Object.entries(ERROR_STATUS)
    .filter(([code, status]) => rows.get(code) !== status)
    .map(([code, status]) => `${code} ${status} (docs: ${rows.get(code) ?? 'no row'})`)
  assert.deepEqual(wrong, [])
})
