import { Type } from 'typebox'
import { Timestamp } from '../core/schemas.js'

/** An app's Mainnet listing as the portal and the operator's console answer it (docs/portal.md, "Listing"). */
export const ListingSchema = Type.Union(
  [
    Type.Object({
      state: Type.Union([Type.Literal('pending'), Type.Literal('approved'), Type.Literal('rejected')], {
        description:
          'pending: waiting for an operator (not in the directory; only its members pay it or are paid by it); approved: listed; rejected: see reason',
      }),
      reason: Type.Union([Type.String(), Type.Null()], { description: "The operator's reason of a rejection" }),
      changed_at: Type.Union([Timestamp(), Type.Null()]),
    }),
    Type.Null(),
  ],
  { description: 'The Mainnet listing review; null on Testnet, where none is needed' },
)
