import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { runCrashSuite } from './crash.js'

// npm test runs every file once per backend: this one crashes the server on the backend of the run.
const backend = process.env.PLINTH_TEST_DB === 'postgres' ? 'postgres' : 'pglite'

describe(`SIGKILL under load, on ${backend}`, () => {
  it('keeps every 2xx whole across two kills, the ledger balanced, and lets the client finish every payment', {
    timeout: 240_000,
  }, async () => {
    const figures = await runCrashSuite({ backend, kills: 2, loadMsPerRound: 1_500, workers: 3 })
    assert.deepEqual(figures.problems, [], `problems (seed ${figures.seed})`)
    assert.equal(figures.killsSurvived, 2)
    assert.ok(figures.acknowledged.payments > 0 && figures.acknowledged.ledgerTransactions > 0, 'the load made payments and transactions')
    assert.equal(figures.verifiedAfterRestart, figures.acknowledged.total, 'every object a 2xx answered for was read back')
    assert.equal(figures.invariantChecksPassed, figures.invariantChecks)
    assert.equal(figures.incompleteAtEnd, 0)
    assert.equal(figures.responses5xx, 0)
  })
})
