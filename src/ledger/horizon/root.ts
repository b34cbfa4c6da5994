import { Type } from 'typebox'
import { BASE_FEE_STROOPS } from '../ledger-rules.js'
import type { HorizonContext } from './context.js'
import { PROTOCOL_VERSION } from './ledger-record.js'
import { isoSeconds, Links } from './links.js'
import { problems } from './problems.js'
import { Stroops } from './transaction-record.js'

const PERCENTILES = ['max', 'min', 'mode', 'p10', 'p20', 'p30', 'p40', 'p50', 'p60', 'p70', 'p80', 'p90', 'p95', 'p99'] as const
const FeeDistribution = Type.Object(Object.fromEntries(PERCENTILES.map((key) => [key, Stroops])))

/** The root (what stellar-sdk reads for the network) and /fee_stats (what fetchBaseFee reads). */
export function rootRoutes(ctx: HorizonContext): void {
  const { r, ledger, links, tags, version } = ctx

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
            _links: Links(
              'self',
              'account',
              'accounts',
              'account_transactions',
              'effects',
              'fee_stats',
              'ledger',
              'ledgers',
              'operation',
              'operations',
              'payments',
              'transaction',
              'transactions',
            ),
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
        network_passphrase: ledger.network,
        current_protocol_version: PROTOCOL_VERSION,
        supported_protocol_version: PROTOCOL_VERSION,
        core_supported_protocol_version: PROTOCOL_VERSION,
        _links: {
          self: links.link(''),
          account: links.templated('/accounts/{account_id}'),
          accounts: links.templated('/accounts{?signer,sponsor,asset,liquidity_pool,cursor,limit,order}'),
          account_transactions: links.templated('/accounts/{account_id}/transactions{?cursor,limit,order}'),
          effects: links.collection('/effects'),
          fee_stats: links.link('/fee_stats'),
          ledger: links.templated('/ledgers/{sequence}'),
          ledgers: links.collection('/ledgers'),
          operation: links.templated('/operations/{id}'),
          operations: links.collection('/operations'),
          payments: links.collection('/payments'),
          transaction: links.templated('/transactions/{hash}'),
          transactions: links.collection('/transactions'),
        },
      }
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
      const distribution = Object.fromEntries(PERCENTILES.map((key) => [key, fee]))
      return {
        last_ledger: latest.sequence,
        last_ledger_base_fee: fee,
        ledger_capacity_usage: '0.00',
        fee_charged: distribution,
        max_fee: distribution,
      }
    },
  )
}
