import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { type ClockStore, createPlatformClock, MAX_OFFSET_SECONDS } from '../../src/clock/clock.js'

function memoryStore(initial = 0): ClockStore & { offset: number } {
  const store = {
    offset: initial,
    epoch: 0,
    read: async () => ({ offsetMs: store.offset, epoch: store.epoch }),
    addOffsetMs: async (delta: number, max: number) => {
      if (store.offset + delta > max) return undefined
      store.offset += delta
      return { offsetMs: store.offset, epoch: store.epoch }
    },
  }
  return store
}

describe('platform clock', () => {
  it('is the wall clock plus the stored offset', async () => {
    const clock = await createPlatformClock({ store: memoryStore(5000), wallMs: () => 1_000_000 })
    assert.equal(clock.now().getTime(), 1_005_000)
    assert.equal(clock.offsetMs(), 5000)
  })

  it('advances through the store, in milliseconds', async () => {
    const store = memoryStore()
    const clock = await createPlatformClock({ store, wallMs: () => 0 })
    const now = await clock.advance(1.5)
    assert.equal(now?.getTime(), 1500)
    assert.equal(store.offset, 1500)
  })

  it('refuses a move past MAX_OFFSET_SECONDS and keeps its offset', async () => {
    const store = memoryStore(MAX_OFFSET_SECONDS * 1000 - 1000)
    const clock = await createPlatformClock({ store, wallMs: () => 0 })
    assert.equal(await clock.advance(1.001), undefined)
    assert.equal(clock.offsetMs(), MAX_OFFSET_SECONDS * 1000 - 1000)
    assert.equal((await clock.advance(1))?.getTime(), MAX_OFFSET_SECONDS * 1000)
  })

  it("picks up another process's advance on refresh", async () => {
    const store = memoryStore()
    const clock = await createPlatformClock({ store, wallMs: () => 0 })
    store.offset = 60_000
    assert.equal(clock.now().getTime(), 0, 'cached until refreshed')
    await clock.refresh()
    assert.equal(clock.now().getTime(), 60_000)
  })

  it('refreshes on its own when given an interval', async () => {
    const store = memoryStore()
    const clock = await createPlatformClock({ store, wallMs: () => 0, refreshMs: 10 })
    store.offset = 7_000
    await new Promise((resolve) => setTimeout(resolve, 60))
    clock.stop()
    assert.equal(clock.now().getTime(), 7_000)
  })
})
