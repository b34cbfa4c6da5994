/**
 * The model behind test/property/ledger-closer.property.test.ts: a round of payments over a few
 * shared accounts (generated, then built and signed as an app backend would), and the serial
 * replay that whatever the ledger holds afterwards must match.
 */
import { Account, Asset, Keypair, TransactionBuilder, xdr } from '@stellar/stellar-base'
import fc from 'fast-check'

/** Stroops burned by a one-payment transaction (docs/ledger.md: 100 per operation, whatever max_fee allows). */
export const FEE = 100n
const PI = 10_000_000n

/**
 * A transaction of a round: a payment that is valid or not depending on what was applied before it
 * (its sequence number, its source's balance), or one that no order can make valid.
 */
export type Kind = 'payment' | 'bad_auth' | 'low_fee' | 'zero_amount'

/** The refusal of each kind that no order can make valid, as `refusalCode` reads it. */
export const ORDER_FREE_CODE: Record<Exclude<Kind, 'payment'>, string> = {
  bad_auth: 'tx_bad_auth',
  low_fee: 'tx_insufficient_fee',
  zero_amount: 'op_malformed',
}

/** What can refuse a payment whose signature, fee and amount are fine: only the state it met. */
export type StateCode = 'tx_bad_seq' | 'tx_insufficient_balance' | 'op_underfunded'
export const STATE_CODES: readonly string[] = ['tx_bad_seq', 'tx_insufficient_balance', 'op_underfunded'] satisfies StateCode[]

export interface PlannedTx {
  kind: Kind
  /** Indexes into the round's accounts; never the same one. */
  from: number
  to: number
  /** The sequence number is the source's starting one + k. */
  k: number
  /** The amount as a percentage of the source's funding: above 100 it can never be paid. */
  percent: number
}

export interface Submission {
  /** Index into the round's transactions: several submissions of one index are copies of one envelope. */
  tx: number
  /** How long the submission waits before it is sent, so the interleaving varies. */
  delayMs: number
  /**
   * Sent only once some submission of the same source with the sequence number before it has
   * answered (when the round has one): all sent at once, a later number mostly arrives before the
   * one it follows, and only the first number of each account would ever apply.
   */
  follows: boolean
}

export interface Round {
  /** Stroops funded to each account. */
  funding: bigint[]
  txs: PlannedTx[]
  /** In the order they are sent (each on the next process): every transaction once, and some copies. */
  submissions: Submission[]
}

function plannedTx(accounts: number): fc.Arbitrary<PlannedTx> {
  return fc
    .record({
      kind: fc.oneof(
        { weight: 8, arbitrary: fc.constant<Kind>('payment') },
        { weight: 2, arbitrary: fc.constantFrom<Kind>('bad_auth', 'low_fee', 'zero_amount') },
      ),
      from: fc.nat({ max: accounts - 1 }),
      offset: fc.nat({ max: accounts - 2 }),
      // Mostly the next few numbers, each likely met by several transactions; now and then one past a gap.
      k: fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 1, max: 3 }) }, { weight: 1, arbitrary: fc.integer({ min: 4, max: 6 }) }),
      // Mostly a few payments' worth of the funding; one time in five more than a payment can leave.
      percent: fc.oneof(
        { weight: 4, arbitrary: fc.integer({ min: 1, max: 30 }) },
        { weight: 1, arbitrary: fc.integer({ min: 31, max: 150 }) },
      ),
    })
    .map(({ offset, ...tx }) => ({ ...tx, to: (tx.from + 1 + offset) % accounts }))
}

/**
 * 3 to 5 accounts funded with 1 to 20 Pi, 10 to 40 transactions among them and up to 8 copies,
 * sent in a random order, each after a delay of its own, some after their predecessor answered.
 */
export const roundArb: fc.Arbitrary<Round> = fc
  .integer({ min: 3, max: 5 })
  .chain((accounts) =>
    fc.record({
      funding: fc.array(fc.bigInt({ min: PI, max: 20n * PI }), { minLength: accounts, maxLength: accounts }),
      txs: fc.array(plannedTx(accounts), { minLength: 10, maxLength: 40 }),
      copies: fc.array(fc.nat(), { maxLength: 8 }),
    }),
  )
  .chain(({ funding, txs, copies }) => {
    const sent = [...txs.map((_, i) => i), ...copies.map((c) => c % txs.length)]
    const timing = fc.record({
      delayMs: fc.integer({ min: 0, max: 10 }),
      follows: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, fc.constant(false)),
    })
    return fc
      .tuple(
        fc.shuffledSubarray(sent, { minLength: sent.length, maxLength: sent.length }),
        fc.array(timing, { minLength: sent.length, maxLength: sent.length }),
      )
      .map(([order, timings]) => {
        const round = { funding, txs, submissions: order.map((tx, i) => ({ tx, delayMs: 0, follows: false, ...timings[i] })) }
        return Object.assign(round, { [fc.toStringMethod]: () => describeRound(round) })
      })
  })

/**
 * A round in a line a failure report can show whole: the funding in stroops, then each
 * transaction as `#index kind from→to sequence amount%`, then the order sent (`#index`, `+delay`
 * in ms, `f` for a follower).
 */
