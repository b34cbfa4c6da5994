import { Type } from 'typebox'
import { SearchText } from '../core/schemas.js'
import { PaymentStateSchema } from '../payments/payment-dto.js'

/**
 * The query properties an app's payments are searched and filtered by (PaymentFilter): the same in
 * the console's list and export and in the portal's list, so a filter that works in one works in all.
 */
export const paymentFilterQuery = () => ({
  q: Type.Optional(SearchText()),
  state: Type.Optional(PaymentStateSchema),
  direction: Type.Optional(Type.Union([Type.Literal('user_to_app'), Type.Literal('app_to_user')])),
})
