import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify'
import { type Static, type TSchema, Type } from 'typebox'
import type { Clock } from '../clock/clock.js'
import type { RouteTable } from '../http/routing.js'
import { parseInt64Id } from '../lib/integers.js'
import { badParameter, type HorizonProblem, LedgerError, notFound, problem } from './ledger-errors.js'
import { BASE_FEE_STROOPS, isAccountId } from './ledger-rules.js'
import type { LedgerAccount, LedgerOperation, LedgerService, LedgerSummary, LedgerTransaction, PageQuery } from './ledger-service.js'
import { ledgerPagingToken, operationPagingToken, transactionPagingToken } from './paging-tokens.js'

/**
 * The Horizon-compatible API of the embedded ledger, mounted at /ledger: what stellar-sdk
 * (and so pi-backend) calls to load an account, fetch the base fee and time bounds, submit a
 * transaction and read it back. An encapsulated plugin: its errors are Horizon problems
 * (application/problem+json), not the platform's `{error, error_message}`.
 */
export interface HorizonOptions {
  ledger: LedgerService
  clock: Clock
  /** PLINTH_PUBLIC_URL: links are absolute, as Horizon's are. */
  publicUrl: string
  version: string
  /** Wrong methods (405) and CORS preflights, answered for the ledger's paths too. */
  routes: RouteTable
}

/** The protocol version Horizon reports; Plinth implements the subset docs/ledger.md lists. */
const PROTOCOL_VERSION = 19
/** Base64 of Stellar's largest envelope (100 KB of XDR) fits comfortably. */
const MAX_ENVELOPE_LENGTH = 200_000
const TX_BODY_LIMIT = 256 * 1024
const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8'

const Link = Type.Object({ href: Type.String(), templated: Type.Optional(Type.Boolean()) })
const Links = <K extends string>(...names: K[]) =>
  Type.Object(Object.fromEntries(names.map((name) => [name, Link])) as Record<K, typeof Link>)

const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    extras: Type.Optional(
      Type.Object({
        envelope_xdr: Type.Optional(Type.String()),
        result_xdr: Type.Optional(Type.String()),
        result_codes: Type.Optional(Type.Object({ transaction: Type.String(), operations: Type.Optional(Type.Array(Type.String())) })),
        invalid_field: Type.Optional(Type.String()),
        reason: Type.Optional(Type.String()),
      }),
    ),
  },
  { description: "Horizon's problem details (application/problem+json)" },
)
const problems = (...statuses: number[]): Record<number, typeof Problem> =>
  Object.fromEntries([400, 500, ...statuses].map((status) => [status, Problem]))

const Amount = Type.String({ description: 'Pi with 7 decimal places, as Horizon writes amounts', examples: ['1.5000000'] })
const Stroops = Type.String({ description: 'Stroops (1 Pi = 10,000,000 stroops)', examples: ['100'] })

const TransactionRecord = Type.Object({
  id: Type.String({ description: 'The transaction hash' }),
  paging_token: Type.String(),
  successful: Type.Boolean(),
  hash: Type.String(),
  ledger: Type.Integer(),
  created_at: Type.String({ description: 'ISO 8601 UTC, whole seconds' }),
  source_account: Type.String(),
  source_account_sequence: Type.String(),
  fee_account: Type.String(),
  fee_charged: Stroops,
  max_fee: Stroops,
  operation_count: Type.Integer(),
  envelope_xdr: Type.String(),
  result_xdr: Type.String(),
  result_meta_xdr: Type.String({ description: 'Always empty: Plinth keeps no ledger entry changes' }),
  fee_meta_xdr: Type.String({ description: 'Always empty' }),
  memo_type: Type.String(),
  memo: Type.Optional(Type.String()),
  _links: Links('self', 'account', 'ledger', 'operations', 'precedes', 'succeeds', 'transaction'),
})

