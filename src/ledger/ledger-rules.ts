import { createHash } from 'node:crypto'
import { Transaction, xdr } from '@stellar/stellar-base'
import { tryParseAmount } from './amounts.js'
import { LEDGER_NETWORKS, type LedgerNetwork } from './networks.js'
import { isAccountId, verifySignature } from './stellar/ed25519.js'
import { type PaymentEnvelope, readPaymentEnvelope } from './stellar/payment-envelope.js'

/**
 * The ledger's rules, as pure functions of a decoded envelope, the platform time and a
 * snapshot of the accounts involved. The service runs them in this order and stops at the
 * first refusal (docs/ledger.md has the table):
 *
 *   decodeEnvelope   → transaction_malformed
 *   checkStateless   → tx_not_supported, tx_missing_operation, tx_too_early, tx_too_late,
 *                      tx_insufficient_fee, tx_failed [op_not_supported | op_malformed]
 *   authorize        → tx_bad_auth, tx_failed [op_bad_auth], tx_bad_auth_extra
 *   applyToAccounts  → tx_no_source_account, tx_bad_seq, tx_insufficient_balance,
 *                      tx_failed [op_no_source_account | op_no_destination | op_underfunded]
 *
 * Stellar checks much the same things in much the same order; where Plinth differs (a
 * refused transaction consumes neither fee nor sequence number) it says so in docs/ledger.md.
 */

/** Stroops charged per operation: Stellar's base fee. The whole fee is burned. */
export const BASE_FEE_STROOPS = 100n

const NETWORK_ID_BYTES = 32
const NETWORK_IDS = Object.fromEntries(
  LEDGER_NETWORKS.map((network) => [network, createHash('sha256').update(network, 'utf8').digest()]),
) as Record<LedgerNetwork, Buffer>

export type MemoType = 'none' | 'text' | 'id' | 'hash' | 'return'

export type TxCode =
  | 'tx_success'
  | 'tx_failed'
  | 'tx_too_early'
  | 'tx_too_late'
  | 'tx_missing_operation'
  | 'tx_bad_seq'
  | 'tx_bad_auth'
  | 'tx_insufficient_balance'
  | 'tx_no_source_account'
  | 'tx_insufficient_fee'
  | 'tx_bad_auth_extra'
  | 'tx_not_supported'

export type OpCode =
  | 'op_success'
  | 'op_malformed'
  | 'op_underfunded'
  | 'op_no_destination'
  | 'op_not_supported'
  | 'op_no_source_account'
  | 'op_bad_auth'

/** Why a transaction was not applied, in Horizon's result codes. `operations` is set for tx_failed, one code per operation. */
export interface Refusal {
  transaction: Exclude<TxCode, 'tx_success'>
  operations?: OpCode[]
  detail: string
}

export type DecodedOperation =
  | {
      type: 'payment'
      /** The operation's own source, or the transaction's. */
      source: string
      hasOwnSource: boolean
      destination: string
      native: boolean
      /** Stroops; zero or negative is malformed. */
      amount: bigint
    }
  | { type: 'unsupported'; operation: string; source: string; hasOwnSource: boolean }

/** Everything the rules read from an envelope, as plain values. */
export interface DecodedTransaction {
  envelopeXdr: string
  source: string
  sequence: bigint
  maxFee: bigint
  /** Unix seconds; 0 means unbounded. */
  minTime: bigint
  maxTime: bigint
  /** Preconditions beyond time bounds (ledger bounds, min sequence, extra signers) or Soroban data. */
  unsupportedFeature: string | undefined
  memo: { type: MemoType; value: string | null }
  operations: DecodedOperation[]
  /** The transaction hash under each network passphrase: what the signatures sign. */
  hashes: Record<LedgerNetwork, Buffer>
  signatures: Array<{ hint: Buffer; signature: Buffer }>
}

export type Decoded = { ok: true; tx: DecodedTransaction } | { ok: false; detail: string }

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
const utf8 = new TextDecoder('utf-8', { fatal: true })

