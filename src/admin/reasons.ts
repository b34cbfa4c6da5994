import { ApiError } from '../core/errors.js'
import { isBlankText } from '../lib/text.js'

/**
 * A reason an operator gives (a suspension, a restore, an issue, a request for a second operator,
 * a rejection): 1 to 500 characters, at least one of them visible (docs/operators.md). Answers it
 * trimmed; refuses (400 invalid_arguments) spaces and invisible characters alone.
 */
export function visibleReason(reason: string, name = 'reason'): string {
  const trimmed = reason.trim()
  if (isBlankText(trimmed) || trimmed.length > 500) {
    throw new ApiError(
      'invalid_arguments',
      `${name} must hold at least one visible character, 500 at most: spaces and invisible characters are no reason.`,
    )
  }
  return trimmed
}