const OperationRecord = Type.Object({
  id: Type.String(),
  paging_token: Type.String(),
  transaction_successful: Type.Boolean(),
  source_account: Type.String(),
  type: Type.Literal('payment'),
  type_i: Type.Literal(1),
  created_at: Type.String(),
  transaction_hash: Type.String(),
  asset_type: Type.Literal('native'),
  from: Type.String(),
  to: Type.String(),
  amount: Amount,
  _links: Links('self', 'transaction', 'precedes', 'succeeds'),
})

const AccountRecord = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  sequence: Type.String(),
  paging_token: Type.String(),
  subentry_count: Type.Integer(),
  last_modified_ledger: Type.Integer(),
  last_modified_time: Type.Union([Type.String(), Type.Null()]),
  thresholds: Type.Object({ low_threshold: Type.Integer(), med_threshold: Type.Integer(), high_threshold: Type.Integer() }),
  flags: Type.Object({
    auth_required: Type.Boolean(),
    auth_revocable: Type.Boolean(),
    auth_immutable: Type.Boolean(),
    auth_clawback_enabled: Type.Boolean(),
  }),
  balances: Type.Array(
    Type.Object({
      balance: Amount,
      buying_liabilities: Amount,
      selling_liabilities: Amount,
      asset_type: Type.Literal('native'),
    }),
  ),
  signers: Type.Array(Type.Object({ weight: Type.Integer(), key: Type.String(), type: Type.Literal('ed25519_public_key') })),
  data: Type.Object({}),
  num_sponsoring: Type.Integer(),
  num_sponsored: Type.Integer(),
  // The `data` link is what makes stellar-sdk expose `data_attr`, which its memo-required check reads.
  _links: Links('self', 'transactions', 'data'),
})

const LedgerRecord = Type.Object({
  id: Type.String(),
  paging_token: Type.String(),
  hash: Type.String(),
  sequence: Type.Integer(),
  successful_transaction_count: Type.Integer(),
  failed_transaction_count: Type.Integer(),
  operation_count: Type.Integer(),
  tx_set_operation_count: Type.Integer(),
  closed_at: Type.String(),
  base_fee_in_stroops: Type.Integer(),
  base_reserve_in_stroops: Type.Integer(),
  max_tx_set_size: Type.Integer(),
  protocol_version: Type.Integer(),
  _links: Links('self', 'transactions'),
})

const FeeDistribution = Type.Object(
  Object.fromEntries(
    ['max', 'min', 'mode', 'p10', 'p20', 'p30', 'p40', 'p50', 'p60', 'p70', 'p80', 'p90', 'p95', 'p99'].map((key) => [key, Stroops]),
  ),
)

const Collection = <T extends TSchema>(record: T) =>
  Type.Object({ _links: Links('self', 'next', 'prev'), _embedded: Type.Object({ records: Type.Array(record) }) })

const PageQuerySchema = Type.Object({
  order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')])),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, description: 'At most 200; default 10' })),
  cursor: Type.Optional(Type.String({ pattern: '^[0-9]{1,20}$', description: 'A paging_token; the page starts after it' })),
})
type PageQueryType = Static<typeof PageQuerySchema>

const AccountId = Type.String({ minLength: 1, maxLength: 100, description: 'A G… account id' })
const TxHash = Type.String({ minLength: 1, maxLength: 100, description: 'Transaction hash, 64 hex characters' })
const TX_HASH = /^[0-9a-f]{64}$/

/** Horizon writes times in whole seconds: 2026-11-22T02:00:00Z. */
const isoSeconds = (date: Date): string => date.toISOString().replace(/\.\d{3}Z$/, 'Z')

