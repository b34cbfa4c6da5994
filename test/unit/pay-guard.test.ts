/**
 * When a press of the payment dialog's Pay counts (src/web/platform/payment/pay-guard.js), without a
 * browser. test/e2e/payment-tapjack.e2e.ts drives the real dialog with a fast-tapping user.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

interface Guard {
  moved(t: number): void
  setEnabled(enabled: boolean, t: number): void
  armedAt(): number
  isArmed(t: number): boolean
  pointerDown(press: { t: number; onPay: boolean; primary?: boolean }): boolean
  keyDown(press: { t: number; key: string; repeat: boolean }): void
  accept(click: { pointer: boolean }): boolean
}
interface Module {
  ARM_MS: number
  REPEAT_MS: number
  AVOID_PX: number
  createPayGuard(): Guard
  near(
    point: { x: number; y: number } | undefined,
    box: { left: number; top: number; right: number; bottom: number },
    margin?: number,
  ): boolean
}

// A browser module (plain JavaScript, no types): loaded by URL, typed by the interface above.
const m = (await import(new URL('../../src/web/platform/payment/pay-guard.js', import.meta.url).href)) as Module

/** A dialog shown at 0 whose Pay was enabled at `enabledAt`. */
function shown(enabledAt = 100): Guard {
  const guard = m.createPayGuard()
  guard.moved(0)
  guard.setEnabled(true, enabledAt)
  return guard
}

describe('pay guard: when Pay is armed', () => {
  it('the values the docs give: armed 600 ms after shown, still and enabled; a stream is taps under 500 ms apart', () => {
    assert.equal(m.ARM_MS, 600)
    assert.equal(m.REPEAT_MS, 500)
    assert.equal(m.AVOID_PX, 48)
  })

  it('is armed ARM_MS after the later of shown and enabled, never while not enabled', () => {
    const guard = m.createPayGuard()
    guard.moved(0)
    assert.equal(guard.isArmed(10_000), false, 'not enabled')
    guard.setEnabled(true, 100)
    assert.equal(guard.isArmed(699), false)
    assert.equal(guard.isArmed(700), true)
    guard.setEnabled(true, 900)
    assert.equal(guard.armedAt(), 700, 'enabling again while enabled does not restart the clock')
    guard.setEnabled(false, 1000)
    assert.equal(guard.isArmed(5000), false)
  })

  it('a move or a resize restarts the clock', () => {
    const guard = shown()
    guard.moved(2000)
    assert.equal(guard.isArmed(2599), false)
    assert.equal(guard.isArmed(2600), true)
  })
})

describe('pay guard: which presses count', () => {
  it('a pointer press that began on Pay once armed counts, once', () => {
    const guard = shown()
    assert.equal(guard.pointerDown({ t: 800, onPay: true }), true)
    assert.equal(guard.accept({ pointer: true }), true)
    assert.equal(guard.accept({ pointer: true }), false, 'a second click of the same press')
    assert.equal(guard.isArmed(801), true, 'a press that counts leaves Pay armed until its click')
  })

  it('a press that began before Pay was armed does not count, even if it ends after', () => {
    const guard = shown()
    assert.equal(guard.pointerDown({ t: 650, onPay: true }), false)
    assert.equal(guard.isArmed(1150), true, 'armed REPEAT_MS after that press')
    assert.equal(guard.accept({ pointer: true }), false)
  })

  it('a press elsewhere, a secondary button, or a press before a move does not count', () => {
    const guard = shown()
    guard.pointerDown({ t: 800, onPay: false })
    assert.equal(guard.accept({ pointer: true }), false)
    assert.equal(guard.isArmed(1299), false, 'a press elsewhere disarms Pay for REPEAT_MS')
    assert.equal(guard.isArmed(1300), true)
    guard.pointerDown({ t: 2000, onPay: true, primary: false })
    assert.equal(guard.accept({ pointer: true }), false)
    assert.equal(guard.pointerDown({ t: 3000, onPay: true }), true)
    guard.moved(3050)
    assert.equal(guard.accept({ pointer: true }), false, 'the dialog moved under the finger')
  })

  it('a tap in a stream of taps never counts, even on an armed Pay, and keeps Pay disarmed; after a pause, one does', () => {
    const guard = shown()
    let t = 0
    for (; t < 5000; t += 147) {
      assert.equal(guard.pointerDown({ t, onPay: true }), false)
      assert.equal(guard.accept({ pointer: true }), false, `tap at ${t} ms`)
      assert.equal(guard.isArmed(t + 146), false, `armed between the taps at ${t} ms`)
    }
    const last = t - 147
    assert.equal(guard.pointerDown({ t: last + 499, onPay: true }), false, 'a pause under REPEAT_MS')
    assert.equal(guard.pointerDown({ t: last + 499 + 500, onPay: true }), true, 'a pause of REPEAT_MS')
  })

  it('a key counts when it went down on an armed Pay and was not held from before', () => {
    const guard = shown()
    guard.keyDown({ t: 650, key: 'Enter', repeat: false })
    assert.equal(guard.accept({ pointer: false }), false, 'before armed')
    guard.keyDown({ t: 800, key: 'Enter', repeat: true })
    assert.equal(guard.accept({ pointer: false }), false, 'a held key')
    guard.keyDown({ t: 900, key: 'a', repeat: false })
    assert.equal(guard.accept({ pointer: false }), false, 'another key')
    guard.keyDown({ t: 1000, key: ' ', repeat: false })
    assert.equal(guard.accept({ pointer: false }), true, 'Space')
    guard.keyDown({ t: 1100, key: 'Enter', repeat: false })
    assert.equal(guard.accept({ pointer: true }), false, 'a key does not make a pointer click count')
  })

  it('near: within the margin of the box', () => {
    const box = { left: 100, top: 100, right: 200, bottom: 140 }
    assert.equal(m.near({ x: 150, y: 120 }, box), true)
    assert.equal(m.near({ x: 100 - 48, y: 120 }, box), true)
    assert.equal(m.near({ x: 100 - 49, y: 120 }, box), false)
    assert.equal(m.near({ x: 150, y: 140 + 49 }, box), false)
    assert.equal(m.near(undefined, box), false)
  })
})