/** Rule: the body must be a base64 XDR TransactionEnvelope of a plain (not fee-bump) transaction. */
export function decodeEnvelope(envelopeXdr: string): Decoded {
  const text = envelopeXdr.trim()
  if (text === '' || !BASE64.test(text)) return { ok: false, detail: 'The envelope is not base64.' }
  // js-xdr decodes strictly (zero padding, booleans 0 or 1, known enum values and union arms, every
  // byte read), so these bytes are the envelope's own encoding: stored and hashed as they are, not
  // encoded again (about a third of a decode's CPU). Their base64 is canonical whatever bits the input
  // left after its last byte.
  const bytes = Buffer.from(text, 'base64')
  const payment = readPaymentEnvelope(bytes)
  return payment === undefined ? decodeAnyEnvelope(bytes) : fromPaymentEnvelope(bytes, payment)
}

/** What is signed, under each network: its id (SHA-256 of the passphrase, 32 bytes) followed by the tagged transaction. */
function hashesOf(tagged: Buffer): Record<LedgerNetwork, Buffer> {
  return Object.fromEntries(
    LEDGER_NETWORKS.map((network) => [network, createHash('sha256').update(NETWORK_IDS[network]).update(tagged).digest()]),
  ) as Record<LedgerNetwork, Buffer>
}

/** The common shape, read by stellar/payment-envelope.ts: the same values stellar-base's decode gives, without its objects. */
function fromPaymentEnvelope(bytes: Buffer, envelope: PaymentEnvelope): Decoded {
  const memo =
    envelope.memo.type === 'id'
      ? memoOf('id', String(envelope.memo.value))
      : memoOf(envelope.memo.type, envelope.memo.type === 'none' ? null : envelope.memo.bytes)
  if (memo === undefined) return { ok: false, detail: MEMO_REFUSED }
  return {
    ok: true,
    tx: {
      envelopeXdr: bytes.toString('base64'),
      source: envelope.source,
      sequence: envelope.sequence,
      maxFee: envelope.maxFee,
      minTime: envelope.timeBounds?.minTime ?? 0n,
      maxTime: envelope.timeBounds?.maxTime ?? 0n,
      unsupportedFeature: undefined,
      memo,
      operations: envelope.operations.map((op) => ({ type: 'payment', ...op, native: true })),
      hashes: hashesOf(bytes.subarray(0, envelope.signaturesAt)),
      signatures: envelope.signatures,
    },
  }
}

const MEMO_REFUSED = 'A text memo must be UTF-8 without NUL characters.'

/**
 * Any envelope, through stellar-base: what decodeEnvelope does for all but the common shape (fee bumps,
 * v0 envelopes, muxed accounts, other operations and assets), and what the shortcut is tested against.
 */
export function decodeAnyEnvelope(bytes: Buffer): Decoded {
  let envelope: xdr.TransactionEnvelope
  try {
    envelope = xdr.TransactionEnvelope.fromXDR(bytes)
  } catch {
    return { ok: false, detail: 'The envelope is not a valid XDR TransactionEnvelope.' }
  }
  if (envelope.switch() === xdr.EnvelopeType.envelopeTypeTxFeeBump()) {
    return { ok: false, detail: 'Fee-bump transactions are not supported.' }
  }
  try {
    const first = new Transaction(envelope, LEDGER_NETWORKS[0])
    const memo = memoOf(first.memo.type, first.memo.value)
    if (memo === undefined) return { ok: false, detail: MEMO_REFUSED }
    return {
      ok: true,
      tx: {
        envelopeXdr: bytes.toString('base64'),
        source: first.source,
        sequence: BigInt(first.sequence),
        maxFee: BigInt(first.fee),
        minTime: BigInt(first.timeBounds?.minTime ?? '0'),
        maxTime: BigInt(first.timeBounds?.maxTime ?? '0'),
        unsupportedFeature: unsupportedFeature(envelope, first),
        memo,
        operations: first.operations.map((op) => decodeOperation(op, first.source)),
        // The tagged transaction is encoded once, hashed under each network's id (not a Transaction per network).
        hashes: hashesOf(taggedTransaction(envelope, bytes) ?? first.signatureBase().subarray(NETWORK_ID_BYTES)),
        signatures: first.signatures.map((s) => ({ hint: s.hint(), signature: s.signature() })),
      },
    }
  } catch {
    return { ok: false, detail: 'The envelope could not be decoded.' }
  }
}

