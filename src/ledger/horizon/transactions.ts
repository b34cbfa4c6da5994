import { Type } from 'typebox'
import { collectionRoute } from './collections.js'
import type { HorizonContext } from './context.js'
import { problems } from './problems.js'
import { AccountId, LedgerSequence, TxHash } from './scopes.js'
import { TransactionRecord, transactionRecord } from './transaction-record.js'

/** Base64 of Stellar's largest envelope (100 KB of XDR) fits comfortably. */
const MAX_ENVELOPE_LENGTH = 200_000
export const TX_BODY_LIMIT = 256 * 1024

export function transactionRoutes(ctx: HorizonContext): void {
  const { r, ledger, links, scopes, tags } = ctx

  r.post(
    '/transactions',
    {
      bodyLimit: TX_BODY_LIMIT,
      schema: {
        tags,
        operationId: 'horizonSubmitTransaction',
        summary: 'Submit a signed transaction envelope; applied at once, or refused with result codes',
        description:
          'The body is `tx=<base64 XDR envelope>` as application/x-www-form-urlencoded (what stellar-sdk sends) or `{"tx": "…"}` as JSON. ' +
          'A refused transaction changes nothing. See docs/ledger.md for every result code.',
        body: Type.Object({
          tx: Type.String({ minLength: 1, maxLength: MAX_ENVELOPE_LENGTH, description: 'Base64 XDR TransactionEnvelope' }),
        }),
        response: { 200: TransactionRecord, ...problems(413, 415, 503) },
      },
    },
    async (request) => transactionRecord(links, await ledger.submit(request.body.tx)),
  )

  collectionRoute(ctx, {
    url: '/transactions',
    operationId: 'horizonListTransactions',
    summary: 'Every applied transaction, in ledger and application order',
    record: TransactionRecord,
    resolve: async () => undefined,
    list: async (_scope, page) => (await ledger.listTransactions(page)).map((tx) => transactionRecord(links, tx)),
  })

  r.get(
    '/transactions/:hash',
    {
      schema: {
        tags,
        operationId: 'horizonGetTransaction',
        summary: 'A transaction by hash (the txid); `memo` carries a payment identifier',
        params: Type.Object({ hash: TxHash }),
        response: { 200: TransactionRecord, ...problems(404) },
      },
    },
    async (request) => transactionRecord(links, await scopes.transaction(request.params.hash)),
  )

  collectionRoute(ctx, {
    url: '/accounts/:account_id/transactions',
    operationId: 'horizonListAccountTransactions',
    summary: 'Transactions an account sent or took part in, in ledger order',
    params: Type.Object({ account_id: AccountId }),
    record: TransactionRecord,
    resolve: (params) => scopes.account(params.account_id),
    list: async (account, page) => (await ledger.listAccountTransactions(account.address, page)).map((tx) => transactionRecord(links, tx)),
  })

  collectionRoute(ctx, {
    url: '/ledgers/:sequence/transactions',
    operationId: 'horizonListLedgerTransactions',
    summary: "A ledger's transactions, in application order",
    params: Type.Object({ sequence: LedgerSequence }),
    record: TransactionRecord,
    resolve: (params) => scopes.ledger(params.sequence),
    list: async (summary, page) => (await ledger.listLedgerTransactions(summary.sequence, page)).map((tx) => transactionRecord(links, tx)),
  })
}
