/**
 * The walks of issue #41 stay true to their docs (test/helpers/walks.ts): for each doc a walk
 * follows, the doc's steps (its headings, or a section's numbered items) are exactly the steps the
 * walk lists plus those it leaves to another test, in the doc's order. A heading added, renamed,
 * moved or removed in a doc fails here until the walk follows it too.
 */
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { REPO_ROOT } from '../helpers/server-process.js'
import { docSteps, WALKS } from '../helpers/walks.js'

describe('the walks follow their docs’ steps', () => {
  for (const walk of WALKS) {
    it(`${walk.name}: its suite exists`, () => {
      assert.ok(existsSync(join(REPO_ROOT, walk.file)), walk.file)
    })
    for (const doc of walk.docs) {
      it(`${walk.name}: ${doc.path}${doc.section === undefined ? '' : ` § ${doc.section}`}`, () => {
        const steps = docSteps(doc)
        assert.ok(steps.length > 0, `${doc.path} has steps`)
        const covered = steps.filter((step) => doc.steps.includes(step) || step in doc.elsewhere)
        assert.deepEqual(covered, steps, `every step of ${doc.path} is walked or named with the test that covers it`)
        assert.deepEqual(
          steps.filter((step) => doc.steps.includes(step)),
          doc.steps,
          `the walk's steps are ${doc.path}'s, in its order`,
        )
        for (const left of Object.keys(doc.elsewhere)) assert.ok(steps.includes(left), `"${left}" is still a step of ${doc.path}`)
      })
    }
  }
})
