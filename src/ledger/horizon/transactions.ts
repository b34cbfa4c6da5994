import { Type } from 'typebox'
import { collectionRoute } from './collections.js'
import type { HorizonContext } from './context.js'
import { problems } from './problems.js'
import { AccountId, LedgerSequence, TxHash } from './scopes.js'
import { TransactionRecord, transactionRecord } from './transaction-record.js'

/** Base64 of Stellar's largest envelope (100 KB of XDR) fits comfortably. */
const MAX_ENVELOPE_LENGTH = 200_000
export const TX_BODY_LIMIT = 256 * 1024

/**
 * Where the envelope is read from, as Horizon's `GetString(r, "tx")` reads it (Go's `FormValue`:
 * the body's form value when not empty, else the query's): a body with a non-empty `tx` is taken
 * as it is; otherwise the query's `tx`, when there is one, becomes the body. A query `tx` given
 * twice (an array) is passed on for the schema to refuse, naming the field; a body that is not an
 * object is left for the schema to refuse.
 */
function withQueryTx(body: unknown, query: unknown): unknown {
  const fromQuery = (query as { tx?: unknown } | undefined)?.tx
  if (fromQuery === undefined) return body
  if (body === undefined || body === null) return { tx: fromQuery }
  if (typeof body !== 'object' || Array.isArray(body)) return body
  const fromBody = (body as { tx?: unknown }).tx
  return fromBody === undefined || fromBody === '' ? { ...body, tx: fromQuery } : body
}

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
          'The body is `tx=<base64 XDR envelope>` as application/x-www-form-urlencoded (what stellar-sdk sends) or `{"tx": "…"}` as JSON; ' +
          'or, as Horizon reads it too, `?tx=<envelope>` in the query string with an empty body and any or no Content-Type ' +
          "(Soneso's PHP SDK). A non-empty `tx` in the body wins over the query's. " +
          'A refused transaction changes nothing. See docs/ledger.md for every result code.',
        querystring: Type.Object({
          tx: Type.Optional(Type.String({ maxLength: MAX_ENVELOPE_LENGTH, description: 'The envelope, when the body carries none' })),
        }),
        body: Type.Object({
          tx: Type.String({ minLength: 1, maxLength: MAX_ENVELOPE_LENGTH, description: 'Base64 XDR TransactionEnvelope' }),
        }),
        response: { 200: TransactionRecord, ...problems(413, 415, 503) },
      },
      preValidation: async (request) => {
        // Not validated yet: the schema checks what this gives, as it would have checked the body.
        request.body = withQueryTx(request.body, request.query) as typeof request.body
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
