import type { Fault } from '../client/sandbox-client.js'
import { integerOption, UsageError } from './usage.js'

// `plinth faults`: the options that make a fault, and the line that shows one.

/** POST /sandbox/faults's body from the options: exactly one effect; the ranges are the platform's to check. */
export function faultBody(values: Record<string, unknown>, appId: string): Record<string, unknown> {
  const status = integerOption(values, 'status')
  const delayMs = integerOption(values, 'delay-ms')
  const retryAfter = integerOption(values, 'retry-after')
  const times = integerOption(values, 'times')
  const effects = [status !== undefined, delayMs !== undefined, values.drop === true].filter(Boolean).length
  if (effects !== 1) throw new UsageError('faults add takes one effect: --status 500|502|503|429, --delay-ms N or --drop')
  if (retryAfter !== undefined && status === undefined) throw new UsageError('--retry-after goes with --status 429 or 503')
  const when = values.when
  if (when !== undefined && when !== 'before' && when !== 'after')
    throw new UsageError(`--when takes before or after, got "${String(when)}"`)
  let probability: number | undefined
  if (typeof values.probability === 'string') {
    probability = Number(values.probability)
    if (values.probability.trim() === '' || !Number.isFinite(probability)) {
      throw new UsageError(`--probability takes a number (0 < p <= 1), got "${values.probability}"`)
    }
  }
  const match: Record<string, string> = {}
  if (typeof values.route === 'string') match.route = values.route
  if (typeof values.operation === 'string') match.operation_id = values.operation
  if (typeof values['user-uid'] === 'string') match.user_uid = values['user-uid']
  return {
    app_id: appId,
    ...(Object.keys(match).length === 0 ? {} : { match }),
    effect:
      status !== undefined
        ? { status, ...(retryAfter === undefined ? {} : { retry_after_seconds: retryAfter }) }
        : delayMs !== undefined
          ? { delay_ms: delayMs }
          : { drop: true },
    ...(when === undefined ? {} : { when }),
    ...(times === undefined ? {} : { times }),
    ...(probability === undefined ? {} : { probability }),
  }
}

/** One line a fault: every field the API answers, probability included. */
export function describeFault(f: Fault): string {
  const match = [f.match.route, f.match.operation_id && `operation ${f.match.operation_id}`, f.match.user_uid && `user ${f.match.user_uid}`]
    .filter(Boolean)
    .join(', ')
  const effect =
    'status' in f.effect
      ? `status ${f.effect.status}${f.effect.retry_after_seconds === undefined ? '' : ` (Retry-After ${f.effect.retry_after_seconds})`}`
      : 'delay_ms' in f.effect
        ? `delay ${f.effect.delay_ms} ms`
        : 'drop'
  return `${f.id}  app ${f.app_id}  ${match || 'every /v2 call'}  ${effect}  when ${f.when}  times_left ${f.times_left ?? 'unlimited'}  probability ${f.probability}`
}
