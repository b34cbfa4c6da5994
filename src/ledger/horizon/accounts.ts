import { Type } from 'typebox'
import { LedgerError, problem } from '../ledger-errors.js'
import { isAccountId } from '../ledger-rules.js'
import type { LedgerAccount, PageQuery } from '../ledger-types.js'
import { AccountRecord, type AccountRecordType, accountRecord } from './account-record.js'
import type { HorizonContext } from './context.js'
import { Collection, collectionEnvelope } from './paging.js'
import { problems } from './problems.js'
import { AccountId } from './scopes.js'

/** The filters of Horizon's GET /accounts: exactly one is required (Horizon's AccountsQuery). */
const FILTERS = ['signer', 'sponsor', 'asset', 'liquidity_pool'] as const
type Filter = (typeof FILTERS)[number]

const Bounded = (description: string) => Type.Optional(Type.String({ maxLength: 200, description }))
const AccountsQuery = Type.Object({
  signer: Bounded('A G… account id: the accounts it signs for. Every account here has one signer, itself.'),
  sponsor: Bounded('A G… account id: the accounts it sponsors. Plinth has no sponsorship: always an empty page.'),
  asset: Bounded('CODE:ISSUER: the accounts with a trustline to it. Plinth has only the native asset: always an empty page.'),
  liquidity_pool: Bounded('A liquidity pool id (64 hex): its participants. Plinth has no pools: always an empty page.'),
  order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')])),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, description: 'At most 200; default 10' })),
  // Horizon does not validate this cursor (DisableCursorValidation): it is compared with account ids.
  cursor: Bounded('An account id (a paging_token); the page starts after it'),
})

/** Horizon's answer to none, or more than one, of the filters. */
const invalidAccountsParams = () =>
  new LedgerError(
    problem(
      'invalid_accounts_params',
      'Exactly one filter is required. Please ensure that you are including a signer, sponsor, asset, or liquidity pool filter.',
    ),
  )

const invalidField = (field: string, reason: string) =>
  new LedgerError(problem('bad_request', 'The request you sent was invalid in some way.', { invalid_field: field, reason }))

const ASSET = /^[A-Za-z0-9]{1,12}:(G[A-Z2-7]{55})$/
const POOL_ID = /^[0-9a-f]{64}$/

/** The one filter of the query, checked as Horizon checks it; throws Horizon's problem otherwise. */
function filterOf(query: Partial<Record<Filter, string>>): [Filter, string] {
  // Horizon refuses `asset=native` before it counts the filters.
  if (query.asset === 'native') throw invalidField('asset', "you can't filter by asset: native")
  const given = FILTERS.flatMap((name) => {
    const value = query[name]
    return value === undefined || value === '' ? [] : [[name, value] as [Filter, string]]
  })
  const [only] = given
  if (only === undefined || given.length > 1) throw invalidAccountsParams()
  const [name, value] = only
  if ((name === 'signer' || name === 'sponsor') && !isAccountId(value))
    throw invalidField(name, 'Account ID must start with `G` and contain 56 alphanum characters')
  if (name === 'asset' && !isAccountId(ASSET.exec(value)?.[1] ?? '')) throw invalidField(name, 'Asset must be of the form CODE:ISSUER')
  if (name === 'liquidity_pool' && !POOL_ID.test(value)) throw invalidField(name, 'a liquidity pool id: 64 hex digits')
  return only
}

/** Whether `account` belongs on the page: strictly after the cursor (an account id, compared as Horizon's SQL does). */
function onPage(account: LedgerAccount, page: PageQuery): boolean {
  if (page.cursor === undefined) return true
  return page.order === 'asc' ? account.address > page.cursor : account.address < page.cursor
}

export function accountRoutes(ctx: HorizonContext): void {
  const { r, ledger, links, scopes, tags } = ctx

  const recordOf = async (account: LedgerAccount): Promise<AccountRecordType> => {
    const modified = account.lastModifiedLedger === '0' ? undefined : await ledger.getLedger(account.lastModifiedLedger)
    return accountRecord(links, account, modified?.closedAt ?? account.createdAt)
  }

  r.get(
    '/accounts',
    {
      schema: {
        tags,
        operationId: 'horizonListAccounts',
        summary: "Accounts by signer (what stellar-sdk's accounts().forSigner() calls)",
        description:
          'Exactly one of `signer`, `sponsor`, `asset`, `liquidity_pool`, as Horizon. Every account here has exactly one signer, ' +
          'itself (weight 1): `signer=G…` lists that account when it exists. Plinth has no sponsorship, no issued assets and no ' +
          'liquidity pools: those filters are checked, then answer an empty page. Paged by account id (`cursor`, `order`, `limit`).',
        querystring: AccountsQuery,
        response: { 200: Collection(AccountRecord), ...problems() },
      },
    },
    async (request) => {
      const [name, value] = filterOf(request.query)
      const { order = 'asc', limit = 10, cursor } = request.query
      const page: PageQuery = { order, limit, cursor }
      // Only `signer` can match anything: an account's one signer is its own key.
      const account = name === 'signer' ? await ledger.getAccount(value) : undefined
      const records = account !== undefined && onPage(account, page) ? [await recordOf(account)] : []
      return collectionEnvelope(links.base, '/accounts', page, records, { [name]: value })
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
    async (request) => recordOf(await scopes.account(request.params.account_id)),
  )
}