/**
 * The tagged transaction (ENVELOPE_TYPE_TX, then the transaction) of a v1 envelope, cut from the
 * envelope's own bytes: they are the same discriminant followed by the same transaction, then the
 * signatures (a count, and each a 4-byte hint and a length-prefixed signature padded to 4 bytes).
 * A v0 envelope is signed as the v1 transaction it stands for: undefined, for stellar-base to encode.
 */
function taggedTransaction(envelope: xdr.TransactionEnvelope, bytes: Buffer): Buffer | undefined {
  if (envelope.switch() !== xdr.EnvelopeType.envelopeTypeTx()) return undefined
  let signatures = 4
  for (const signature of envelope.v1().signatures()) signatures += 4 + 4 + Math.ceil(signature.signature().length / 4) * 4
  return bytes.subarray(0, bytes.length - signatures)
}

/** A memo as the rules hold it, from its type and stellar-base's value (a decimal string for an id, else bytes); undefined if refused. */
function memoOf(type: string, value: string | Buffer | null): DecodedTransaction['memo'] | undefined {
  switch (type) {
    case 'none':
      return { type, value: null }
    case 'id':
      return { type, value: String(value) }
    case 'text': {
      let text: string
      try {
        text = typeof value === 'string' ? value : utf8.decode(value as Buffer)
      } catch {
        return undefined
      }
      // PostgreSQL text cannot hold NUL; Horizon would show such a memo only as memo_bytes.
      return text.includes('\u0000') ? undefined : { type, value: text }
    }
    case 'hash':
    case 'return':
      // Horizon shows hash and return memos in base64.
      return { type, value: Buffer.isBuffer(value) ? value.toString('base64') : String(value) }
    default:
      return undefined
  }
}

function unsupportedFeature(envelope: xdr.TransactionEnvelope, tx: Transaction): string | undefined {
  if (envelope.switch() === xdr.EnvelopeType.envelopeTypeTx() && envelope.v1().tx().ext().switch() !== 0) {
    return 'Soroban transaction data'
  }
  if (tx.ledgerBounds !== undefined) return 'ledger bounds'
  if (tx.minAccountSequence !== undefined) return 'a minimum account sequence'
  if (tx.minAccountSequenceAge !== undefined && String(tx.minAccountSequenceAge) !== '0') return 'a minimum sequence age'
  if (tx.minAccountSequenceLedgerGap !== undefined && tx.minAccountSequenceLedgerGap !== 0) return 'a minimum sequence ledger gap'
  if (tx.extraSigners !== undefined && tx.extraSigners.length > 0) return 'extra signers'
  return undefined
}

function decodeOperation(op: Transaction['operations'][number], txSource: string): DecodedOperation {
  const source = op.source ?? txSource
  const hasOwnSource = op.source !== undefined
  if (op.type !== 'payment') return { type: 'unsupported', operation: op.type, source, hasOwnSource }
  // stellar-base renders the int64 as a decimal with 7 places, signed.
  const negative = op.amount.startsWith('-')
  const magnitude = tryParseAmount(negative ? op.amount.slice(1) : op.amount) ?? 0n
  return {
    type: 'payment',
    source,
    hasOwnSource,
    destination: op.destination,
    native: op.asset.isNative(),
    amount: negative ? -magnitude : magnitude,
  }
}

/** A plain G… account id (muxed M… addresses are not supported): the ledger's rule, decided by its keys module. */
export { isAccountId }

export function feeFor(operationCount: number): bigint {
  return BASE_FEE_STROOPS * BigInt(operationCount)
}

/** Which bound `tx` misses at `seconds`, if any. */
function timeBoundsRefusal(tx: DecodedTransaction, seconds: bigint): 'tx_too_early' | 'tx_too_late' | undefined {
  if (tx.minTime > 0n && seconds < tx.minTime) return 'tx_too_early'
  if (tx.maxTime > 0n && seconds > tx.maxTime) return 'tx_too_late'
  return undefined
}