function fieldOf(error: FastifyError): string | undefined {
  const first = error.validation?.[0] as { instancePath?: string } | undefined
  const path = first?.instancePath?.replace(/^\//, '')
  return path === undefined || path === '' ? error.validationContext : path
}

/** Turns anything thrown in /ledger into a Horizon problem; the unexpected is logged and becomes server_error. */
function toProblem(error: FastifyError | LedgerError | Error, log: (error: unknown) => void): HorizonProblem {
  if (error instanceof LedgerError) return error.problem
  const fastifyError = error as FastifyError
  if (fastifyError.validation !== undefined) {
    const field = fieldOf(fastifyError)
    return problem('bad_request', 'The request you sent was invalid in some way.', {
      ...(field === undefined ? {} : { invalid_field: field }),
      reason: fastifyError.message,
    })
  }
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return problem('payload_too_large', 'The request body is larger than the limit.')
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return problem('unsupported_media_type', 'Send the transaction as application/x-www-form-urlencoded (tx=…) or application/json.')
  }
  const status = fastifyError.statusCode
  if (status !== undefined && status >= 400 && status < 500) {
    return problem('bad_request', fastifyError.message || 'The request you sent was invalid in some way.')
  }
  log(error)
  return problem('server_error', 'An error occurred while processing this request.')
}

