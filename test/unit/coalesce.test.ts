import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { coalescingReader } from '../../src/db/coalesce.js'

/** A loader whose queries the test answers by hand, recording what each one asked for. */
function manualLoader(store: Map<string, number>) {
  const queries: Array<{ keys: string[]; answer: () => void; fail: (error: Error) => void }> = []
  const load = (keys: string[]) =>
    new Promise<Map<string, number>>((resolve, reject) => {
      queries.push({
        keys,
        // The answer is the store as it stands when the query "runs", i.e. when answered.
        answer: () => resolve(new Map(keys.filter((k) => store.has(k)).map((k) => [k, store.get(k) as number]))),
        fail: reject,
      })
    })
  return { load, queries }
}

/** Two event-loop turns: a query answered now has its follow-up scheduled in the first and sent in the second. */
const turn = async () => {
  await new Promise((resolve) => setImmediate(resolve))
  await new Promise((resolve) => setImmediate(resolve))
}

describe('coalescingReader', () => {
  it('answers the lookups of one event-loop turn with one query, each with its own row or undefined', async () => {
    const store = new Map([
      ['a', 1],
      ['b', 2],
    ])
    const { load, queries } = manualLoader(store)
    const reader = coalescingReader(load)
    const answers = Promise.all([reader.get('a'), reader.get('b'), reader.get('a'), reader.get('missing')])
    await turn()
    assert.equal(queries.length, 1)
    assert.deepEqual(queries[0]?.keys, ['a', 'b', 'missing'])
    queries[0]?.answer()
    assert.deepEqual(await answers, [1, 2, 1, undefined])
  })

  it('never answers a lookup with a query sent before it was made', async () => {
    const store = new Map([['a', 1]])
    const { load, queries } = manualLoader(store)
    const reader = coalescingReader(load, { maxInFlight: 1 })
    const early = reader.get('a')
    await turn()
    assert.equal(queries.length, 1)
    // A write lands, then a lookup is made while the first query is still out.
    store.set('a', 2)
    const late = reader.get('a')
    await turn()
    assert.equal(queries.length, 1, 'the late lookup waits for a query of its own')
    queries[0]?.answer()
    assert.equal(await early, 2, 'the manual loader answers with the store at answer time')
    await turn()
    assert.equal(queries.length, 2)
    assert.deepEqual(queries[1]?.keys, ['a'])
    store.set('a', 3)
    queries[1]?.answer()
    assert.equal(await late, 3)
  })

  it('keeps at most maxInFlight queries out and at most maxBatch keys in one', async () => {
    const store = new Map(Array.from({ length: 10 }, (_, i) => [`k${i}`, i] as [string, number]))
    const { load, queries } = manualLoader(store)
    const reader = coalescingReader(load, { maxInFlight: 2, maxBatch: 3 })
    const answers = Promise.all(Array.from({ length: 10 }, (_, i) => reader.get(`k${i}`)))
    await turn()
    assert.deepEqual(
      queries.map((q) => q.keys),
      [
        ['k0', 'k1', 'k2'],
        ['k3', 'k4', 'k5'],
      ],
    )
    queries[0]?.answer()
    await turn()
    assert.equal(queries.length, 3)
    assert.deepEqual(queries[2]?.keys, ['k6', 'k7', 'k8'])
    queries[1]?.answer()
    queries[2]?.answer()
    await turn()
    assert.deepEqual(queries[3]?.keys, ['k9'])
    queries[3]?.answer()
    assert.deepEqual(await answers, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
  })

  it('rejects every lookup of a failed query and goes on with the next', async () => {
    const { load, queries } = manualLoader(new Map([['a', 1]]))
    const reader = coalescingReader(load, { maxInFlight: 1 })
    const first = reader.get('a')
    const second = reader.get('b')
    await turn()
    const third = reader.get('a')
    queries[0]?.fail(new Error('connection lost'))
    await assert.rejects(first, /connection lost/)
    await assert.rejects(second, /connection lost/)
    await turn()
    queries[1]?.answer()
    assert.equal(await third, 1)
  })

  it('turns a loader that throws synchronously into rejected lookups', async () => {
    const reader = coalescingReader<number>(() => {
      throw new Error('bad keys')
    })
    await assert.rejects(reader.get('a'), /bad keys/)
    // And stays usable.
    await assert.rejects(reader.get('b'), /bad keys/)
  })
})