function failed(codes: OpCode[], detail: string): Refusal {
  return { transaction: 'tx_failed', operations: codes, detail }
}

/**
 * Rules that need neither the signatures nor the ledger's state. `nowSeconds` is the platform
 * clock, `wallSeconds` the wall clock (real time, never moved by the sandbox). The time bounds
 * are satisfied when they hold at either time (docs/ledger.md, "Time bounds"): a client that
 * times its transaction from its own clock and one that reads the server's `Date` header both
 * get it applied after the sandbox moved the clock.
 */
export function checkStateless(tx: DecodedTransaction, nowSeconds: bigint, wallSeconds: bigint = nowSeconds): Refusal | undefined {
  if (tx.unsupportedFeature !== undefined) {
    return { transaction: 'tx_not_supported', detail: `Transactions with ${tx.unsupportedFeature} are not supported.` }
  }
  if (!isAccountId(tx.source)) {
    return { transaction: 'tx_not_supported', detail: 'The source account must be a G… account id; muxed accounts are not supported.' }
  }
  if (tx.operations.length === 0) return { transaction: 'tx_missing_operation', detail: 'The transaction has no operation.' }
  const atPlatform = timeBoundsRefusal(tx, nowSeconds)
  if (atPlatform !== undefined && timeBoundsRefusal(tx, wallSeconds) !== undefined) {
    const times =
      wallSeconds === nowSeconds
        ? `the platform time is ${nowSeconds}`
        : `the platform time is ${nowSeconds} and the wall time ${wallSeconds}`
    return {
      transaction: atPlatform,
      detail: `${atPlatform === 'tx_too_early' ? `The transaction is valid from ${tx.minTime}` : `The transaction was valid until ${tx.maxTime}`}; ${times}.`,
    }
  }
  const fee = feeFor(tx.operations.length)
  if (tx.maxFee < fee) {
    return { transaction: 'tx_insufficient_fee', detail: `The fee must be at least ${fee} stroops (${BASE_FEE_STROOPS} per operation).` }
  }
  const codes = tx.operations.map((op): OpCode => {
    if (op.type !== 'payment') return 'op_not_supported'
    if (!op.native) return 'op_not_supported'
    if (!isAccountId(op.source) || !isAccountId(op.destination)) return 'op_not_supported'
    if (op.amount <= 0n) return 'op_malformed'
    return 'op_success'
  })
  if (codes.some((code) => code !== 'op_success')) {
    return failed(codes, 'Only payments of the native asset between G… accounts, of a positive amount, are supported.')
  }
  return undefined
}

/**
 * Rule: the transaction's source must have signed under one of the networks (that network
 * is the transaction's), every operation's own source must have signed too, and every
 * signature must belong to one of them. Each account's only signer is its own key.
 */
export function authorize(tx: DecodedTransaction): { network: LedgerNetwork; hash: Buffer } | Refusal {
  // Each (signer, network, signature) is verified at most once: finding the network and then
  // matching signatures to signers would otherwise check the source's signature twice.
  const verified = new Map<string, boolean>()
  const verifies = (address: string, hash: Buffer, signature: { hint: Buffer; signature: Buffer }): boolean => {
    const memo = `${address}|${hash.toString('hex')}|${tx.signatures.indexOf(signature)}`
    let ok = verified.get(memo)
    if (ok === undefined) {
      ok = verifySignature(address, hash, signature)
      verified.set(memo, ok)
    }
    return ok
  }
  const network = LEDGER_NETWORKS.find((candidate) => tx.signatures.some((s) => verifies(tx.source, tx.hashes[candidate], s)))
  if (network === undefined) {
    return {
      transaction: 'tx_bad_auth',
      detail: `No signature of the source account verifies under the "${LEDGER_NETWORKS.join('" or "')}" passphrase.`,
    }
  }
  const hash = tx.hashes[network]
  const used = new Set<number>()
  const sign = (address: string): boolean => {
    const index = tx.signatures.findIndex((s, i) => !used.has(i) && verifies(address, hash, s))
    if (index === -1) return false
    used.add(index)
    return true
  }
  sign(tx.source)
  const signed = new Set([tx.source])
  const codes = tx.operations.map((op): OpCode => {
    if (signed.has(op.source)) return 'op_success'
    if (!sign(op.source)) return 'op_bad_auth'
    signed.add(op.source)
    return 'op_success'
  })
  if (codes.includes('op_bad_auth')) return failed(codes, "An operation's source account did not sign the transaction.")
  if (used.size < tx.signatures.length) {
    return { transaction: 'tx_bad_auth_extra', detail: 'The transaction carries a signature that no required signer made.' }
  }
  return { network, hash }
}