function describeRound(round: Round): string {
  const txs = round.txs.map((tx, i) => `#${i} ${tx.kind} ${tx.from}→${tx.to} seq ${tx.k} ${tx.percent}%`)
  const sent = round.submissions.map((s) => `#${s.tx}+${s.delayMs}${s.follows ? 'f' : ''}`)
  return `funding ${round.funding.join(' ')}; txs ${txs.join(', ')}; sent ${sent.join(' ')}`
}

/** The amount a planned payment moves, in stroops. */
export function amountOf(tx: PlannedTx, funding: readonly bigint[]): bigint {
  if (tx.kind === 'zero_amount') return 0n
  const stroops = ((funding[tx.from] ?? 0n) * BigInt(tx.percent)) / 100n
  return stroops > 0n ? stroops : 1n
}

/** A native payment operation built from its XDR, so that a zero amount (which TransactionBuilder refuses) can be sent. */
export function paymentOp(destination: string, stroops: bigint): xdr.Operation {
  return new xdr.Operation({
    sourceAccount: null,
    body: xdr.OperationBody.payment(
      new xdr.PaymentOp({
        destination: xdr.MuxedAccount.keyTypeEd25519(Keypair.fromPublicKey(destination).rawPublicKey()),
        asset: Asset.native().toXDRObject(),
        amount: xdr.Int64.fromString(stroops.toString()),
      }),
    ),
  })
}

/** The signed envelope of a planned transaction, its source funded as `funding` says and starting at sequence `startSequence`. */
export function envelopeOf(
  tx: PlannedTx,
  funding: readonly bigint[],
  keys: readonly Keypair[],
  startSequence: bigint,
  maxTime: number,
): string {
  const from = keys[tx.from]
  const to = keys[tx.to]
  if (from === undefined || to === undefined) throw new Error(`no account ${tx.from} or ${tx.to} in the round`)
  const built = new TransactionBuilder(new Account(from.publicKey(), (startSequence + BigInt(tx.k) - 1n).toString()), {
    fee: tx.kind === 'low_fee' ? String(FEE - 1n) : String(FEE),
    networkPassphrase: 'Pi Testnet',
    timebounds: { minTime: 0, maxTime },
  })
    .addOperation(paymentOp(to.publicKey(), amountOf(tx, funding)))
    .build()
  built.sign(tx.kind === 'bad_auth' ? Keypair.random() : from)
  return built.toEnvelope().toXDR('base64')
}

/** Horizon's refusal, as one code: the transaction's, or for tx_failed its first failed operation's. */
export function refusalCode(codes: { transaction?: string; operations?: string[] } | undefined): string {
  if (codes?.transaction !== 'tx_failed') return String(codes?.transaction)
  return String(codes.operations?.find((code) => code !== 'op_success'))
}

/** A paging token (TOID: ledger << 32 | application order << 12 | operation) as its ledger and the transaction's place in it. */
export function toid(pagingToken: string): { ledger: bigint; order: bigint } {
  const token = BigInt(pagingToken)
  return { ledger: token >> 32n, order: (token >> 12n) & 0xfffffn }
}

export interface AccountState {
  balance: bigint
  sequence: bigint
}

/** An applied one-payment transaction, as the ledger recorded it. */
export interface Applied {
  hash: string
  source: string
  sequence: bigint
  destination: string
  amount: bigint
  fee: bigint
}

/** What the rules make of a payment of the source when its account is in `state` (docs/ledger.md, rules 15 to 19). */
export function outcomeAt(state: AccountState, tx: { sequence: bigint; amount: bigint; fee: bigint }): StateCode | 'applies' {
  if (tx.sequence !== state.sequence + 1n) return 'tx_bad_seq'
  if (state.balance < tx.fee) return 'tx_insufficient_balance'
  if (state.balance - tx.fee < tx.amount) return 'op_underfunded'
  return 'applies'
}

/**
 * Replays `applied` one after the other from `start`, checking that each was valid at its place.
 * Answers every state each account went through, the starting one first: a refusal that depended
 * on the state must be what the rules make of one of its source's states (each process saw a
 * committed prefix of the ledger).
 */
export function replay(start: ReadonlyMap<string, AccountState>, applied: readonly Applied[]): Map<string, AccountState[]> {
  const histories = new Map([...start].map(([address, state]) => [address, [state]]))
  const now = (address: string): AccountState => {
    const state = histories.get(address)?.at(-1)
    if (state === undefined) throw new Error(`${address} is not an account of the round`)
    return state
  }
  const move = (address: string, state: AccountState) => histories.get(address)?.push(state)
  for (const [place, tx] of applied.entries()) {
    const source = now(tx.source)
    const outcome = outcomeAt(source, tx)
    if (outcome !== 'applies') {
      throw new Error(
        `the ledger's transaction ${place + 1} (${tx.hash}, sequence ${tx.sequence}, ${tx.amount} stroops) is ${outcome} where it stands: its source had sequence ${source.sequence} and ${source.balance} stroops`,
      )
    }
    move(tx.source, { balance: source.balance - tx.fee - tx.amount, sequence: tx.sequence })
    const destination = now(tx.destination)
    move(tx.destination, { ...destination, balance: destination.balance + tx.amount })
  }
  return histories
}