export async function horizonRoutes(app: FastifyInstance, options: HorizonOptions): Promise<void> {
  const { ledger, clock, publicUrl, version } = options
  const base = `${publicUrl}/ledger`
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['Ledger']

  // stellar-sdk takes the server's time from Horizon's Date header (fetchTimebounds): make it
  // the platform clock's, so time bounds agree with the ledger after the sandbox moves time.
  app.addHook('onSend', async (_request, reply) => {
    reply.header('date', clock.now().toUTCString())
  })

  // stellar-sdk submits `tx=<base64>` as a form: this plugin reads forms on every route, bounded in size.
  app.removeContentTypeParser('application/x-www-form-urlencoded')
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: TX_BODY_LIMIT }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)))
  })

  const sendProblem = (reply: FastifyReply, body: HorizonProblem) => reply.code(body.status).type(PROBLEM_CONTENT_TYPE).send(body)
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const body = toProblem(error, (err) => request.log.error({ err }, 'unexpected error in the ledger API'))
    if (body.status === 413 || body.status === 415) reply.header('connection', 'close')
    return sendProblem(reply, body)
  })
  app.setNotFoundHandler((request, reply) => {
    const unrouted = options.routes.unrouted(request)
    if (unrouted?.kind === 'preflight') return reply.code(204).headers(unrouted.headers).send()
    if (unrouted?.kind === 'method_not_allowed')
      return sendProblem(reply.header('allow', unrouted.allow), problem('method_not_allowed', unrouted.message))
    return sendProblem(reply, notFound().problem)
  })

  const pageOf = (query: PageQueryType): PageQuery => ({ order: query.order ?? 'asc', limit: query.limit ?? 10, cursor: query.cursor })

  /** Horizon's collection envelope, with next/prev links that carry the paging tokens. */
  function collection<T extends { paging_token: string }>(path: string, query: PageQuery, records: T[]) {
    const href = (cursor: string | undefined, order: 'asc' | 'desc') =>
      `${base}${path}?${new URLSearchParams({ ...(cursor === undefined ? {} : { cursor }), limit: String(query.limit), order }).toString()}`
    const reverse = query.order === 'asc' ? 'desc' : 'asc'
    return {
      _links: {
        self: { href: href(query.cursor, query.order) },
        next: { href: href(records.at(-1)?.paging_token ?? query.cursor, query.order) },
        prev: { href: href(records.at(0)?.paging_token ?? query.cursor, reverse) },
      },
      _embedded: { records },
    }
  }

  const transactionRecord = (tx: LedgerTransaction): Static<typeof TransactionRecord> => {
    const self = `${base}/transactions/${tx.hash}`
    const token = transactionPagingToken(BigInt(tx.ledger))
    return {
      id: tx.hash,
      paging_token: token,
      successful: true,
      hash: tx.hash,
      ledger: Number(tx.ledger),
      created_at: isoSeconds(tx.createdAt),
      source_account: tx.sourceAccount,
      source_account_sequence: tx.sourceAccountSequence,
      fee_account: tx.sourceAccount,
      fee_charged: tx.feeCharged,
      max_fee: tx.maxFee,
      operation_count: tx.operationCount,
      envelope_xdr: tx.envelopeXdr,
      result_xdr: tx.resultXdr,
      result_meta_xdr: '',
      fee_meta_xdr: '',
      memo_type: tx.memoType,
      ...(tx.memo === null ? {} : { memo: tx.memo }),
      _links: {
        self: { href: self },
        account: { href: `${base}/accounts/${tx.sourceAccount}` },
        ledger: { href: `${base}/ledgers/${tx.ledger}` },
        operations: { href: `${self}/operations{?cursor,limit,order}`, templated: true },
        precedes: { href: `${base}/transactions?order=asc&cursor=${token}` },
        succeeds: { href: `${base}/transactions?order=desc&cursor=${token}` },
        transaction: { href: self },
      },
    }
  }

  const operationRecord = (op: LedgerOperation): Static<typeof OperationRecord> => {
    const id = operationPagingToken(BigInt(op.ledger), op.index)
    return {
      id,
      paging_token: id,
      transaction_successful: true,
      source_account: op.from,
      type: 'payment',
      type_i: 1,
      created_at: isoSeconds(op.createdAt),
      transaction_hash: op.transactionHash,
      asset_type: 'native',
      from: op.from,
      to: op.to,
      amount: op.amount,
      _links: {
        self: { href: `${base}/transactions/${op.transactionHash}/operations` },
        transaction: { href: `${base}/transactions/${op.transactionHash}` },
        precedes: { href: `${base}/transactions?order=asc&cursor=${transactionPagingToken(BigInt(op.ledger))}` },
        succeeds: { href: `${base}/transactions?order=desc&cursor=${transactionPagingToken(BigInt(op.ledger))}` },
      },
    }
  }

  const accountRecord = (account: LedgerAccount): Static<typeof AccountRecord> => {
    const self = `${base}/accounts/${account.address}`
    return {
      id: account.address,
      account_id: account.address,
      sequence: account.sequence,
      paging_token: account.address,
      subentry_count: 0,
      last_modified_ledger: Number(account.lastModifiedLedger),
      last_modified_time: null,
      thresholds: { low_threshold: 0, med_threshold: 0, high_threshold: 0 },
      flags: { auth_required: false, auth_revocable: false, auth_immutable: false, auth_clawback_enabled: false },
      balances: [{ balance: account.balance, buying_liabilities: '0.0000000', selling_liabilities: '0.0000000', asset_type: 'native' }],
      signers: [{ weight: 1, key: account.address, type: 'ed25519_public_key' }],
      data: {},
      num_sponsoring: 0,
      num_sponsored: 0,
      _links: {
        self: { href: self },
        transactions: { href: `${self}/transactions{?cursor,limit,order}`, templated: true },
        data: { href: `${self}/data/{key}`, templated: true },
      },
    }
  }

  const ledgerRecord = (summary: LedgerSummary): Static<typeof LedgerRecord> => ({
    id: summary.hash,
    paging_token: ledgerPagingToken(BigInt(summary.sequence)),
    hash: summary.hash,
    sequence: Number(summary.sequence),
    successful_transaction_count: 1,
    failed_transaction_count: 0,
    operation_count: summary.operationCount,
    tx_set_operation_count: summary.operationCount,
    closed_at: isoSeconds(summary.closedAt),
    base_fee_in_stroops: Number(BASE_FEE_STROOPS),
    base_reserve_in_stroops: 0,
    max_tx_set_size: 1,
    protocol_version: PROTOCOL_VERSION,
    _links: {
      self: { href: `${base}/ledgers/${summary.sequence}` },
      transactions: { href: `${base}/transactions?order=asc&cursor=${ledgerPagingToken(BigInt(summary.sequence))}&limit=1` },
    },
  })

  async function requireAccount(accountId: string): Promise<LedgerAccount> {
    const account = isAccountId(accountId) ? await ledger.getAccount(accountId) : undefined
    if (account === undefined) throw notFound()
    return account
  }

  async function requireTransaction(hash: string): Promise<LedgerTransaction> {
    const normalized = hash.toLowerCase()
    const tx = TX_HASH.test(normalized) ? await ledger.getTransaction(normalized) : undefined
    if (tx === undefined) throw notFound()
    return tx
  }

  r.get(
    '/',
    {
      schema: {
        tags,
        operationId: 'horizonRoot',
        summary: 'Ledger status: latest ledger, network passphrase, links',
        response: {
          200: Type.Object({
            horizon_version: Type.String(),
            core_version: Type.String(),
            ingest_latest_ledger: Type.Integer(),
            history_latest_ledger: Type.Integer(),
            history_latest_ledger_closed_at: Type.Union([Type.String(), Type.Null()]),
            history_elder_ledger: Type.Integer(),
            core_latest_ledger: Type.Integer(),
            network_passphrase: Type.String(),
            current_protocol_version: Type.Integer(),
            supported_protocol_version: Type.Integer(),
            core_supported_protocol_version: Type.Integer(),
            _links: Links('account', 'accounts', 'fee_stats', 'ledger', 'ledgers', 'transaction', 'transactions'),
          }),
          ...problems(),
        },
      },
    },
    async () => {
      const latest = await ledger.latestLedger()
      const sequence = Number(latest.sequence)
      return {
        horizon_version: `plinth-${version}`,
        core_version: `plinth-ledger-${version}`,
        ingest_latest_ledger: sequence,
        history_latest_ledger: sequence,
        history_latest_ledger_closed_at: latest.closedAt === null ? null : isoSeconds(latest.closedAt),
        history_elder_ledger: sequence === 0 ? 0 : 1,
        core_latest_ledger: sequence,
        network_passphrase: 'Pi Testnet',
        current_protocol_version: PROTOCOL_VERSION,
        supported_protocol_version: PROTOCOL_VERSION,
        core_supported_protocol_version: PROTOCOL_VERSION,
        _links: {
          account: { href: `${base}/accounts/{account_id}`, templated: true },
          accounts: { href: `${base}/accounts/{account_id}`, templated: true },
          fee_stats: { href: `${base}/fee_stats` },
          ledger: { href: `${base}/ledgers/{sequence}`, templated: true },
          ledgers: { href: `${base}/ledgers{?cursor,limit,order}`, templated: true },
          transaction: { href: `${base}/transactions/{hash}`, templated: true },
          transactions: { href: `${base}/transactions{?cursor,limit,order}`, templated: true },
        },
      }
    },
  )

  r.get(
    '/accounts/:account_id',
    {
      schema: {
        tags,
        operationId: 'horizonGetAccount',
        summary: 'An account: balance and sequence number (what stellar-sdk loadAccount reads)',
        params: Type.Object({ account_id: AccountId }),
        response: { 200: AccountRecord, ...problems(404) },
      },
    },
    async (request) => accountRecord(await requireAccount(request.params.account_id)),
  )

  r.get(
    '/accounts/:account_id/transactions',
    {
      schema: {
        tags,
        operationId: 'horizonListAccountTransactions',
        summary: 'Transactions an account sent or took part in, in ledger order',
        params: Type.Object({ account_id: AccountId }),
        querystring: PageQuerySchema,
        response: { 200: Collection(TransactionRecord), ...problems(404) },
      },
    },
    async (request) => {
      const account = await requireAccount(request.params.account_id)
      const query = pageOf(request.query)
      const records = (await ledger.listAccountTransactions(account.address, query)).map(transactionRecord)
      return collection(`/accounts/${account.address}/transactions`, query, records)
    },
  )

  r.get(
    '/fee_stats',
    {
      schema: {
        tags,
        operationId: 'horizonFeeStats',
        summary: 'Fee statistics; the base fee is always 100 stroops per operation',
        response: {
          200: Type.Object({
            last_ledger: Type.String(),
            last_ledger_base_fee: Stroops,
            ledger_capacity_usage: Type.String(),
            fee_charged: FeeDistribution,
            max_fee: FeeDistribution,
          }),
          ...problems(),
        },
      },
    },
    async () => {
      const latest = await ledger.latestLedger()
      const fee = BASE_FEE_STROOPS.toString()
      const distribution = Object.fromEntries(
        ['max', 'min', 'mode', 'p10', 'p20', 'p30', 'p40', 'p50', 'p60', 'p70', 'p80', 'p90', 'p95', 'p99'].map((key) => [key, fee]),
      )
      return {
        last_ledger: latest.sequence,
        last_ledger_base_fee: fee,
        ledger_capacity_usage: '0.00',
        fee_charged: distribution,
        max_fee: distribution,
      }
    },
  )

  r.get(
    '/ledgers',
    {
      schema: {
        tags,
        operationId: 'horizonListLedgers',
        summary: 'Closed ledgers (one transaction each); ?order=desc&limit=1 is the latest',
        querystring: PageQuerySchema,
        response: { 200: Collection(LedgerRecord), ...problems() },
      },
    },
    async (request) => {
      const query = pageOf(request.query)
      return collection('/ledgers', query, (await ledger.listLedgers(query)).map(ledgerRecord))
    },
  )

  r.get(
    '/ledgers/:sequence',
    {
      schema: {
        tags,
        operationId: 'horizonGetLedger',
        summary: 'One closed ledger',
        params: Type.Object({ sequence: Type.String({ minLength: 1, maxLength: 20 }) }),
        response: { 200: LedgerRecord, ...problems(404) },
      },
    },
    async (request) => {
      const sequence = parseInt64Id(request.params.sequence)
      if (sequence === undefined) throw badParameter('sequence', 'a ledger number (an integer from 0 to 2^63 − 1)')
      const summary = await ledger.getLedger(sequence.toString())
      if (summary === undefined) throw notFound()
      return ledgerRecord(summary)
    },
  )

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
        response: { 200: TransactionRecord, ...problems(413, 415) },
      },
    },
    async (request) => transactionRecord(await ledger.submit(request.body.tx)),
  )

  r.get(
    '/transactions',
    {
      schema: {
        tags,
        operationId: 'horizonListTransactions',
        summary: 'Every applied transaction, in ledger order',
        querystring: PageQuerySchema,
        response: { 200: Collection(TransactionRecord), ...problems() },
      },
    },
    async (request) => {
      const query = pageOf(request.query)
      return collection('/transactions', query, (await ledger.listTransactions(query)).map(transactionRecord))
    },
  )

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
    async (request) => transactionRecord(await requireTransaction(request.params.hash)),
  )

  r.get(
    '/transactions/:hash/operations',
    {
      schema: {
        tags,
        operationId: 'horizonListTransactionOperations',
        summary: "A transaction's operations (payments)",
        params: Type.Object({ hash: TxHash }),
        querystring: PageQuerySchema,
        response: { 200: Collection(OperationRecord), ...problems(404) },
      },
    },
    async (request) => {
      const tx = await requireTransaction(request.params.hash)
      const query = pageOf(request.query)
      // At most 100 operations a transaction: page in memory.
      const all = (await ledger.getOperations(tx.hash)).map(operationRecord)
      const ordered = query.order === 'asc' ? all : all.reverse()
      const cursor = query.cursor === undefined ? undefined : parseInt64Id(query.cursor)
      if (query.cursor !== undefined && cursor === undefined) throw badParameter('cursor', 'a paging token (an integer from 0 to 2^63 − 1)')
      const after = cursor === undefined ? ordered : ordered.filter((op) => isAfter(op.paging_token, cursor, query.order))
      return collection(`/transactions/${tx.hash}/operations`, query, after.slice(0, query.limit))
    },
  )
}

function isAfter(token: string, cursor: bigint, order: 'asc' | 'desc'): boolean {
  const a = BigInt(token)
  return order === 'asc' ? a > cursor : a < cursor
}
