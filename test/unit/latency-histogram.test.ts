import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Histogram, Registry } from 'prom-client'
import { LATENCY_BUCKETS, LatencyHistogram } from '../../src/system/metrics.js'

describe("LatencyHistogram (src/system/metrics.ts): prom-client's Histogram, written the same", () => {
  it('writes the text prom-client writes for the same observations, bucket boundaries included', async () => {
    const ours = new Registry()
    const theirs = new Registry()
    const histogram = new LatencyHistogram(ours, 'plinth_test_seconds', 'Test latencies')
    const reference = new Histogram({
      name: 'plinth_test_seconds',
      help: 'Test latencies',
      labelNames: ['method', 'route', 'status'],
      buckets: LATENCY_BUCKETS,
      registers: [theirs],
    })
    const labelSets = [
      { method: 'GET', route: '/v2/me', status: '200' },
      { method: 'POST', route: '/v2/payments/:payment_id/approve', status: '409' },
      { method: 'other', route: 'unmatched', status: '404' },
    ]
    const series = labelSets.map((labels) => histogram.series(labels))
    // Every bound exactly, just above and below it, zero, beyond the last bound, and random values.
    const values = [0, ...LATENCY_BUCKETS.flatMap((bound) => [bound, bound * (1 - 1e-9), bound * (1 + 1e-9)]), 7, 1e9]
    for (let i = 0; i < 2000; i++) values.push(Math.random() ** 4 * 6)
    values.forEach((value, i) => {
      const index = i % labelSets.length
      histogram.observe(series[index] as never, value)
      reference.observe(labelSets[index] as never, value)
    })
    assert.equal(await ours.metrics(), await theirs.metrics())
    assert.deepEqual(await ours.getMetricsAsJSON(), await theirs.getMetricsAsJSON())
  })

  it('writes no series before its first observation, and starts again from zero on reset', async () => {
    const registry = new Registry()
    const histogram = new LatencyHistogram(registry, 'plinth_test_seconds', 'Test latencies')
    const series = histogram.series({ kind: 'select' })
    assert.equal(await registry.metrics(), '# HELP plinth_test_seconds Test latencies\n# TYPE plinth_test_seconds histogram\n')
    histogram.observe(series, 0.002)
    assert.match(await registry.metrics(), /^plinth_test_seconds_count\{kind="select"\} 1$/m)
    registry.resetMetrics()
    assert.doesNotMatch(await registry.metrics(), /_count/)
  })
})