export interface AccountState {
  balance: bigint
  sequence: bigint
}

export interface Effects {
  feeCharged: bigint
  sequence: bigint
  /** New balance of every account whose balance changed. */
  balances: Map<string, bigint>
  payments: Array<{ from: string; to: string; amount: bigint }>
}

/** Every account a transaction reads or writes, sorted: the order the service locks them in. */
export function involvedAccounts(tx: DecodedTransaction): string[] {
  const addresses = new Set([tx.source])
  for (const op of tx.operations) {
    addresses.add(op.source)
    if (op.type === 'payment') addresses.add(op.destination)
  }
  return [...addresses].sort()
}

/**
 * Applies a transaction that passed the other rules to a snapshot of its accounts: the fee
 * first, then each payment in order. A failed operation leaves the balances as they were and
 * the next is still tried, so every operation gets its code, as on Stellar.
 */
export function applyToAccounts(tx: DecodedTransaction, accounts: ReadonlyMap<string, AccountState>): Effects | Refusal {
  const source = accounts.get(tx.source)
  if (source === undefined) return { transaction: 'tx_no_source_account', detail: `The source account ${tx.source} does not exist.` }
  if (tx.sequence !== source.sequence + 1n) {
    return {
      transaction: 'tx_bad_seq',
      detail: `The sequence number must be ${source.sequence + 1n} (the account's ${source.sequence} + 1); the transaction has ${tx.sequence}.`,
    }
  }
  const feeCharged = feeFor(tx.operations.length)
  if (source.balance < feeCharged) {
    return { transaction: 'tx_insufficient_balance', detail: `The source account cannot pay the fee of ${feeCharged} stroops.` }
  }

  const balances = new Map<string, bigint>([[tx.source, source.balance - feeCharged]])
  const balanceOf = (address: string): bigint | undefined => balances.get(address) ?? accounts.get(address)?.balance
  const payments: Effects['payments'] = []
  const codes = tx.operations.map((op): OpCode => {
    if (op.type !== 'payment') return 'op_not_supported'
    const from = balanceOf(op.source)
    if (from === undefined) return 'op_no_source_account'
    if (balanceOf(op.destination) === undefined) return 'op_no_destination'
    if (from < op.amount) return 'op_underfunded'
    balances.set(op.source, from - op.amount)
    balances.set(op.destination, (balanceOf(op.destination) ?? 0n) + op.amount)
    payments.push({ from: op.source, to: op.destination, amount: op.amount })
    return 'op_success'
  })
  if (codes.some((code) => code !== 'op_success')) return failed(codes, describeFailure(codes))

  for (const [address, balance] of balances) if (balance === accounts.get(address)?.balance) balances.delete(address)
  return { feeCharged, sequence: tx.sequence, balances, payments }
}

function describeFailure(codes: OpCode[]): string {
  const index = codes.findIndex((code) => code !== 'op_success')
  const what: Partial<Record<OpCode, string>> = {
    op_no_source_account: "the operation's source account does not exist",
    op_no_destination: 'the destination account does not exist',
    op_underfunded: 'the source account cannot cover the amount after the fee',
  }
  return `Operation ${index}: ${what[codes[index] ?? 'op_success'] ?? 'failed'}.`
}

export function isRefusal<T extends object>(value: T | Refusal): value is Refusal {
  return 'transaction' in value && 'detail' in value
}
